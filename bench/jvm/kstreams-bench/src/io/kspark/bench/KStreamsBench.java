package io.kspark.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * The benchmark workloads on Java Kafka Streams 4.1.1 (bench/run.py, system "kstreams").
 *
 * <p>Workloads W1-W4 (bench/run.py); S1 and S2 of bench/state_at_scale.py are W2 and W4 (S2 marks its start
 * at the table's first record). Args: workload bootstrap input output applicationId stateDir threads commitIntervalMs [table
 * [processingGuarantee]] (table "" when there is none; guarantee at_least_once by default). Under
 * exactly_once_v2 the producer's transaction.timeout.ms is Kafka Streams' 10 s default, raised to twice
 * the commit interval when that is longer (a 10 s commit interval would otherwise let a stateless
 * task's transaction, open from the first write after a commit to the next commit, reach the timeout).
 * Runs until a line "stop" (or EOF) arrives on stdin, then prints
 * {@code RESULT {"first_input_ms": ...}}: the wall-clock time the first input record was processed.
 */
public final class KStreamsBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final AtomicLong FIRST = new AtomicLong();

  private static void seen() {
    if (FIRST.get() == 0) {
      FIRST.compareAndSet(0, System.currentTimeMillis());
    }
  }

  private static JsonNode parse(byte[] value) {
    try {
      return JSON.readTree(value);
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  private static byte[] write(JsonNode node) {
    try {
      return JSON.writeValueAsBytes(node);
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  /** Prints when each store partition's restore began and ended (bench/state_at_scale.py reads it). */
  private static final class RestoreTimes implements StateRestoreListener {
    @Override
    public void onRestoreStart(TopicPartition tp, String store, long startOffset, long endOffset) {
      say("RESTORE {\"event\": \"start\", \"store\": \"" + store + "\", \"partition\": " + tp.partition()
          + ", \"from\": " + startOffset + ", \"to\": " + endOffset + ", \"ms\": "
          + System.currentTimeMillis() + "}");
    }

    @Override
    public void onBatchRestored(TopicPartition tp, String store, long batchEndOffset, long numRestored) {}

    @Override
    public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
      say("RESTORE {\"event\": \"end\", \"store\": \"" + store + "\", \"partition\": " + tp.partition()
          + ", \"records\": " + totalRestored + ", \"ms\": " + System.currentTimeMillis() + "}");
    }

    private static synchronized void say(String line) {
      System.out.println(line);
      System.out.flush();
    }
  }

  public static void main(String[] args) throws Exception {
    String workload = args[0];
    String output = args[3];
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[4]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args[6]);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args[7]);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    String guarantee = args.length > 9 && !args[9].isEmpty() ? args[9] : StreamsConfig.AT_LEAST_ONCE;
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    if (guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2)) {
      long timeout = Math.max(10_000L, 2 * Long.parseLong(args[7]));
      props.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), (int) timeout);
    }

    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, byte[]> in =
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.ByteArray())).peek((k, v) -> seen());
    switch (workload) {
      case "W1" ->
          in.mapValues(KStreamsBench::parse)
              .filter((k, v) -> v.get("amount").asLong() >= 50)
              .mapValues(
                  v -> {
                    ObjectNode out = JSON.createObjectNode();
                    out.put("id", v.get("id").asLong());
                    out.put("user", v.get("user").asText());
                    out.put("score", v.get("amount").asLong() * 2);
                    return write(out);
                  })
              .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
      case "W2" ->
          in.groupByKey().count().toStream().to(output, Produced.with(Serdes.String(), Serdes.Long()));
      case "W3" ->
          in.groupByKey()
              .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(30)))
              .count()
              .toStream()
              .map((wk, c) -> KeyValue.pair(wk.key() + "@" + wk.window().start(), c))
              .to(output, Produced.with(Serdes.String(), Serdes.Long()));
      case "W4", "S2" -> {
        // S2 (bench/state_at_scale.py) is W4 against a large table: its start is the table's first
        // record, marked by the table's timestamp extractor (the record's own timestamp), since loading
        // the table is part of the work measured there; W4's start stays the first event.
        Consumed<String, byte[]> table = Consumed.with(Serdes.String(), Serdes.ByteArray());
        if (workload.equals("S2")) {
          table =
              table.withTimestampExtractor(
                  (record, partitionTime) -> {
                    seen();
                    return record.timestamp();
                  });
        }
        KTable<String, byte[]> users = builder.table(args[8], table);
        in.join(
                users,
                (v, u) -> {
                  JsonNode event = parse(v);
                  JsonNode user = parse(u);
                  ObjectNode out = JSON.createObjectNode();
                  out.put("id", event.get("id").asLong());
                  out.put("amount", event.get("amount").asLong());
                  out.put("tier", user.get("tier").asText());
                  return write(out);
                })
            .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
      }
      default -> throw new IllegalArgumentException("unknown workload " + workload);
    }

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setGlobalStateRestoreListener(new RestoreTimes());
    streams.start();
    System.out.println("READY");
    System.out.flush();
    BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = stdin.readLine()) != null && !line.trim().equals("stop")) {
      if (line.trim().equals("first")) {
        // the start time without stopping (bench/state_at_scale.py kills -9 afterwards)
        System.out.println("FIRST {\"first_input_ms\": " + FIRST.get() + "}");
        System.out.flush();
      }
    }
    streams.close(Duration.ofSeconds(30));
    System.out.println("RESULT {\"first_input_ms\": " + FIRST.get() + "}");
    System.out.flush();
  }
}
