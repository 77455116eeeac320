package io.kspark.reference;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;

/** Java twins of tests/catalog/scenarios/ported_joins.py (KStreamKStream{,Left,Outer}JoinTest). */
final class PortedJoins {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();

    private PortedJoins() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("pj_inner", () -> ssJoin("inner", 100, null, null, null, false));
        m.put("pj_outer_full", () -> ssJoin("outer", 100, 24L * 3600 * 1000, null, null, false));
        m.put("pj_inner_windowing", () -> ssJoin("inner", 100, null, null, null, false));
        m.put("pj_inner_asym_after", () -> ssJoin("inner", 0, null, null, 100L, false));
        m.put("pj_inner_asym_before", () -> ssJoin("inner", 0, null, 100L, null, false));
        m.put("pj_left_duplicates", () -> ssJoin("left", 100, 10L, null, null, false));
        m.put("pj_left_expired_by_left", () -> ssJoin("left", 100, 0L, null, null, false));
        m.put("pj_left_expired_by_right", () -> ssJoin("left", 100, 0L, null, null, false));
        m.put("pj_left_right_never_by_left", () -> ssJoin("left", 100, 0L, null, null, false));
        m.put("pj_left_right_never_by_right", () -> ssJoin("left", 100, null, null, null, false));
        m.put("pj_left_zero_after", () -> ssJoin("left", 100, null, null, 0L, false));
        m.put("pj_left_ordering", () -> ssJoin("left", 100, null, null, null, false));
        m.put("pj_left_grace", () -> ssJoin("left", 100, 10L, null, null, false));
        m.put("pj_left_windowing", () -> ssJoin("left", 100, null, null, null, false));
        m.put("pj_left_asym_before_zero", () -> ssJoin("left", 100, null, 0L, null, false));
        m.put("pj_outer_duplicates", () -> ssJoin("outer", 100, 10L, null, null, true));
        m.put("pj_outer_left_expired_by_left", () -> ssJoin("outer", 100, null, null, null, true));
        m.put("pj_outer_left_expired_by_right", () -> ssJoin("outer", 100, 0L, null, null, true));
        m.put("pj_outer_right_expired_by_left", () -> ssJoin("outer", 100, null, null, null, true));
        m.put("pj_outer_right_expired_by_right", () -> ssJoin("outer", 100, 0L, null, null, true));
        m.put("pj_outer_ordering", () -> ssJoin("outer", 100, null, null, null, true));
        m.put("pj_outer_grace", () -> ssJoin("outer", 100, 10L, null, null, true));
        m.put("pj_outer_asym_emit_all", () -> ssJoin("outer", 5, null, null, 20L, true));
        m.put("pj_outer_run", () -> ssJoin("outer", 100, null, null, null, true));
        m.put("pj_outer_windowing", () -> ssJoin("outer", 100, null, null, null, true));
        m.put("pj_outer_before_zero", () -> ssJoin("outer", 100, null, 0L, null, true));
        m.put("pj_outer_after_zero", () -> ssJoin("outer", 100, null, null, 0L, true));
    }

    @SuppressWarnings("unchecked")
    static Topology ssJoin(String kind, long diff, Long grace, Long before, Long after, boolean rightLong) {
        StreamsBuilder b = new StreamsBuilder();
        JoinWindows w = grace == null
                ? JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(diff))
                : JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(diff), Duration.ofMillis(grace));
        if (before != null) {
            w = w.before(Duration.ofMillis(before));
        }
        if (after != null) {
            w = w.after(Duration.ofMillis(after));
        }
        Serde<Object> other = (Serde<Object>) (Serde<?>) (rightLong ? L : S);
        KStream<String, String> left = b.stream("l", Consumed.with(S, S));
        KStream<String, Object> right = b.stream("r", Consumed.with(S, other));
        ValueJoiner<String, Object, String> joiner = (v1, v2) -> v1 + "+" + v2;
        StreamJoined<String, String, Object> joined = StreamJoined.with(S, S, other);
        KStream<String, String> out;
        if (kind.equals("inner")) {
            out = left.join(right, joiner, w, joined);
        } else if (kind.equals("left")) {
            out = left.leftJoin(right, joiner, w, joined);
        } else {
            out = left.outerJoin(right, joiner, w, joined);
        }
        out.to("out");
        return b.build();
    }
}
