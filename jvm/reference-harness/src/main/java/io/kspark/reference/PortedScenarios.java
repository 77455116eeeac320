package io.kspark.reference;

import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.streams.Topology;

/**
 * Topologies of the catalog scenarios ported from Kafka Streams' own tests (tests/catalog/scenarios/ported_*.py),
 * written call for call as on the Python side so that generated names agree.
 */
final class PortedScenarios {
    private PortedScenarios() {}

    static void register(Map<String, Supplier<Topology>> m) {
        PortedWindows.register(m);
        PortedSliding.register(m);
        PortedSessions.register(m);
        PortedSuppress.register(m);
        PortedJoins.register(m);
        PortedTables.register(m);
        PortedForeignKeyJoins.register(m);
        PortedCogroup.register(m);
        PortedTransformValues.register(m);
        PortedVersioned.register(m);
        PortedStores.register(m);
        RocksDBScans.register(m);
    }
}
