package io.kspark.reference;

import java.time.Duration;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.Stores;

/** Java twins of tests/catalog/scenarios/ported_stores.py (Kafka Streams 4.1 store features). */
final class PortedStores {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();
    private static final Duration VERSIONED_RETENTION = Duration.ofMillis(100);
    private static final ValueJoiner<String, String, String> FK_JOINER = (v1, v2) -> "(" + v1 + "," + v2 + ")";

    private PortedStores() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("pst_read_only_store", PortedStores::readOnlyStore);
        m.put("pst_lru_papi", PortedStores::lruPapi);
        m.put("pst_lru_dsl", PortedStores::lruDsl);
        m.put("pst_store_type_rocks_db", () -> storeTypeSliding("pst-type-rocks", Materialized.StoreType.ROCKS_DB));
        m.put("pst_store_type_in_memory", () -> storeTypeSliding("pst-type-mem", Materialized.StoreType.IN_MEMORY));
        m.put("pst_stream_joined_in_memory", PortedStores::streamJoinedInMemory);
        m.put("pst_stream_joined_suppliers", PortedStores::streamJoinedSuppliers);
        m.put("pst_fk_versioned", () -> fkVersioned(false, true, true, "pst-fk"));
        m.put("pst_fk_versioned_left", () -> fkVersioned(true, true, false, "pst-fkl"));
        m.put("pst_fk_versioned_right", () -> fkVersioned(true, false, true, "pst-fkr"));
    }

    static final class StoreUpdater implements Processor<String, String, Void, Void> {
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<Void, Void> context) {
            store = context.getStateStore("pst-ro-store");
        }

        @Override
        public void process(Record<String, String> record) {
            store.put(record.key(), record.value());
        }
    }

    static final class StoreReader implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("pst-ro-store");
        }

        @Override
        public void process(Record<String, String> record) {
            context.forward(record.withValue(record.value() + " -- " + store.get(record.key())));
        }
    }

    static Topology readOnlyStore() {
        Topology topo = new Topology();
        topo.addReadOnlyStateStore(
            Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("pst-ro-store"), S, S),
            "pst-ro-source",
            null,
            S.deserializer(),
            S.deserializer(),
            "store-topic",
            "pst-ro-updater",
            StoreUpdater::new);
        topo.addSource("pst-ro-input", S.deserializer(), S.deserializer(), "in");
        topo.addProcessor("pst-ro-reader", StoreReader::new, "pst-ro-input");
        topo.connectProcessorAndStateStores("pst-ro-reader", "pst-ro-store");
        topo.addSink("pst-ro-sink", "out", S.serializer(), S.serializer(), "pst-ro-reader");
        return topo;
    }

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> tableStore(String name, boolean versioned) {
        if (versioned) {
            return Materialized.as(Stores.persistentVersionedKeyValueStore(name, VERSIONED_RETENTION));
        }
        return Materialized.as(name);
    }

    static Topology fkVersioned(boolean leftJoin, boolean leftVersioned, boolean rightVersioned, String prefix) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> lt = b.table("l", Consumed.with(S, S), tableStore(prefix + "-left", leftVersioned));
        KTable<String, String> rt = b.table("r", Consumed.with(S, S), tableStore(prefix + "-right", rightVersioned));
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> m =
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(null, S).withCachingDisabled();
        Function<String, String> fk = v -> v.split("\\|")[1];
        KTable<String, String> joined = leftJoin ? lt.leftJoin(rt, fk, FK_JOINER, m) : lt.join(rt, fk, FK_JOINER, m);
        joined.toStream().to("out", Produced.with(S, S));
        return b.build();
    }

    static final class LruCounter implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(ProcessorContext<String, Long> context) {
            this.context = context;
            store = context.getStateStore("pst-lru-counts");
        }

        @Override
        public void process(Record<String, String> record) {
            Long count = store.get(record.key());
            count = count == null ? 1L : count + 1;
            store.put(record.key(), count);
            context.forward(record.withValue(count));
        }
    }

    static Topology lruPapi() {
        Topology topo = new Topology();
        topo.addSource("pst-lru-src", S.deserializer(), S.deserializer(), "in");
        topo.addProcessor("pst-lru-count", LruCounter::new, "pst-lru-src");
        topo.addStateStore(Stores.keyValueStoreBuilder(Stores.lruMap("pst-lru-counts", 2), S, L), "pst-lru-count");
        topo.addSink("pst-lru-sink", "out", S.serializer(), L.serializer(), "pst-lru-count");
        return topo;
    }

    static Topology lruDsl() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, S)).groupByKey()
            .count(Materialized.<String, Long>as(Stores.lruMap("pst-lru-dsl", 2)))
            .toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology storeTypeSliding(String store, Materialized.StoreType type) {
        StreamsBuilder b = new StreamsBuilder();
        Materialized<String, String, WindowStore<Bytes, byte[]>> m =
            Materialized.<String, String, WindowStore<Bytes, byte[]>>as(store).withValueSerde(S).withStoreType(type);
        b.stream("in", Consumed.with(S, S))
            .groupByKey(Grouped.with(S, S))
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(() -> "0", (k, v, agg) -> agg + "+" + v, m)
            .toStream()
            .to("out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10), S));
        return b.build();
    }

    static Topology streamJoinedInMemory() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("a", Consumed.with(S, S));
        KStream<String, String> right = b.stream("b", Consumed.with(S, S));
        StreamJoined<String, String, String> joined =
            StreamJoined.with(S, S, S).withDslStoreSuppliers(BuiltInDslStoreSuppliers.IN_MEMORY);
        left.outerJoin(right, (v1, v2) -> v1 + "+" + v2,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)), joined)
            .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology streamJoinedSuppliers() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> left = b.stream("a", Consumed.with(S, S));
        KStream<String, String> right = b.stream("b", Consumed.with(S, S));
        StreamJoined<String, String, String> joined = StreamJoined.with(S, S, S)
            .withThisStoreSupplier(Stores.inMemoryWindowStore(
                "pst-this-window", Duration.ofMillis(25), Duration.ofMillis(20), true))
            .withOtherStoreSupplier(Stores.persistentWindowStore(
                "pst-other-window", Duration.ofMillis(25), Duration.ofMillis(20), true));
        left.leftJoin(right, (v1, v2) -> v1 + "+" + v2,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)), joined)
            .to("out", Produced.with(S, S));
        return b.build();
    }
}
