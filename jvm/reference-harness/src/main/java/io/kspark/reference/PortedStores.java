package io.kspark.reference;

import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/** Java twins of tests/catalog/scenarios/ported_stores.py (Kafka Streams 4.1 store features). */
final class PortedStores {
    private static final Serde<String> S = Serdes.String();

    private PortedStores() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("pst_read_only_store", PortedStores::readOnlyStore);
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
}
