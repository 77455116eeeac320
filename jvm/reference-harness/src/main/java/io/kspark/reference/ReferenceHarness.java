package io.kspark.reference;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.SessionWindowedDeserializer;
import org.apache.kafka.streams.kstream.TimeWindowedDeserializer;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs the scenarios named in a JSON file (written by tests/catalog/test_java.py) on Java Kafka Streams'
 * TopologyTestDriver and prints, as JSON lines: each scenario's describe() text, every output record read
 * after each input step (per output topic, in read order), and the dropped-records total at the end.
 */
public final class ReferenceHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ReferenceHarness() {}

    public static void main(String[] args) throws Exception {
        JsonNode root = JSON.readTree(new File(args[0]));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Map<String, Supplier<Topology>> topologies = Scenarios.all();
        for (JsonNode scenario : root) {
            String name = scenario.get("name").asText();
            String topologyName = scenario.get("topology").asText();
            Supplier<Topology> factory = topologies.get(topologyName);
            ObjectNode head = JSON.createObjectNode();
            head.put("scenario", name);
            if (factory == null) {
                head.put("error", "no Java topology named " + topologyName);
                out.println(JSON.writeValueAsString(head));
                continue;
            }
            try {
                run(name, factory.get(), scenario, out);
            } catch (Exception e) {
                head.put("error", e.toString());
                out.println(JSON.writeValueAsString(head));
            }
        }
    }

    private static void run(String name, Topology topology, JsonNode scenario, PrintStream out) throws Exception {
        ObjectNode describe = JSON.createObjectNode();
        describe.put("scenario", name);
        describe.put("describe", topology.describe().toString());
        out.println(JSON.writeValueAsString(describe));

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "ref");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        Iterator<Map.Entry<String, JsonNode>> config = scenario.get("config").fields();
        while (config.hasNext()) {
            Map.Entry<String, JsonNode> e = config.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(0))) {
            Map<String, TestInputTopic<Object, Object>> inputs = new LinkedHashMap<>();
            Iterator<Map.Entry<String, JsonNode>> in = scenario.get("inputs").fields();
            while (in.hasNext()) {
                Map.Entry<String, JsonNode> e = in.next();
                inputs.put(e.getKey(), driver.createInputTopic(
                        e.getKey(), serializer(e.getValue().get(0).asText()),
                        serializer(e.getValue().get(1).asText())));
            }
            Map<String, TestOutputTopic<Object, Object>> outputs = new LinkedHashMap<>();
            Map<String, String> outputKeyKinds = new LinkedHashMap<>();
            Iterator<Map.Entry<String, JsonNode>> o = scenario.get("outputs").fields();
            while (o.hasNext()) {
                Map.Entry<String, JsonNode> e = o.next();
                outputKeyKinds.put(e.getKey(), e.getValue().get(0).asText());
                outputs.put(e.getKey(), driver.createOutputTopic(
                        e.getKey(), deserializer(e.getValue().get(0).asText()),
                        deserializer(e.getValue().get(1).asText())));
            }
            int step = 0;
            for (JsonNode s : scenario.get("steps")) {
                if (s.has("wall")) {
                    driver.advanceWallClockTime(Duration.ofMillis(s.get("wall").asLong()));
                } else {
                    String topic = s.get("pipe").asText();
                    JsonNode kinds = scenario.get("inputs").get(topic);
                    Object key = value(s.get("key"), kinds.get(0).asText());
                    Object value = value(s.get("value"), kinds.get(1).asText());
                    inputs.get(topic).pipeInput(key, value, s.get("ts").asLong());
                }
                for (Map.Entry<String, TestOutputTopic<Object, Object>> e : outputs.entrySet()) {
                    for (TestRecord<Object, Object> r : e.getValue().readRecordsToList()) {
                        ObjectNode line = JSON.createObjectNode();
                        line.put("scenario", name);
                        line.put("step", step);
                        line.put("topic", e.getKey());
                        line.set("key", JSON.valueToTree(render(r.key())));
                        line.set("value", JSON.valueToTree(render(r.value())));
                        line.put("timestamp", r.timestamp());
                        out.println(JSON.writeValueAsString(line));
                    }
                }
                step++;
            }
            double dropped = 0;
            for (Map.Entry<MetricName, ? extends Metric> m : driver.metrics().entrySet()) {
                if (m.getKey().name().equals("dropped-records-total")
                        && m.getKey().group().equals("stream-task-metrics")) {
                    dropped += ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
            ObjectNode end = JSON.createObjectNode();
            end.put("scenario", name);
            end.put("dropped", dropped);
            out.println(JSON.writeValueAsString(end));
        }
    }

    private static Object render(Object o) {
        if (o instanceof Windowed) {
            Windowed<?> w = (Windowed<?>) o;
            return w.key() + "@" + w.window().start() + "/" + w.window().end();
        }
        return o;
    }

    private static Object value(JsonNode node, String kind) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (kind.equals("json")) {
            return node;
        }
        return kind.equals("long") ? (Object) node.asLong() : node.asText();
    }

    @SuppressWarnings("unchecked")
    private static Serializer<Object> serializer(String kind) {
        switch (kind) {
            case "string": return (Serializer<Object>) (Serializer<?>) Serdes.String().serializer();
            case "long": return (Serializer<Object>) (Serializer<?>) Serdes.Long().serializer();
            case "json": return (Serializer<Object>) (Serializer<?>) ConformanceScenarios.jsonSerializer();
            default: throw new IllegalArgumentException("unknown input serde kind " + kind);
        }
    }

    @SuppressWarnings("unchecked")
    private static Deserializer<Object> deserializer(String kind) {
        if (kind.equals("string")) {
            return (Deserializer<Object>) (Deserializer<?>) Serdes.String().deserializer();
        }
        if (kind.equals("long")) {
            return (Deserializer<Object>) (Deserializer<?>) Serdes.Long().deserializer();
        }
        if (kind.equals("json")) {
            return (Deserializer<Object>) (Deserializer<?>) ConformanceScenarios.jsonDeserializer();
        }
        if (kind.equals("session:string")) {
            return (Deserializer<Object>) (Deserializer<?>)
                    new SessionWindowedDeserializer<>(Serdes.String().deserializer());
        }
        if (kind.startsWith("window:")) {
            // window:<size>:string
            String[] parts = kind.split(":");
            return (Deserializer<Object>) (Deserializer<?>)
                    new TimeWindowedDeserializer<>(Serdes.String().deserializer(), Long.parseLong(parts[1]));
        }
        throw new IllegalArgumentException("unknown output serde kind " + kind);
    }
}
