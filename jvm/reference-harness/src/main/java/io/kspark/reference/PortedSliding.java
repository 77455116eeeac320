package io.kspark.reference;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/** Java twins of tests/catalog/scenarios/ported_sliding.py (KStreamSlidingWindowAggregateTest). */
final class PortedSliding {
    private static final Serde<String> S = Serdes.String();

    private PortedSliding() {}

    static void register(Map<String, Supplier<Topology>> m) {
        pair(m, "ps_agg_small", 10, 5, 5, true, false);
        pair(m, "ps_reduce_small", 10, 5, 5, true, true);
        pair(m, "ps_agg_large", 10, 50, 10, true, false);
        pair(m, "ps_early_small", 50, 0, 0, false, false);
        pair(m, "ps_early_repeated", 5, 0, 0, false, false);
        pair(m, "ps_early_large", 10, 50, 1, true, false);
        pair(m, "ps_no_grace_small", 50, 0, 0, false, false);
        pair(m, "ps_no_grace_large", 10, 0, 0, true, false);
        pair(m, "ps_expired_grace", 10, 90, 90, true, false);
        m.put("ps_join", () -> join(false));
        m.put("ps_join_final", () -> join(true));
        m.put("ps_final_retention", () -> slidingAgg("ps-retention-store", true, 10, 0, false, false));
    }

    private static void pair(Map<String, Supplier<Topology>> m, String name, long diff, long graceUpdate,
                             long graceFinal, boolean inMemory, boolean reduce) {
        m.put(name, () -> slidingAgg(name + "-store", false, diff, graceUpdate, inMemory, reduce));
        m.put(name + "_final", () -> slidingAgg(name + "-final-store", true, diff, graceFinal, false, reduce));
    }

    static Topology slidingAgg(String store, boolean fin, long diff, long grace, boolean inMemory, boolean reduce) {
        StreamsBuilder b = new StreamsBuilder();
        Materialized<String, String, WindowStore<Bytes, byte[]>> m = inMemory
                ? Materialized.as(Stores.inMemoryWindowStore(store, Duration.ofMillis(50000), Duration.ofMillis(10), false))
                : Materialized.<String, String, WindowStore<Bytes, byte[]>>as(store).withValueSerde(S);
        TimeWindowedKStream<String, String> windowed = b.stream("in", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(diff), Duration.ofMillis(grace)))
                .emitStrategy(fin ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate());
        KTable<Windowed<String>, String> table = reduce
                ? windowed.reduce((a, v) -> a + "+" + v, m)
                : windowed.aggregate(() -> "0", (k, v, agg) -> agg + "+" + v, m);
        table.toStream().to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, diff), S));
        return b.build();
    }

    static KTable<Windowed<String>, String> agg(StreamsBuilder b, String topic, String store, boolean fin) {
        Materialized<String, String, WindowStore<Bytes, byte[]>> m = fin
                ? Materialized.<String, String, WindowStore<Bytes, byte[]>>as(store).withValueSerde(S)
                : Materialized.as(Stores.inMemoryWindowStore(store, Duration.ofMillis(50000), Duration.ofMillis(10), false));
        return b.stream(topic, Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(fin ? 0 : 100)))
                .emitStrategy(fin ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate())
                .aggregate(() -> "0", (k, v, a) -> a + "+" + v, m);
    }

    static Topology join(boolean fin) {
        StreamsBuilder b = new StreamsBuilder();
        String tag = fin ? "fin" : "upd";
        Produced<Windowed<String>, String> out =
                Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), S);
        KTable<Windowed<String>, String> table1 = agg(b, "in1", "ps-join-" + tag + "-1", fin);
        KTable<Windowed<String>, String> table2 = agg(b, "in2", "ps-join-" + tag + "-2", fin);
        table1.toStream().to("out1", out);
        table2.toStream().to("out2", out);
        table1.join(table2, (p1, p2) -> p1 + "%" + p2).toStream().to("out3", out);
        return b.build();
    }
}
