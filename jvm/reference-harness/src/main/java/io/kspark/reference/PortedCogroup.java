package io.kspark.reference;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/** Java twins of tests/catalog/scenarios/ported_cogroup.py (the *CogroupedKStreamImplTest classes). */
final class PortedCogroup {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final Produced<String, String> OUT = Produced.with(S, S);
    private static final Aggregator<String, String, String> CONCAT = (k, v, agg) -> agg + v;
    private static final Aggregator<String, String, String> ADDER = (k, v, agg) -> agg + "+" + v;
    private static final Aggregator<String, String, String> REMOVER = (k, v, agg) -> agg + "-" + v;
    private static final Initializer<String> EMPTY = () -> "";
    private static final Initializer<String> ZERO = () -> "0";

    private PortedCogroup() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("cg_streams_1", () -> streams(1));
        m.put("cg_streams_2", () -> streams(2));
        m.put("cg_streams_3", () -> streams(3));
        m.put("cg_mixed_aggregators", PortedCogroup::mixedAggregators);
        m.put("cg_mixed_types", PortedCogroup::mixedTypes);
        m.put("cg_named", PortedCogroup::named);
        m.put("cg_table_join", PortedCogroup::tableJoin);
        m.put("cg_repartition_named", PortedCogroup::repartitionNamed);
        m.put("cg_repartition_store", PortedCogroup::repartitionStore);
        m.put("cg_used_twice", PortedCogroup::usedTwice);
        m.put("cg_grouped_reused", PortedCogroup::groupedReused);
        m.put("cg_replace", PortedCogroup::replace);
        m.put("cg_windowed", PortedCogroup::windowed);
        m.put("cg_hopping_named", PortedCogroup::hoppingNamed);
        m.put("cg_windowed_late", PortedCogroup::windowedLate);
        m.put("cg_sliding", PortedCogroup::sliding);
        m.put("cg_session", PortedCogroup::session);
        m.put("cg_suppressed", PortedCogroup::suppressed);
    }

    private static KGroupedStream<String, String> grouped(StreamsBuilder b, String topic) {
        return b.stream(topic, Consumed.with(S, S)).groupByKey();
    }

    static Topology streams(int n) {
        StreamsBuilder b = new StreamsBuilder();
        String[] topics = {"one", "two", "three"};
        KGroupedStream<String, String> first = grouped(b, topics[0]);
        CogroupedKStream<String, String> cogrouped = first.cogroup(CONCAT);
        for (int i = 1; i < n; i++) {
            cogrouped = cogrouped.cogroup(grouped(b, topics[i]), CONCAT);
        }
        cogrouped.aggregate(EMPTY).toStream().to("output", OUT);
        return b.build();
    }

    static Topology mixedAggregators() {
        StreamsBuilder b = new StreamsBuilder();
        grouped(b, "one")
                .cogroup(REMOVER)
                .cogroup(grouped(b, "two"), ADDER)
                .aggregate(ZERO, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pcg-mixed-store").withValueSerde(S))
                .toStream()
                .to("output", OUT);
        return b.build();
    }

    static Topology mixedTypes() {
        StreamsBuilder b = new StreamsBuilder();
        Aggregator<String, String, Long> parseSum = (k, v, agg) -> agg + Long.parseLong(v);
        Aggregator<String, Long, Long> add = (k, v, agg) -> agg + v;
        grouped(b, "one")
                .cogroup(parseSum)
                .cogroup(b.stream("two", Consumed.with(S, L)).groupByKey(), add)
                .aggregate(() -> 0L, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pcg-types-store").withValueSerde(L))
                .toStream()
                .to("output", Produced.with(S, L));
        return b.build();
    }

    static Topology named() {
        StreamsBuilder b = new StreamsBuilder();
        grouped(b, "one")
                .cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .aggregate(EMPTY, Named.as("pcg-named"), Materialized.as("pcg-named-store"))
                .toStream()
                .to("output", OUT);
        return b.build();
    }

    static Topology tableJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table1 = grouped(b, "one")
                .cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .aggregate(EMPTY, Named.as("pcg-join"), Materialized.as("pcg-join-store"));
        KTable<String, String> table2 = b.table("three", Consumed.with(S, S));
        table1.join(table2, (v1, v2) -> v1 + "+" + v2, Materialized.with(S, S)).toStream().to("output", OUT);
        return b.build();
    }

    static Topology repartitionNamed() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> groupedOne = b.stream("one", Consumed.with(S, S))
                .map((k, v) -> new KeyValue<>(v, k))
                .groupByKey(Grouped.as("pcg-rekey"));
        groupedOne.cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .aggregate(EMPTY)
                .toStream()
                .to("output", OUT);
        return b.build();
    }

    static Topology repartitionStore() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> groupedOne = b.stream("one", Consumed.with(S, S)).groupBy((k, v) -> v);
        groupedOne.cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .aggregate(EMPTY, Named.as("pcg-gen"), Materialized.as("pcg-gen-store"))
                .toStream()
                .to("output", OUT);
        return b.build();
    }

    static Topology usedTwice() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> groupedOne = b.stream("one", Consumed.with(S, S))
                .map((k, v) -> new KeyValue<>(v, k))
                .groupByKey(Grouped.as("pcg-twice"));
        CogroupedKStream<String, String> cogrouped = groupedOne.cogroup(CONCAT);
        cogrouped.aggregate(EMPTY).toStream().to("out1", OUT);
        cogrouped.aggregate(() -> "#").toStream().to("out2", OUT);
        return b.build();
    }

    static Topology groupedReused() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> groupedOne = b.stream("one", Consumed.with(S, S))
                .map((k, v) -> new KeyValue<>(v, k))
                .groupByKey();
        groupedOne.cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .aggregate(EMPTY)
                .toStream()
                .to("out1", OUT);
        groupedOne.aggregate(EMPTY, CONCAT).toStream().to("out2", OUT);
        return b.build();
    }

    static Topology replace() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> groupedOne = grouped(b, "one");
        groupedOne.cogroup(CONCAT)
                .cogroup(grouped(b, "two"), CONCAT)
                .cogroup(groupedOne, ADDER)
                .aggregate(EMPTY)
                .toStream()
                .to("output", OUT);
        return b.build();
    }

    private static CogroupedKStream<String, String> addRemove(StreamsBuilder b) {
        KGroupedStream<String, String> g1 = b.stream("one", Consumed.with(S, S)).groupByKey(Grouped.with(S, S));
        KGroupedStream<String, String> g2 = b.stream("two", Consumed.with(S, S)).groupByKey(Grouped.with(S, S));
        return g1.cogroup(ADDER).cogroup(g2, REMOVER);
    }

    private static Produced<org.apache.kafka.streams.kstream.Windowed<String>, String> windowedOut(long size) {
        return Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, size), S);
    }

    static Topology windowed() {
        StreamsBuilder b = new StreamsBuilder();
        addRemove(b)
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(500)))
                .aggregate(ZERO, Materialized.with(S, S))
                .toStream()
                .to("output", windowedOut(500));
        return b.build();
    }

    static Topology hoppingNamed() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("one", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .cogroup(ADDER)
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMillis(500)).advanceBy(Duration.ofMillis(200)))
                .aggregate(ZERO, Named.as("pcg-hop"), Materialized.with(S, S))
                .toStream()
                .to("output", windowedOut(500));
        return b.build();
    }

    static Topology windowedLate() {
        StreamsBuilder b = new StreamsBuilder();
        addRemove(b)
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(100), Duration.ofMillis(10)))
                .aggregate(ZERO, Materialized.with(S, S))
                .toStream()
                .to("output", windowedOut(100));
        return b.build();
    }

    static Topology sliding() {
        StreamsBuilder b = new StreamsBuilder();
        addRemove(b)
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(2000)))
                .aggregate(ZERO, Materialized.with(S, S))
                .toStream()
                .to("output", windowedOut(500));
        return b.build();
    }

    static Topology session() {
        StreamsBuilder b = new StreamsBuilder();
        addRemove(b)
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(100), Duration.ofDays(1)))
                .aggregate(ZERO, (k, a1, a2) -> a1 + "+" + a2, Materialized.with(S, S))
                .toStream()
                .to("output", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), S));
        return b.build();
    }

    static Topology suppressed() {
        StreamsBuilder b = new StreamsBuilder();
        addRemove(b)
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(100), Duration.ZERO))
                .aggregate(ZERO, Materialized.<String, String, WindowStore<Bytes, byte[]>>as("pcg-suppress-store")
                        .withKeySerde(S).withValueSerde(S))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream()
                .to("output", windowedOut(100));
        return b.build();
    }
}
