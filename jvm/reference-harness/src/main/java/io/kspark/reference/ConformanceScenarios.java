package io.kspark.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The Java side of tests/catalog/scenarios/conformance.py (the runner conformance scenarios): the same
 * topologies, operator for operator, registered as {@code conformance_<scenario>}.
 */
final class ConformanceScenarios {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** JSON values as Jackson trees: kspark's JSON serde on the Python side (compact UTF-8 JSON). */
    static final Serde<JsonNode> J = Serdes.serdeFrom(jsonSerializer(), jsonDeserializer());

    private ConformanceScenarios() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("conformance_stateless_chain", ConformanceScenarios::statelessChain);
        m.put("conformance_split_merge", ConformanceScenarios::splitMerge);
        m.put("conformance_count", ConformanceScenarios::count);
        m.put("conformance_reduce_sum", ConformanceScenarios::reduceSum);
        m.put("conformance_reduce_max", ConformanceScenarios::reduceMax);
        m.put("conformance_aggregate_and_reduce_with_nulls", ConformanceScenarios::aggregateAndReduceWithNulls);
        m.put("conformance_group_by_repartition", ConformanceScenarios::groupByRepartition);
        m.put("conformance_table_filter_map_values", ConformanceScenarios::tableFilterMapValues);
        m.put("conformance_table_regroup_sum", ConformanceScenarios::tableRegroupSum);
        m.put("conformance_table_table_joins", ConformanceScenarios::tableTableJoins);
        m.put("conformance_stream_table_joins", ConformanceScenarios::streamTableJoins);
        m.put("conformance_tumbling_window_count", ConformanceScenarios::tumblingWindowCount);
        m.put("conformance_hopping_window_count", ConformanceScenarios::hoppingWindowCount);
        m.put("conformance_hopping_window_reduce", ConformanceScenarios::hoppingWindowReduce);
        m.put("conformance_sliding_window_aggregate", ConformanceScenarios::slidingWindowAggregate);
        m.put("conformance_session_window_count", ConformanceScenarios::sessionWindowCount);
        m.put("conformance_suppress_final_counts", ConformanceScenarios::suppressFinalCounts);
        m.put("conformance_stream_stream_joins", ConformanceScenarios::streamStreamJoins);
        m.put("conformance_processor_api_punctuation", ConformanceScenarios::processorApiPunctuation);
        m.put("conformance_stream_global_table_joins", ConformanceScenarios::streamGlobalTableJoins);
        m.put("conformance_select_key_repartition_to_table", ConformanceScenarios::selectKeyRepartitionToTable);
        m.put("conformance_suppress_until_time_limit", ConformanceScenarios::suppressUntilTimeLimit);
        m.put("conformance_process_values_and_topic_extractor",
                ConformanceScenarios::processValuesAndTopicExtractor);
    }

    static Serializer<JsonNode> jsonSerializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return MAPPER.writeValueAsBytes(data);
            } catch (Exception e) {
                throw new IllegalArgumentException(e);
            }
        };
    }

    static Deserializer<JsonNode> jsonDeserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            try {
                return MAPPER.readTree(data);
            } catch (Exception e) {
                throw new IllegalArgumentException(e);
            }
        };
    }

    private static String j(Object o) {
        return String.valueOf(o);
    }

    private static int n(String v) {
        return Integer.parseInt(v.substring(1));
    }

    // ------------------------------------------------------------------------- stateless

    static Topology statelessChain() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, J))
                .filter((k, v) -> v.get("n").asInt() % 3 != 0)
                .mapValues(v -> {
                    ObjectNode copy = ((ObjectNode) v).deepCopy();
                    copy.put("double", v.get("n").asInt() * 2);
                    return (JsonNode) copy;
                })
                .flatMapValues(v -> {
                    int x = v.get("n").asInt();
                    if (x % 2 != 0) {
                        ObjectNode neg = MAPPER.createObjectNode();
                        neg.put("n", -x);
                        return List.of(v, (JsonNode) neg);
                    }
                    return List.of(v);
                })
                .peek((k, v) -> { })
                .to("out", Produced.with(S, J));
        return b.build();
    }

    static Topology splitMerge() {
        StreamsBuilder b = new StreamsBuilder();
        Map<String, KStream<String, String>> branches = b.stream("in", Consumed.with(S, S))
                .split(Named.as("conf-"))
                .branch((k, v) -> n(v) % 2 == 0, Branched.as("even"))
                .defaultBranch(Branched.as("odd"));
        KStream<String, String> even = branches.get("conf-even").mapValues(v -> "even:" + v);
        KStream<String, String> odd = branches.get("conf-odd").mapValues(v -> "odd:" + v);
        even.merge(odd).to("out", Produced.with(S, S));
        return b.build();
    }

    static final class Upper implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            context.forward(record.withValue(record.value().toUpperCase()));
        }
    }

    /** Topic by the value's number; toString() is what describe() prints (the Python side's str()). */
    static final class EvenOdd implements TopicNameExtractor<String, String> {
        @Override
        public String extract(String key, String value, RecordContext recordContext) {
            return n(value) % 2 == 0 ? "even" : "odd";
        }

        @Override
        public String toString() {
            return "EvenOdd";
        }
    }

    static Topology processValuesAndTopicExtractor() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .processValues(Upper::new)
                .to(new EvenOdd(), Produced.with(S, S));
        return b.build();
    }

    // ------------------------------------------------------------------------- aggregations

    static Topology count() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("conf-counts"))
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology reduceSum() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L))
                .groupByKey()
                .reduce(Long::sum)
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology reduceMax() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L))
                .groupByKey()
                .reduce(Math::max)
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology aggregateAndReduceWithNulls() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> grouped = b.stream("in", Consumed.with(S, S)).groupByKey(Grouped.with(S, S));
        grouped.aggregate(() -> "", (k, v, agg) -> agg + v.substring(v.length() - 1),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S))
                .toStream()
                .to("out", Produced.with(S, S));
        grouped.reduce((agg, v) -> v.compareTo(agg) > 0 ? v : agg,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S))
                .toStream()
                .to("max", Produced.with(S, S));
        return b.build();
    }

    static Topology groupByRepartition() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupBy((k, v) -> "g" + (n(v) % 3), Grouped.with(S, S))
                .count()
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology selectKeyRepartitionToTable() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .selectKey((k, v) -> "g" + (n(v) % 3))
                .repartition(Repartitioned.with(S, S))
                .toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    // ------------------------------------------------------------------------- tables

    static Topology tableFilterMapValues() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("in", Consumed.with(S, S),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("conf-source"));
        table.filter((k, v) -> v != null && n(v) % 4 != 0)
                .mapValues(v -> v.toUpperCase())
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology tableRegroupSum() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((k, v) -> KeyValue.pair("g" + (n(v) % 2), v), Grouped.with(S, S))
                .aggregate(() -> 0L, (k, v, agg) -> agg + n(v), (k, v, agg) -> agg - n(v),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>with(S, L))
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology tableTableJoins() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> left = b.table("left", Consumed.with(S, S));
        KTable<String, String> right = b.table("right", Consumed.with(S, S));
        left.join(right, (a, c) -> j(a) + "+" + j(c)).toStream().to("inner", Produced.with(S, S));
        left.leftJoin(right, (a, c) -> j(a) + "+" + j(c)).toStream().to("leftj", Produced.with(S, S));
        left.outerJoin(right, (a, c) -> j(a) + "+" + j(c)).toStream().to("outer", Produced.with(S, S));
        return b.build();
    }

    static Topology streamTableJoins() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("table", Consumed.with(S, S));
        KStream<String, String> stream = b.stream("stream", Consumed.with(S, S));
        stream.join(table, (s, tv) -> j(s) + "*" + j(tv)).to("inner", Produced.with(S, S));
        stream.leftJoin(table, (s, tv) -> j(s) + "*" + j(tv)).to("leftj", Produced.with(S, S));
        return b.build();
    }

    static Topology suppressUntilTimeLimit() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(3_000), BufferConfig.unbounded()))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology streamGlobalTableJoins() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> users = b.globalTable("users", Consumed.with(S, S));
        KStream<String, String> views = b.stream("in", Consumed.with(S, S));
        views.join(users, (k, v) -> "u" + (n(v) % 4), (v, u) -> j(v) + "@" + j(u))
                .to("inner", Produced.with(S, S));
        views.leftJoin(users, (k, v) -> "u" + (n(v) % 5), (v, u) -> j(v) + "@" + j(u))
                .to("leftj", Produced.with(S, S));
        return b.build();
    }

    // ------------------------------------------------------------------------- windows

    static Topology tumblingWindowCount() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10_000), Duration.ofMillis(5_000)))
                .count()
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), L));
        return b.build();
    }

    static Topology hoppingWindowCount() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10_000), Duration.ofMillis(3_000))
                        .advanceBy(Duration.ofMillis(4_000)))
                .count()
                .toStream()
                .map((wk, c) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), c))
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology hoppingWindowReduce() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10_000), Duration.ofMillis(3_000))
                        .advanceBy(Duration.ofMillis(5_000)))
                .reduce((a, v) -> a + "," + v)
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), S));
        return b.build();
    }

    static Topology slidingWindowAggregate() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(4_000), Duration.ofMillis(6_000)))
                .aggregate(() -> 0L, (k, v, agg) -> agg + 1,
                        Materialized.<String, Long, org.apache.kafka.streams.state.WindowStore<Bytes, byte[]>>with(S, L))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 4_000L), L));
        return b.build();
    }

    static Topology sessionWindowCount() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(3_000), Duration.ofMillis(4_000)))
                .count()
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), L));
        return b.build();
    }

    static Topology suppressFinalCounts() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10_000), Duration.ofMillis(2_000)))
                .count()
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10_000L), L));
        return b.build();
    }

    static Topology streamStreamJoins() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("left", Consumed.with(S, S));
        KStream<String, String> right = b.stream("right", Consumed.with(S, S));
        JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(3_000), Duration.ofMillis(2_000));
        left.join(right, (a, c) -> j(a) + "+" + j(c), windows).to("inner", Produced.with(S, S));
        left.leftJoin(right, (a, c) -> j(a) + "+" + j(c), windows).to("leftj", Produced.with(S, S));
        left.outerJoin(right, (a, c) -> j(a) + "+" + j(c), windows).to("outer", Produced.with(S, S));
        return b.build();
    }

    // ------------------------------------------------------------------------- Processor API

    /** Sums per key in a store; every 5 s of stream time forwards all sums (cross-key scan). */
    static final class SumAndFlush implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            this.store = context.getStateStore("conf-sums");
            context.schedule(Duration.ofMillis(5_000), PunctuationType.STREAM_TIME, ts -> {
                try (KeyValueIterator<String, Long> it = store.all()) {
                    while (it.hasNext()) {
                        KeyValue<String, Long> kv = it.next();
                        context.forward(new Record<>(kv.key, kv.value, ts));
                    }
                }
            });
        }

        @Override
        public void process(Record<String, String> record) {
            Long old = store.get(record.key());
            store.put(record.key(), (old == null ? 0 : old) + n(record.value()));
        }
    }

    static Topology processorApiPunctuation() {
        Topology t = new Topology();
        t.addSource("conf-src", S.deserializer(), S.deserializer(), "in");
        t.addProcessor("conf-sum", SumAndFlush::new, "conf-src");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("conf-sums"), S, L), "conf-sum");
        t.addSink("conf-sink", "out", S.serializer(), L.serializer(), "conf-sum");
        return t;
    }
}
