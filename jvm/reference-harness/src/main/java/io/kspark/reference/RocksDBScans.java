package io.kspark.reference;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.WindowStore;

/** Java twins of tests/catalog/scenarios/rocksdb_scans.py (scans over several keys of RocksDB stores). */
final class RocksDBScans {
    private static final Serde<String> S = Serdes.String();
    private static final Duration RETENTION = Duration.ofMillis(120_000);

    private RocksDBScans() {}

    static void register(Map<String, Supplier<Topology>> m) {
        m.put("rdb_scans_across_keys", RocksDBScans::scans);
    }

    private static String show(KeyValueIterator<Windowed<String>, String> it) {
        List<String> parts = new ArrayList<>();
        try (it) {
            while (it.hasNext()) {
                KeyValue<Windowed<String>, String> kv = it.next();
                parts.add(kv.key.key() + "@" + kv.key.window().start() + "/" + kv.key.window().end() + "=" + kv.value);
            }
        }
        return String.join(",", parts);
    }

    static final class SessionScanner implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private SessionStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("rdb-scan-sessions");
        }

        @Override
        public void process(Record<String, String> record) {
            long start = record.timestamp() - Long.parseLong(record.value());
            store.put(new Windowed<>(record.key(), new SessionWindow(start, record.timestamp())), record.value());
            String forward = show(store.fetch("a", "z"));
            String bounded = show(store.findSessions("a", "z", 995L, 61_000L));
            context.forward(record.withValue(forward + " | " + bounded));
        }
    }

    static final class WindowScanner implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;
        private WindowStore<String, String> store;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            store = context.getStateStore("rdb-scan-windows");
        }

        @Override
        public void process(Record<String, String> record) {
            store.put(record.key(), record.value(), record.timestamp() - Long.parseLong(record.value()));
            String forward = show(store.fetch("a", "z", 0L, 1_000_000L));
            String backward = show(store.backwardFetch("a", "z", 0L, 1_000_000L));
            context.forward(record.withValue(forward + " | " + backward));
        }
    }

    static Topology scans() {
        Topology topo = new Topology();
        topo.addSource("rdb-scan-src", S.deserializer(), S.deserializer(), "in");
        topo.addProcessor("rdb-scan-sessions-proc", SessionScanner::new, "rdb-scan-src");
        topo.addProcessor("rdb-scan-windows-proc", WindowScanner::new, "rdb-scan-src");
        topo.addStateStore(
            Stores.sessionStoreBuilder(Stores.persistentSessionStore("rdb-scan-sessions", RETENTION), S, S)
                .withCachingEnabled(),
            "rdb-scan-sessions-proc");
        topo.addStateStore(
            Stores.windowStoreBuilder(
                    Stores.persistentWindowStore("rdb-scan-windows", RETENTION, Duration.ofMillis(10), false), S, S)
                .withCachingEnabled(),
            "rdb-scan-windows-proc");
        topo.addSink("rdb-scan-sessions-sink", "sessions", S.serializer(), S.serializer(), "rdb-scan-sessions-proc");
        topo.addSink("rdb-scan-windows-sink", "windows", S.serializer(), S.serializer(), "rdb-scan-windows-proc");
        return topo;
    }
}
