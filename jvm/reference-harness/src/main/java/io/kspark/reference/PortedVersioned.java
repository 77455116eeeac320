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
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/** Java twins of tests/catalog/scenarios/ported_versioned.py (versioned stores and tables). */
final class PortedVersioned {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final Duration RETENTION = Duration.ofMillis(100);
    private static final ValueJoiner<String, String, String> JOINER = (v1, v2) -> v1 + "+" + v2;

    private PortedVersioned() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("versioned_source", PortedVersioned::versionedSource);
        m.put("versioned_table_join_and_group", PortedVersioned::versionedTableJoinAndGroup);
        m.put("pv_st_join", () -> streamVersionedTable(false, null, "pv-st-join-store"));
        m.put("pv_st_join_grace", () -> streamVersionedTable(false, 10L, "pv-st-grace-store"));
        m.put("pv_st_left_join_grace", () -> streamVersionedTable(true, 10L, "pv-st-left-grace-store"));
        m.put("pv_papi_store", PortedVersioned::papiVersionedStore);
    }

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> versioned(String store) {
        return Materialized.as(Stores.persistentVersionedKeyValueStore(store, RETENTION));
    }

    static Topology versionedSource() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("t", Consumed.with(S, S), versioned("pv-source-store"));
        table.toStream().to("out", Produced.with(S, S));
        table.filter((k, v) -> !v.startsWith("x")).toStream().to("filtered", Produced.with(S, S));
        return b.build();
    }

    static Topology versionedTableJoinAndGroup() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> left = b.table("l", Consumed.with(S, S), versioned("pv-left-store"));
        KTable<String, String> right = b.table("r", Consumed.with(S, S), versioned("pv-right-store"));
        left.join(right, JOINER).toStream().to("out", Produced.with(S, S));
        left.groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S)).count().toStream()
            .to("counts", Produced.with(S, L));
        return b.build();
    }

    static Topology streamVersionedTable(boolean left, Long grace, String store) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> stream = b.stream("s", Consumed.with(S, S));
        KTable<String, String> table = b.table("t", Consumed.with(S, S), versioned(store));
        Joined<String, String, String> joined = Joined.with(S, S, S);
        if (grace != null) {
            joined = joined.withGracePeriod(Duration.ofMillis(grace));
        }
        KStream<String, String> out = left ? stream.leftJoin(table, JOINER, joined) : stream.join(table, JOINER, joined);
        out.to("out", Produced.with(S, S));
        return b.build();
    }

    /** Puts each record at its timestamp and forwards the put code with get(key, ts - 5) and get(key). */
    static final class AsOfProcessor implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private VersionedKeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore("pv-papi-store");
        }

        private static String show(VersionedRecord<String> r) {
            return r == null ? "null" : r.value() + "@" + r.timestamp();
        }

        @Override
        public void process(Record<String, String> record) {
            String out;
            if ("del".equals(record.value())) {
                out = "deleted:" + show(store.delete(record.key(), record.timestamp()));
            } else {
                long code = store.put(record.key(), record.value(), record.timestamp());
                out = code + "|" + show(store.get(record.key(), record.timestamp() - 5)) + "|" + show(store.get(record.key()));
            }
            context.forward(record.withValue(out));
        }
    }

    static Topology papiVersionedStore() {
        Topology topo = new Topology();
        topo.addSource("pv-src", S.deserializer(), S.deserializer(), "in");
        topo.addProcessor("pv-asof", AsOfProcessor::new, "pv-src");
        topo.addStateStore(
            Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore("pv-papi-store", RETENTION), S, S),
            "pv-asof");
        topo.addSink("pv-sink", "out", S.serializer(), S.serializer(), "pv-asof");
        return topo;
    }
}
