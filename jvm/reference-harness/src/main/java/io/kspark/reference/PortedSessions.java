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
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;

/** Java twins of tests/catalog/scenarios/ported_sessions.py (KStreamSessionWindowAggregateProcessorTest). */
final class PortedSessions {
    private static final Serde<String> S = Serdes.String();
    private static final long GAP = 5 * 60 * 1000L;

    private PortedSessions() {}

    static void register(Map<String, Supplier<Topology>> m) {
        pair(m, "pss_within_gap", GAP, 0);
        pair(m, "pss_merge", GAP, 0);
        pair(m, "pss_same_time", GAP, 0);
        pair(m, "pss_apart", GAP, 0);
        pair(m, "pss_multiple", GAP, 0);
        pair(m, "pss_removed", GAP, 0);
        pair(m, "pss_late_zero_grace", 10, 0);
        pair(m, "pss_late_grace", 10, 1);
        m.put("pss_final_edges", () -> sessionCount("pss-edges-store", true, 5, 2, null));
        m.put("pss_final_in_memory", PortedSessions::inMemory);
        m.put("pss_final_throttled", () -> sessionCount("pss-throttled-store", true, 5, 2, null));
    }

    private static void pair(Map<String, Supplier<Topology>> m, String name, long gap, long grace) {
        m.put(name, () -> sessionCount(name + "-store", false, gap, grace, 3 * GAP));
        m.put(name + "_final", () -> sessionCount(name + "-final-store", true, gap, grace, 3 * GAP));
    }

    static Topology inMemory() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(5), Duration.ofMillis(2)))
                .emitStrategy(EmitStrategy.onWindowClose())
                .count(Materialized.<String, Long>as(
                        Stores.inMemorySessionStore("pss-in-memory-store", Duration.ofMillis(12))))
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        return b.build();
    }

    static Topology sessionCount(String store, boolean fin, long gap, long grace, Long retention) {
        StreamsBuilder b = new StreamsBuilder();
        Materialized<String, Long, SessionStore<Bytes, byte[]>> m = Materialized.as(store);
        if (retention != null) {
            m = m.withRetention(Duration.ofMillis(retention));
        }
        b.stream("in", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(gap), Duration.ofMillis(grace)))
                .emitStrategy(fin ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate())
                .count(m)
                .toStream()
                .to("out", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.Long()));
        return b.build();
    }
}
