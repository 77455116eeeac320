package io.kspark.reference;

import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;

/** Java twins of tests/catalog/scenarios/ported_fk_joins.py (foreign-key table-table joins, KIP-213). */
final class PortedForeignKeyJoins {
    private static final Serde<String> S = Serdes.String();
    private static final ValueJoiner<String, String, String> JOINER = (v1, v2) -> "(" + v1 + "," + v2 + ")";
    private static final ValueJoiner<String, String, String> REJOINER = (v1, v2) -> "rejoin(" + v1 + "," + v2 + ")";

    private PortedForeignKeyJoins() {}

    static void register(Map<String, Supplier<Topology>> m) {
        pair(m, "left_delete", true, false, false, "bar", null);
        pair(m, "left_delete_rejoin", true, false, true, "bar", null);
        pair(m, "right_delete", true, false, false, "bar", null);
        pair(m, "right_delete_unmaterialized", false, false, false, "bar", null);
        pair(m, "tombstone_non_joining", true, false, false, "bar", null);
        pair(m, "no_tombstone_non_existing", true, false, false, "bar", null);
        pair(m, "non_matching_fk", true, false, false, "bar", null);
        pair(m, "unsubscribe", true, false, false, "bar", null);
        m.put("pfk_null_fk_left", () -> fkJoin(true, "pfk_null_fk_left-store", false, false, "null", null));
        m.put("pfk_null_fk_inner", () -> fkJoin(false, "pfk_null_fk_inner-store", false, false, "null", null));
        m.put("pfk_old_new_fk_differ",
                () -> fkJoin(true, "pfk_old_new_fk_differ-store", false, false, "returnNull", null));
        pair(m, "churn_cached", true, true, false, "bar", null);
        pair(m, "churn_unmaterialized", false, false, false, "bar", null);
        pair(m, "named_with_key", false, true, false, "withKey", "pfk-named");
    }

    private static void pair(Map<String, Supplier<Topology>> m, String base, boolean store, boolean caching,
                             boolean rejoin, String extractor, String joinName) {
        for (boolean left : new boolean[] {false, true}) {
            String kind = left ? "left" : "inner";
            String name = "pfk_" + base + "_" + kind;
            String storeName = store ? name + "-store" : null;
            String named = joinName == null ? null : joinName + "-" + kind;
            m.put(name, () -> fkJoin(left, storeName, caching, rejoin, extractor, named));
        }
    }

    private static Function<String, String> extractor(String kind) {
        switch (kind) {
            case "bar":
                return value -> value.split("\\|")[1];
            case "null":
                return value -> null;
            case "returnNull":
                return value -> {
                    String fk = value.split("\\|")[1];
                    return fk.equals("returnNull") ? null : fk;
                };
            default:
                throw new IllegalArgumentException(kind);
        }
    }

    static Topology fkJoin(boolean leftJoin, String store, boolean caching, boolean rejoin, String extractor,
                           String joinName) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> left = b.table("l", Consumed.with(S, S));
        KTable<String, String> right = b.table("r", Consumed.with(S, S));
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> m = store == null
                ? Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(null, S)
                : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store).withValueSerde(S);
        if (!caching) {
            m = m.withCachingDisabled();
        }
        KTable<String, String> joined;
        if (extractor.equals("withKey")) {
            BiFunction<String, String, String> fk = (key, value) -> value.contains("|") ? value.split("\\|")[1] : key;
            TableJoined<String, String> tj = TableJoined.as(joinName);
            joined = leftJoin ? left.leftJoin(right, fk, JOINER, tj, m) : left.join(right, fk, JOINER, tj, m);
        } else if (joinName != null) {
            TableJoined<String, String> tj = TableJoined.as(joinName);
            Function<String, String> fk = extractor(extractor);
            joined = leftJoin ? left.leftJoin(right, fk, JOINER, tj, m) : left.join(right, fk, JOINER, tj, m);
        } else {
            Function<String, String> fk = extractor(extractor);
            joined = leftJoin ? left.leftJoin(right, fk, JOINER, m) : left.join(right, fk, JOINER, m);
        }
        joined.toStream().to("out", Produced.with(S, S));
        if (rejoin) {
            Materialized<String, String, KeyValueStore<Bytes, byte[]>> rm = store == null
                    ? Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(null, S)
                    : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store + "-rejoin")
                            .withValueSerde(S).withCachingDisabled();
            (leftJoin ? joined.leftJoin(left, REJOINER, rm) : joined.join(left, REJOINER, rm))
                    .toStream().to("rejoin", Produced.with(S, S));
        }
        return b.build();
    }
}
