package io.kspark.reference;

import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;

/** Java twins of tests/catalog/scenarios/ported_tables.py (KTable operator and table-join tests). */
final class PortedTables {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final ValueJoiner<String, String, String> JOINER = (v1, v2) -> v1 + "+" + v2;

    private PortedTables() {}

    static void register(Map<String, Supplier<Topology>> m) {
        for (String kind : new String[] {"inner", "left", "outer"}) {
            m.put("pt_tt_" + kind, () -> tableTable(kind, null, false));
            m.put("pt_tt_" + kind + "_old", () -> tableTable(kind, null, true));
        }
        m.put("pt_tt_inner_materialized", () -> tableTable("inner", "pt-inner-joined", false));
        m.put("pt_st_join", () -> streamTable(false));
        m.put("pt_st_left_join", () -> streamTable(true));
        m.put("pt_global_join", () -> streamGlobal(false));
        m.put("pt_global_left_join", () -> streamGlobal(true));
        m.put("pt_agg_basic", PortedTables::aggBasic);
        m.put("pt_agg_repartition", PortedTables::aggRepartition);
        m.put("pt_count", PortedTables::countByValue);
        m.put("pt_remove_before_add", PortedTables::removeBeforeAdd);
        m.put("pt_count_same_key", PortedTables::countSameKey);
        m.put("pt_reduce", PortedTables::reduceAddSubtract);
        m.put("pt_filter", () -> filterBoth(false));
        m.put("pt_filter_materialized", () -> filterBoth(true));
        m.put("pt_filter_group", () -> filterThenGroup(false));
        m.put("pt_filter_group_materialized", () -> filterThenGroup(true));
        m.put("pt_map_values", () -> mapValues(false));
        m.put("pt_map_values_materialized", () -> mapValues(true));
        m.put("pt_source", () -> sourceTable(false));
        m.put("pt_source_on_change", () -> sourceTable(true));
    }

    static Topology tableTable(String kind, String store, boolean oldValues) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> left = b.table("l", Consumed.with(S, S));
        KTable<String, String> right = b.table("r", Consumed.with(S, S));
        KTable<String, String> joined;
        if (store == null) {
            joined = kind.equals("inner") ? left.join(right, JOINER)
                    : kind.equals("left") ? left.leftJoin(right, JOINER) : left.outerJoin(right, JOINER);
        } else {
            Materialized<String, String, KeyValueStore<Bytes, byte[]>> m = Materialized.as(store);
            joined = kind.equals("inner") ? left.join(right, JOINER, m)
                    : kind.equals("left") ? left.leftJoin(right, JOINER, m) : left.outerJoin(right, JOINER, m);
        }
        joined.toStream().to("out", Produced.with(S, S));
        if (oldValues) {
            joined.groupBy((k, v) -> KeyValue.pair("all", k + "=" + v), Grouped.with(S, S))
                    .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                            Materialized.with(S, S))
                    .toStream()
                    .to("agg", Produced.with(S, S));
        }
        return b.build();
    }

    static Topology streamTable(boolean leftJoin) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("s", Consumed.with(S, S));
        KTable<String, String> table = b.table("t", Consumed.with(S, S));
        (leftJoin ? stream.leftJoin(table, JOINER) : stream.join(table, JOINER)).to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology streamGlobal(boolean leftJoin) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("s", Consumed.with(S, S));
        GlobalKTable<String, String> table = b.globalTable("g", Consumed.with(S, S));
        KeyValueMapper<String, String, String> foreignKey = (key, value) -> {
            String[] tokens = value.split(",");
            return tokens.length > 1 ? tokens[1] : null;
        };
        (leftJoin ? stream.leftJoin(table, foreignKey, JOINER) : stream.join(table, foreignKey, JOINER))
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology aggBasic() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((k, v) -> KeyValue.pair(k, v), Grouped.with(S, S))
                .aggregate(() -> "0", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pt-agg-basic").withValueSerde(S))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology aggRepartition() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((String key, String value) -> {
                    switch (key) {
                        case "null":
                            return KeyValue.pair(null, value);
                        case "NULL":
                            return null;
                        default:
                            return KeyValue.pair(value, value);
                    }
                }, Grouped.with(S, S))
                .aggregate(() -> "0", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pt-agg-repartition")
                                .withValueSerde(S))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology countByValue() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(S, S))
                .count(Materialized.as("pt-count"))
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology removeBeforeAdd() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((k, v) -> KeyValue.pair(String.valueOf(k.charAt(0)), String.valueOf(k.charAt(1))),
                        Grouped.with(S, S))
                .aggregate(() -> "", (k, v, agg) -> agg + v, (k, v, agg) -> agg.replace(v, ""),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pt-remove-before-add")
                                .withValueSerde(S))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology countSameKey() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy(KeyValue::pair, Grouped.with(S, S))
                .count()
                .toStream()
                .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology reduceAddSubtract() {
        StreamsBuilder b = new StreamsBuilder();
        b.table("in", Consumed.with(S, S))
                .groupBy((k, v) -> KeyValue.pair("all", v), Grouped.with(S, S))
                .reduce((agg, v) -> agg + v, (agg, v) -> agg.replace(v, ""), Materialized.with(S, S))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology filterBoth(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, Long> table = b.table("in", Consumed.with(S, L));
        KTable<String, Long> kept = materialized
                ? table.filter((k, v) -> v % 2 == 0,
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pt-filter-store").withValueSerde(L))
                : table.filter((k, v) -> v % 2 == 0);
        KTable<String, Long> dropped = table.filterNot((k, v) -> v % 2 == 0);
        kept.toStream().to("out-filter", Produced.with(S, L));
        dropped.toStream().to("out-filter-not", Produced.with(S, L));
        return b.build();
    }

    static Topology filterThenGroup(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("in", Consumed.with(S, S));
        KTable<String, String> kept = materialized
                ? table.filter((k, v) -> v.equalsIgnoreCase("accept"),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("pt-filter-group-store"))
                : table.filter((k, v) -> v.equalsIgnoreCase("accept"));
        kept.groupBy(KeyValue::pair, Grouped.with(S, S)).count().toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology mapValues(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("in", Consumed.with(S, S));
        KTable<String, Long> mapped = materialized
                ? table.mapValues(v -> Long.valueOf(v),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pt-map-values").withValueSerde(L))
                : table.mapValues(v -> Long.valueOf(v));
        mapped.toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology sourceTable(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, Long> table = materialized
                ? b.table("in", Consumed.with(S, L),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("pt-source-store"))
                : b.table("in", Consumed.with(S, L));
        table.toStream().to("out", Produced.with(S, L));
        return b.build();
    }
}
