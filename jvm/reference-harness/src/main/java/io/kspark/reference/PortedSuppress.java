package io.kspark.reference;

import java.time.Duration;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/** Java twins of tests/catalog/scenarios/ported_suppress.py (SuppressScenarioTest, KTableSuppressProcessorTest). */
final class PortedSuppress {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final long DAYS_100 = 100L * 24 * 3600 * 1000;

    private PortedSuppress() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("psu_zero_emit_after",
                () -> valueCounts(Suppressed.untilTimeLimit(Duration.ZERO, Suppressed.BufferConfig.unbounded()), false));
        m.put("psu_time_limit",
                () -> valueCounts(Suppressed.untilTimeLimit(Duration.ofMillis(2), Suppressed.BufferConfig.unbounded()), false));
        m.put("psu_record_limit", () -> valueCounts(Suppressed.untilTimeLimit(Duration.ofMillis(Long.MAX_VALUE),
                Suppressed.BufferConfig.maxRecords(1L).emitEarlyWhenFull()), true));
        m.put("psu_bytes_limit", () -> valueCounts(Suppressed.untilTimeLimit(Duration.ofMillis(Long.MAX_VALUE),
                Suppressed.BufferConfig.maxBytes(200L).emitEarlyWhenFull()), false));
        m.put("psu_final_time_windows", () -> timeWindowed(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(2), Duration.ofMillis(1)), 2, "psu-counts-tw"));
        m.put("psu_final_large_jump", () -> timeWindowed(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(2), Duration.ofMillis(2)), 2, "psu-counts-jump"));
        m.put("psu_final_sliding", PortedSuppress::sliding);
        m.put("psu_final_sessions", PortedSuppress::sessions);
        m.put("psu_before_group_by", PortedSuppress::beforeGroupBy);
        m.put("psu_before_join_right", () -> beforeJoin("right"));
        m.put("psu_before_join_left", () -> beforeJoin("left"));
        m.put("psu_table_tombstones", () -> tableSuppress(
                Suppressed.untilTimeLimit(Duration.ZERO, Suppressed.BufferConfig.maxRecords(0))));
        m.put("psu_session_limit_tombstones", () -> sessionSuppress(false));
        m.put("psu_session_final_tombstones", () -> sessionSuppress(true));
        m.put("psu_record_capacity", () -> tableSuppress(
                Suppressed.untilTimeLimit(Duration.ofMillis(DAYS_100), Suppressed.BufferConfig.maxRecords(1))));
        m.put("psu_byte_capacity", () -> tableSuppress(
                Suppressed.untilTimeLimit(Duration.ofMillis(DAYS_100), Suppressed.BufferConfig.maxBytes(60L))));
    }

    static Topology valueCounts(Suppressed<? super String> suppressed, boolean serdes) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("input", Consumed.with(S, S),
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(S, S)
                        .withCachingDisabled().withLoggingDisabled());
        KGroupedTable<String, String> grouped = table.groupBy((k, v) -> new KeyValue<>(v, k), Grouped.with(S, S));
        KTable<String, Long> counts = serdes ? grouped.count(Materialized.with(S, L)) : grouped.count();
        counts.suppress(suppressed).toStream().to("output-suppressed", Produced.with(S, L));
        counts.toStream().to("output-raw", Produced.with(S, L));
        return b.build();
    }

    private static KGroupedStream<String, String> groupedInput(StreamsBuilder b) {
        return b.stream("input", Consumed.with(S, S)).groupBy((String k, String v) -> k, Grouped.with(S, S));
    }

    private static void writeWindowed(KTable<Windowed<String>, Long> counts, Serde<Windowed<String>> keySerde) {
        counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream().to("output-suppressed", Produced.with(keySerde, L));
        counts.toStream().to("output-raw", Produced.with(keySerde, L));
    }

    static Topology timeWindowed(TimeWindows windows, long size, String store) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<Windowed<String>, Long> counts = groupedInput(b).windowedBy(windows)
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(store).withCachingDisabled());
        writeWindowed(counts, WindowedSerdes.timeWindowedSerdeFrom(String.class, size));
        return b.build();
    }

    static Topology sliding() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<Windowed<String>, Long> counts = groupedInput(b)
                .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(5), Duration.ofMillis(15)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("psu-counts-sliding")
                        .withCachingDisabled());
        writeWindowed(counts, WindowedSerdes.timeWindowedSerdeFrom(String.class, 5L));
        return b.build();
    }

    static Topology sessions() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<Windowed<String>, Long> counts = groupedInput(b)
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
                .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("psu-counts-sessions")
                        .withCachingDisabled());
        writeWindowed(counts, WindowedSerdes.sessionWindowedSerdeFrom(String.class));
        return b.build();
    }

    static Topology beforeGroupBy() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("topic", Consumed.with(S, S))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(10), Suppressed.BufferConfig.unbounded()))
                .groupBy(KeyValue::pair, Grouped.with(S, S))
                .count()
                .toStream()
                .to("output", Produced.with(S, L));
        return b.build();
    }

    static Topology beforeJoin(String side) {
        StreamsBuilder b = new StreamsBuilder();
        Suppressed<Object> limit = Suppressed.untilTimeLimit(Duration.ofMillis(10), Suppressed.BufferConfig.unbounded());
        KTable<String, String> left = b.table("left", Consumed.with(S, S));
        if (side.equals("left")) {
            left = left.suppress(limit);
        }
        KTable<String, String> right = b.table("right", Consumed.with(S, S));
        if (side.equals("right")) {
            right = right.suppress(limit);
        }
        left.outerJoin(right, (l, r) -> String.format("(%s,%s)", l, r))
                .toStream()
                .to("output", Produced.with(S, S));
        return b.build();
    }

    static Topology tableSuppress(Suppressed<? super String> suppressed) {
        StreamsBuilder b = new StreamsBuilder();
        b.table("input", Consumed.with(S, S)).suppress(suppressed).toStream().to("output", Produced.with(S, S));
        return b.build();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Topology sessionSuppress(boolean untilClose) {
        StreamsBuilder b = new StreamsBuilder();
        Suppressed s = untilClose
                ? Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
                : Suppressed.untilTimeLimit(Duration.ZERO, Suppressed.BufferConfig.maxRecords(0));
        b.stream("input", Consumed.with(S, S))
                .groupByKey(Grouped.with(S, S))
                .windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMillis(5)))
                .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>with(S, L).withCachingDisabled())
                .suppress(s)
                .toStream()
                .to("output", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), L));
        return b.build();
    }
}
