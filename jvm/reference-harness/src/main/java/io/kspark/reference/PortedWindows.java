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
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;

/** Java twins of tests/catalog/scenarios/ported_windows.py (KStreamWindowAggregateTest and emit-final edges). */
final class PortedWindows {
    private static final Serde<String> S = Serdes.String();

    private PortedWindows() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("pw_agg_basic", () -> hopAgg("pw-basic-upd", false, 100, 5, null, true));
        m.put("pw_agg_basic_final", () -> hopAgg("pw-basic-fin", true, 100, 5, null, true));
        m.put("pw_join_update", () -> join(false));
        m.put("pw_join_final", () -> join(true));
        m.put("pw_expired_update", () -> hopAgg("pw-exp-upd", false, 90, 5, 100L, false));
        m.put("pw_expired_final", () -> hopAgg("pw-exp-fin", true, 90, 5, 100L, false));
        m.put("pw_expired_grace_update", () -> hopAgg("pw-grace-upd", false, 90, 10, null, false));
        m.put("pw_expired_grace_final", () -> hopAgg("pw-grace-fin", true, 90, 10, null, false));
        m.put("pw_final_not_enough", () -> hopAgg("pw-progress", true, 5, 5, null, true));
        m.put("pw_final_interval0", () -> hopAgg("pw-interval0", true, 5, 5, null, true));
        m.put("pw_final_large_interval", () -> hopAgg("pw-interval-large", true, 5, 5, null, true));
        m.put("pw_final_hop_edge", () -> hopAgg("pw-hop-edge", true, 0, 5, null, true));
        m.put("pw_final_tumble_jump", () -> hopAgg("pw-tumble-jump", true, 5, 10, null, true));
        m.put("pw_final_hop_in_memory", () -> hopSupplied(Stores.inMemoryWindowStore(
                "pw-hop-in-memory", Duration.ofMillis(15), Duration.ofMillis(10), false)));
        m.put("pw_final_hop_persistent", () -> hopSupplied(Stores.persistentTimestampedWindowStore(
                "pw-hop-persistent", Duration.ofMillis(100), Duration.ofMillis(10), false)));
    }

    static EmitStrategy strategy(boolean fin) {
        return fin ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate();
    }

    static Produced<Windowed<String>, String> out() {
        return Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), S);
    }

    static Topology hopAgg(String store, boolean fin, long grace, long advance, Long retention, boolean logging) {
        StreamsBuilder b = new StreamsBuilder();
        Materialized<String, String, WindowStore<Bytes, byte[]>> m =
                Materialized.<String, String, WindowStore<Bytes, byte[]>>as(store).withValueSerde(S);
        if (retention != null) {
            m = m.withRetention(Duration.ofMillis(retention));
        }
        if (!logging) {
            m = m.withLoggingDisabled();
        }
        b.stream("in", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(grace))
                        .advanceBy(Duration.ofMillis(advance)))
                .emitStrategy(strategy(fin))
                .aggregate(() -> "0", (k, v, agg) -> agg + "+" + v, m)
                .toStream()
                .to("out", out());
        return b.build();
    }

    static Topology hopSupplied(WindowBytesStoreSupplier supplier) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ZERO)
                        .advanceBy(Duration.ofMillis(5)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .aggregate(() -> "0", (k, v, agg) -> agg + "+" + v,
                        Materialized.<String, String>as(supplier).withValueSerde(S))
                .toStream()
                .to("out", out());
        return b.build();
    }

    static KTable<Windowed<String>, String> windowedAgg(
            StreamsBuilder b, String topic, String store, boolean fin, long grace) {
        return b.stream(topic, Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(grace))
                        .advanceBy(Duration.ofMillis(5)))
                .emitStrategy(strategy(fin))
                .aggregate(() -> "0", (k, v, a) -> a + "+" + v,
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as(store).withValueSerde(S));
    }

    static Topology join(boolean fin) {
        StreamsBuilder b = new StreamsBuilder();
        long grace = fin ? 5 : 100;
        String tag = fin ? "fin" : "upd";
        KTable<Windowed<String>, String> table1 = windowedAgg(b, "in1", "pw-join-" + tag + "-1", fin, grace);
        table1.toStream().to("out1", out());
        KTable<Windowed<String>, String> table2 = windowedAgg(b, "in2", "pw-join-" + tag + "-2", fin, grace);
        table2.toStream().to("out2", out());
        table1.join(table2, (p1, p2) -> p1 + "%" + p2).toStream().to("out3", out());
        return b.build();
    }
}
