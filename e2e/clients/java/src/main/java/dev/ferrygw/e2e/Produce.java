package dev.ferrygw.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java runner of the client harness: reads JSON-lines records from stdin, sends them with the
 * unmodified {@link KafkaProducer} and prints one JSON line per record (see e2e/clients/README.md).
 * Only options named by a flag are set; everything else stays the client's default (acks=all,
 * idempotence on, no compression, built-in partitioner).
 */
public final class Produce {
  private static final int EXIT_OK = 0;
  private static final int EXIT_FAILED = 1;
  private static final int EXIT_USAGE = 2;
  private static final ObjectMapper JSON = new ObjectMapper();

  private Produce() {}

  /** Parsed flags; null means "not given". */
  private static final class Opts {
    final Connection conn = new Connection();
    String topic;
    String acks;
    String compression;
    Integer partition;
    Boolean idempotent;
    String keyField;
    double timeoutSeconds = 60;
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 1 && args[0].equals("check")) {
      // The jar's own version file (what AppInfoParser reads), to report what is installed.
      Properties v = new Properties();
      try (var in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
        if (in != null) {
          v.load(in);
        }
      }
      System.out.println("kafka-clients " + v.getProperty("version", "unknown"));
      return;
    }
    Opts o;
    List<ObjectNode> recs;
    try {
      o = parse(args);
      recs = read(o.keyField);
    } catch (IllegalArgumentException e) {
      System.err.println("java runner: " + e.getMessage());
      System.exit(EXIT_USAGE);
      return;
    }
    System.exit(run(o, recs));
  }

  private static Opts parse(String[] args) {
    if (args.length == 0 || !args[0].equals("produce")) {
      throw new IllegalArgumentException("usage: produce --bootstrap H:P --topic T [flags] < records.jsonl");
    }
    Opts o = new Opts();
    for (int i = 1; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      if (o.conn.set(args[i], v)) {
        continue;
      }
      switch (args[i]) {
        case "--topic" -> o.topic = v;
        case "--acks" -> {
          if (!v.equals("0") && !v.equals("1") && !v.equals("all")) {
            throw new IllegalArgumentException("--acks must be 0, 1 or all, got " + v);
          }
          o.acks = v;
        }
        case "--compression" -> {
          if (!List.of("none", "gzip", "snappy", "lz4", "zstd").contains(v)) {
            throw new IllegalArgumentException("--compression must be none, gzip, snappy, lz4 or zstd, got " + v);
          }
          o.compression = v;
        }
        case "--partition" -> {
          try {
            o.partition = Integer.parseInt(v);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--partition must be a number, got " + v);
          }
          if (o.partition < 0) {
            throw new IllegalArgumentException("--partition must be >= 0, got " + v);
          }
        }
        case "--idempotent" -> {
          if (!v.equals("true") && !v.equals("false")) {
            throw new IllegalArgumentException("--idempotent must be true or false, got " + v);
          }
          o.idempotent = Boolean.parseBoolean(v);
        }
        case "--key-field" -> o.keyField = v;
        case "--timeout" -> {
          try {
            o.timeoutSeconds = Double.parseDouble(v);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--timeout must be seconds, got " + v);
          }
          if (!(o.timeoutSeconds > 0)) {
            throw new IllegalArgumentException("--timeout must be positive, got " + v);
          }
        }
        default -> throw new IllegalArgumentException("unknown flag " + args[i]);
      }
    }
    o.conn.check();
    if (o.topic == null) {
      throw new IllegalArgumentException("--topic is required");
    }
    return o;
  }

  private static List<ObjectNode> read(String keyField) throws Exception {
    List<ObjectNode> out = new ArrayList<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    int n = 0;
    while ((line = in.readLine()) != null) {
      n++;
      if (line.isBlank()) {
        continue;
      }
      JsonNode node;
      try {
        node = JSON.readTree(line);
      } catch (Exception e) {
        throw new IllegalArgumentException("line " + n + ": " + e.getMessage());
      }
      if (!(node instanceof ObjectNode rec) || !(rec.path("value").isTextual() || rec.path("value").isNull())) {
        throw new IllegalArgumentException("line " + n + ": want an object with a string or null value");
      }
      // A tombstone (null value) has no value to take the key from: it keeps its own.
      if (keyField != null && !rec.get("value").isNull()) {
        JsonNode doc;
        try {
          doc = JSON.readTree(rec.get("value").asText());
        } catch (Exception e) {
          throw new IllegalArgumentException("line " + n + ": --key-field " + keyField + ": value is not JSON");
        }
        if (!doc.isObject()) {
          throw new IllegalArgumentException("line " + n + ": --key-field " + keyField + ": value is not a JSON object");
        }
        JsonNode k = doc.get(keyField);
        if (k == null || k.isNull()) {
          rec.putNull("key");
        } else {
          rec.put("key", k.isTextual() ? k.asText() : JSON.writeValueAsString(k));
        }
      }
      out.add(rec);
    }
    return out;
  }

  private static byte[] utf8(JsonNode n) {
    return n == null || n.isNull() ? null : n.asText().getBytes(StandardCharsets.UTF_8);
  }

  private static int run(Opts o, List<ObjectNode> recs) throws Exception {
    Properties p = new Properties();
    o.conn.configure(p);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    if (o.acks != null) {
      p.put(ProducerConfig.ACKS_CONFIG, o.acks);
    }
    if (o.compression != null) {
      p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, o.compression);
    }
    if (o.idempotent != null) {
      p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, o.idempotent.toString());
    }

    String[] lines = new String[recs.size()];
    CountDownLatch done = new CountDownLatch(recs.size());
    long deadline = System.nanoTime() + (long) (o.timeoutSeconds * 1e9);
    // The deadline watchdog: send() may block (metadata, buffer) for up to max.block.ms, longer than
    // the run's deadline; when it passes, report what is missing and stop the JVM.
    Thread watchdog = new Thread(() -> {
      try {
        if (!done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          synchronized (lines) {
            for (int i = 0; i < lines.length; i++) {
              if (lines[i] == null) {
                lines[i] = error(i, "no delivery report before the deadline (" + o.timeoutSeconds + "s)");
              }
            }
            print(lines);
          }
          Runtime.getRuntime().halt(EXIT_FAILED);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "deadline");
    watchdog.setDaemon(true);
    watchdog.start();

    KafkaProducer<byte[], byte[]> created;
    try {
      created = new KafkaProducer<>(p);
    } catch (KafkaException e) {
      // A configuration the client itself refuses (e.g. --idempotent true with --acks 0): every
      // record reports why, as the contract wants, instead of a stack trace.
      String why = e.getCause() != null ? e + ": " + e.getCause() : e.toString();
      for (int i = 0; i < lines.length; i++) {
        lines[i] = error(i, why);
      }
      print(lines);
      return recs.isEmpty() ? EXIT_OK : EXIT_FAILED;
    }
    try (KafkaProducer<byte[], byte[]> producer = created) {
      for (int i = 0; i < recs.size(); i++) {
        ObjectNode r = recs.get(i);
        RecordHeaders headers = new RecordHeaders();
        JsonNode hs = r.get("headers");
        if (hs != null && hs.isObject()) {
          for (Iterator<Map.Entry<String, JsonNode>> it = hs.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> h = it.next();
            headers.add(new RecordHeader(h.getKey(), utf8(h.getValue())));
          }
        }
        JsonNode ts = r.get("timestamp_ms");
        Long timestamp = ts == null || ts.isNull() ? null : ts.asLong();
        ProducerRecord<byte[], byte[]> pr =
            new ProducerRecord<>(o.topic, o.partition, timestamp, utf8(r.get("key")), utf8(r.get("value")), headers);
        final int idx = i;
        try {
          producer.send(pr, (md, err) -> {
            synchronized (lines) {
              lines[idx] = err != null ? error(idx, err.toString())
                  : "{\"index\":" + idx + ",\"partition\":" + md.partition() + ",\"offset\":" + md.offset() + "}";
            }
            done.countDown();
          });
        } catch (Exception e) {
          synchronized (lines) {
            lines[idx] = error(idx, e.toString());
          }
          done.countDown();
        }
      }
      producer.flush();
      done.await();
    }
    synchronized (lines) {
      print(lines);
      for (String l : lines) {
        if (l.contains("\"error\"")) {
          return EXIT_FAILED;
        }
      }
    }
    return EXIT_OK;
  }

  private static String error(int idx, String msg) {
    ObjectNode n = JSON.createObjectNode();
    n.put("index", idx);
    n.put("error", msg);
    return n.toString();
  }

  private static void print(String[] lines) {
    PrintStream out = System.out;
    for (String l : lines) {
      out.println(l);
    }
    out.flush();
  }
}
