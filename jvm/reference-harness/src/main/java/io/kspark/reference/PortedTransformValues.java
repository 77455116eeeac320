package io.kspark.reference;

import java.util.ArrayList;
import java.util.List;
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
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/** Java twins of tests/catalog/scenarios/ported_transform_values.py (KTableTransformValuesTest, processValues). */
final class PortedTransformValues {
    private static final Serde<String> S = Serdes.String();
    private static final Serde<Long> L = Serdes.Long();

    private PortedTransformValues() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("ptv_exclamation", () -> exclamation(false));
        m.put("ptv_exclamation_materialized", () -> exclamation(true));
        m.put("ptv_counting_store", PortedTransformValues::counting);
        m.put("ptv_old_values", () -> oldValues(false));
        m.put("ptv_old_values_materialized", () -> oldValues(true));
        m.put("ptv_join_getter", PortedTransformValues::joinGetter);
        m.put("ppv_process_values_store", PortedTransformValues::processValuesStore);
    }

    private static StoreBuilder<KeyValueStore<String, Long>> store(String name) {
        return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(name), S, L);
    }

    static final class Exclamation implements ValueTransformerWithKey<String, String, String> {
        private final String[] stores;

        Exclamation(String... stores) {
            this.stores = stores;
        }

        @Override
        public void init(ProcessorContext context) {
            List<String> missing = new ArrayList<>();
            for (String s : stores) {
                if (context.getStateStore(s) == null) {
                    missing.add(s);
                }
            }
            if (!missing.isEmpty()) {
                throw new AssertionError("State stores are not accessible: " + missing);
            }
        }

        @Override
        public String transform(String readOnlyKey, String value) {
            return readOnlyKey + "->" + value + "!";
        }

        @Override
        public void close() {}
    }

    static final class Counting implements ValueTransformerWithKey<String, String, String> {
        private KeyValueStore<String, Long> store;

        @Override
        public void init(ProcessorContext context) {
            store = context.getStateStore("ptv-counts");
        }

        @Override
        public String transform(String readOnlyKey, String value) {
            Long old = store.get(readOnlyKey);
            long count = (old == null ? 0L : old) + 1;
            store.put(readOnlyKey, count);
            return value + "#" + count;
        }

        @Override
        public void close() {}
    }

    static final class Length implements ValueTransformerWithKey<String, String, Long> {
        @Override
        public void init(ProcessorContext context) {}

        @Override
        public Long transform(String readOnlyKey, String value) {
            return value == null ? null : (long) value.length();
        }

        @Override
        public void close() {}
    }

    static Topology exclamation(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(store("ptv-a"));
        KTable<String, String> table = b.table("in", Consumed.with(S, S));
        KTable<String, String> result;
        if (materialized) {
            result = table.transformValues(
                    () -> new Exclamation("ptv-a", "ptv-mat"),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("ptv-mat")
                            .withKeySerde(S)
                            .withValueSerde(S),
                    "ptv-a");
        } else {
            b.addStateStore(store("ptv-b"));
            result = table.transformValues(() -> new Exclamation("ptv-a", "ptv-b"), "ptv-a", "ptv-b");
        }
        result.toStream().to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology counting() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(store("ptv-counts"));
        KTable<String, String> table = b.table("in", Consumed.with(S, S));
        table.transformValues(Counting::new, "ptv-counts").toStream().to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology oldValues(boolean materialized) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table("in", Consumed.with(S, S));
        KTable<String, Long> lengths = materialized
                ? table.transformValues(
                        Length::new,
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("ptv-len").withValueSerde(L))
                : table.transformValues(Length::new);
        lengths.groupBy((k, v) -> KeyValue.pair(k, v), Grouped.with(S, L))
                .reduce((a, v) -> a + v, (a, v) -> a - v)
                .mapValues(v -> String.valueOf(v))
                .toStream()
                .to("out", Produced.with(S, S));
        return b.build();
    }

    static Topology joinGetter() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, Long> table = b.table("t", Consumed.with(S, S)).transformValues(Length::new);
        KStream<String, String> stream = b.stream("s", Consumed.with(S, S));
        stream.join(table, (v1, v2) -> v1 + "+" + v2).to("out", Produced.with(S, S));
        return b.build();
    }

    static final class CountingValues implements FixedKeyProcessor<String, String, String> {
        private FixedKeyProcessorContext<String, String> context;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("ppv-counts");
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            Long old = store.get(record.key());
            long count = (old == null ? 0L : old) + 1;
            store.put(record.key(), count);
            context.forward(record.withValue(record.value() + "#" + count));
        }
    }

    static Topology processValuesStore() {
        StreamsBuilder b = new StreamsBuilder();
        b.addStateStore(store("ppv-counts"));
        b.stream("in", Consumed.with(S, S)).processValues(CountingValues::new, "ppv-counts").to("out", Produced.with(S, S));
        return b.build();
    }
}
