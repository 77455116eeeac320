package io.kspark.reference;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
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
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Java side of tests/catalog/scenarios/reference.py: the same topologies, operator for operator (the order of
 * calls fixes Kafka's generated names, so it must match the Python side exactly).
 */
final class Scenarios {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();

    private Scenarios() {}

    static Map<String, Supplier<Topology>> all() {
        Map<String, Supplier<Topology>> m = new LinkedHashMap<>();
        m.put("stateless", Scenarios::stateless);
        m.put("flat_map", Scenarios::flatMap);
        m.put("select_key_count", Scenarios::selectKeyCount);
        m.put("merge", Scenarios::merge);
        m.put("split", Scenarios::split);
        m.put("repartition", Scenarios::repartition);
        m.put("group_by_key_aggs", Scenarios::groupByKeyAggs);
        m.put("group_by_count", Scenarios::groupByCount);
        m.put("named_ops", Scenarios::namedOps);
        m.put("to_table", Scenarios::toTable);
        m.put("table_ops", Scenarios::tableOps);
        m.put("table_unmaterialized", Scenarios::tableUnmaterialized);
        m.put("table_group_by_aggregate", Scenarios::tableGroupByAggregate);
        m.put("table_group_by_count", Scenarios::tableGroupByCount);
        m.put("tt_inner", () -> tableTable("inner"));
        m.put("tt_left", () -> tableTable("left"));
        m.put("tt_outer", () -> tableTable("outer"));
        m.put("st_join", () -> streamTable(false));
        m.put("st_left_join", () -> streamTable(true));
        m.put("global_join", Scenarios::globalJoin);
        m.put("tumbling_count", Scenarios::tumblingCount);
        m.put("hopping_reduce", Scenarios::hoppingReduce);
        m.put("sliding", Scenarios::sliding);
        m.put("session_count", Scenarios::sessionCount);
        m.put("session_aggregate", Scenarios::sessionAggregate);
        m.put("ss_inner", () -> streamStream("inner"));
        m.put("ss_left", () -> streamStream("left"));
        m.put("ss_outer", () -> streamStream("outer"));
        m.put("suppress_window", Scenarios::suppressWindow);
        m.put("suppress_time_limit", Scenarios::suppressTimeLimit);
        m.put("punctuation", Scenarios::punctuation);
        PortedScenarios.register(m);
        ConformanceScenarios.register(m);
        return m;
    }

    private static String j(Object o) {
        return String.valueOf(o);
    }

    static Topology stateless() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.filter((k, v) -> v != null)
                .filterNot((k, v) -> v.startsWith("x"))
                .mapValues(v -> v.toUpperCase())
                .map((k, v) -> KeyValue.pair(k == null ? "nk" : k + "!", v + v))
                .peek((k, v) -> { })
                .to("out");
        return b.build();
    }

    static Topology flatMap() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.flatMap((k, v) -> {
            List<KeyValue<String, String>> r = new ArrayList<>();
            if (v != null) {
                for (String p : v.split(",")) {
                    r.add(KeyValue.pair(p, k));
                }
            }
            return r;
        }).flatMapValues(v -> v == null ? List.of("none") : List.of(v, v + "2")).to("out");
        return b.build();
    }

    static Topology selectKeyCount() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.selectKey((k, v) -> v).groupByKey().count().toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology merge() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> a = b.stream("a");
        KStream<String, String> c = b.stream("b");
        a.merge(c).mapValues(v -> v + "m").to("out");
        return b.build();
    }

    static Topology split() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        Map<String, KStream<String, String>> m = s.split(Named.as("p-"))
                .branch((k, v) -> v != null && v.startsWith("a"), Branched.as("a"))
                .branch((k, v) -> v != null && v.startsWith("b"), Branched.as("b"))
                .defaultBranch(Branched.as("rest"));
        m.get("p-a").to("out-a");
        m.get("p-b").to("out-b");
        m.get("p-rest").to("out-rest");
        return b.build();
    }

    static Topology repartition() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.repartition(Repartitioned.as("rp")).mapValues(v -> v + "r").to("out");
        s.map((k, v) -> KeyValue.pair(v, k)).repartition().to("out2");
        return b.build();
    }

    static Topology groupByKeyAggs() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        KGroupedStream<String, String> g = s.groupByKey();
        g.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream().to("count-out", Produced.with(S, L));
        g.reduce((a, v) -> a + "|" + v, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("reduced"))
                .toStream().to("reduce-out");
        g.aggregate(() -> "init", (k, v, agg) -> agg + "+" + v,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agged"))
                .toStream().to("agg-out");
        return b.build();
    }

    static Topology groupByCount() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupBy((k, v) -> v, Grouped.as("byval")).count().toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology namedOps() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in", Consumed.<String, String>as("src"));
        s.filter((k, v) -> v != null, Named.as("not-null"))
                .mapValues(v -> v + "!", Named.as("bang"))
                .groupByKey(Grouped.as("grp"))
                .count(Named.as("cnt"), Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("cstore"))
                .toStream(Named.as("to-s"))
                .to("out", Produced.<String, Long>with(S, L).withName("sink"));
        return b.build();
    }

    static Topology toTable() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("tt")).toStream().to("out");
        return b.build();
    }

    static Topology tableOps() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("t-store"));
        t.filter((k, v) -> !v.startsWith("x")).mapValues(v -> v + "!").toStream().to("out");
        return b.build();
    }

    static Topology tableUnmaterialized() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t");
        t.filterNot((k, v) -> v.equals("drop")).mapValues(v -> v + v).toStream().to("out");
        return b.build();
    }

    static Topology tableGroupByAggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t");
        t.groupBy((k, v) -> KeyValue.pair(v, k))
                .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agg"))
                .toStream().to("out");
        return b.build();
    }

    static Topology tableGroupByCount() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> t = b.table("t");
        t.groupBy((k, v) -> KeyValue.pair(v, v)).count().toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology tableTable(String kind) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> l = b.table("l");
        KTable<String, String> r = b.table("r");
        KTable<String, String> joined;
        if (kind.equals("inner")) {
            joined = l.join(r, (a, c) -> j(a) + "/" + j(c));
        } else if (kind.equals("left")) {
            joined = l.leftJoin(r, (a, c) -> j(a) + "/" + j(c));
        } else {
            joined = l.outerJoin(r, (a, c) -> j(a) + "/" + j(c));
        }
        joined.toStream().to("out");
        return b.build();
    }

    static Topology streamTable(boolean left) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("s");
        KTable<String, String> t = b.table("t");
        KStream<String, String> joined = left
                ? s.leftJoin(t, (sv, tv) -> j(sv) + "/" + j(tv))
                : s.join(t, (sv, tv) -> j(sv) + "/" + j(tv));
        joined.to("out");
        return b.build();
    }

    static Topology globalJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("s");
        GlobalKTable<String, String> g = b.globalTable("g");
        s.join(g, (k, v) -> v, (sv, gv) -> j(sv) + "/" + j(gv)).to("out");
        s.leftJoin(g, (k, v) -> v, (sv, gv) -> j(sv) + "/" + j(gv)).to("out-left");
        return b.build();
    }

    static Topology tumblingCount() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
                .count()
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), L));
        return b.build();
    }

    static Topology hoppingReduce() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(2))
                        .advanceBy(Duration.ofMillis(5)))
                .reduce((a, v) -> a + v)
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), S));
        return b.build();
    }

    static Topology sliding() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        var w = s.groupByKey()
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)));
        w.count().toStream()
                .to("count-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), L));
        w.aggregate(() -> "", (k, v, agg) -> agg + v,
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>with(S, S))
                .toStream()
                .to("agg-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), S));
        return b.build();
    }

    static Topology sessionCount() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(3)))
                .count()
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), L));
        return b.build();
    }

    static Topology sessionAggregate() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(3)))
                .aggregate(() -> "", (k, v, agg) -> agg + v, (k, a1, a2) -> a1 + "&" + a2,
                        Materialized.<String, String, SessionStore<Bytes, byte[]>>as("sess").withValueSerde(S))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), S));
        return b.build();
    }

    static Topology streamStream(String kind) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> l = b.stream("l");
        KStream<String, String> r = b.stream("r");
        JoinWindows w = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5), Duration.ofMillis(3))
                .after(Duration.ofMillis(8));
        KStream<String, String> joined;
        if (kind.equals("inner")) {
            joined = l.join(r, (a, c) -> j(a) + "/" + j(c), w);
        } else if (kind.equals("left")) {
            joined = l.leftJoin(r, (a, c) -> j(a) + "/" + j(c), w);
        } else {
            joined = l.outerJoin(r, (a, c) -> j(a) + "/" + j(c), w);
        }
        joined.to("out");
        return b.build();
    }

    static Topology suppressWindow() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(2)))
                .count(Materialized.with(S, L))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), L));
        return b.build();
    }

    static Topology suppressTimeLimit() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> s = b.stream("in");
        s.groupByKey()
                .count()
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10), BufferConfig.unbounded()))
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    /** Counts per key in a store; punctuates on stream time (every 10) and wall-clock time (every 100). */
    static final class PunctuatingProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("pcounts");
            context.schedule(Duration.ofMillis(10), PunctuationType.STREAM_TIME, ts -> {
                try (KeyValueIterator<String, Long> it = store.all()) {
                    while (it.hasNext()) {
                        KeyValue<String, Long> kv = it.next();
                        context.forward(new Record<>(kv.key, "st:" + kv.value + "@" + ts, ts));
                    }
                }
            });
            context.schedule(Duration.ofMillis(100), PunctuationType.WALL_CLOCK_TIME,
                    ts -> context.forward(new Record<>("wall", "wc@" + ts, ts)));
        }

        @Override
        public void process(Record<String, String> record) {
            Long old = store.get(record.key());
            long n = old == null ? 1 : old + 1;
            store.put(record.key(), n);
            context.forward(record.withValue(record.value() + ":" + n));
        }
    }

    static Topology punctuation() {
        Topology t = new Topology();
        t.addSource("source", S.deserializer(), S.deserializer(), "in");
        t.addProcessor("proc", PunctuatingProcessor::new, "source");
        t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("pcounts"), S, L), "proc");
        t.addSink("sink", "out", S.serializer(), S.serializer(), "proc");
        return t;
    }
}
