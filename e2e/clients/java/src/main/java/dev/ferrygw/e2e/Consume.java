package dev.ferrygw.e2e;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java consume runner (see e2e/clients/README.md): reads records with the unmodified
 * {@link KafkaConsumer} and prints one JSON line per record as it is delivered. Without --group
 * the partitions are assigned and sought explicitly (no group.id, so no group coordinator is
 * involved); with --group the consumer subscribes as a member of that group. Auto-commit is off
 * in both; --commit commits the printed records' offsets with commitSync, at the end and for the
 * partitions a rebalance revokes. --topic-regex subscribes
 * to a {@link Pattern} and prints each record's topic.
 */
public final class Consume {
  private static final int EXIT_OK = 0;
  private static final int EXIT_FAILED = 1;
  private static final int EXIT_USAGE = 2;
  private static final ObjectMapper JSON = new ObjectMapper();

  private Consume() {}

  /** Parsed flags; null means "not given". */
  private static final class Opts {
    final Connection conn = new Connection();
    String topic;
    Pattern topicRegex;
    Integer metadataMaxAgeMs;
    int count = -1;
    Integer partition;
    String from = "earliest";
    Long fromOffset;
    String group;
    boolean commit;
    double timeoutSeconds = 60;
  }

  public static void main(String[] args) throws Exception {
    Opts o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("java runner: " + e.getMessage());
      System.exit(EXIT_USAGE);
      return;
    }
    System.exit(run(o));
  }

  private static Opts parse(String[] args) {
    if (args.length == 0 || !args[0].equals("consume")) {
      throw new IllegalArgumentException("usage: consume --bootstrap H:P --topic T --count N [flags]");
    }
    Opts o = new Opts();
    for (int i = 1; i < args.length; i += 2) {
      if (args[i].equals("--commit")) { // the one flag without a value
        o.commit = true;
        i--;
        continue;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " needs a value");
      }
      String v = args[i + 1];
      if (o.conn.set(args[i], v)) {
        continue;
      }
      switch (args[i]) {
        case "--topic" -> o.topic = v;
        case "--topic-regex" -> o.topicRegex = Pattern.compile(v);
        case "--metadata-max-age-ms" -> o.metadataMaxAgeMs = number("--metadata-max-age-ms", v);
        case "--count" -> o.count = number("--count", v);
        case "--partition" -> o.partition = number("--partition", v);
        case "--from" -> {
          o.from = v;
          if (!v.equals("earliest") && !v.equals("latest")) {
            try {
              o.fromOffset = Long.parseLong(v);
            } catch (NumberFormatException e) {
              throw new IllegalArgumentException("--from must be earliest, latest or an offset, got " + v);
            }
          }
        }
        case "--group" -> o.group = v;
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
    if ((o.topic == null) == (o.topicRegex == null)) {
      throw new IllegalArgumentException("exactly one of --topic and --topic-regex is required");
    }
    if (o.topicRegex != null && o.group == null) {
      throw new IllegalArgumentException("--topic-regex needs --group");
    }
    if (o.count < 1) {
      throw new IllegalArgumentException("--count must be >= 1");
    }
    if (o.fromOffset != null && o.fromOffset < 0) {
      throw new IllegalArgumentException("--from offset must be >= 0");
    }
    if (o.commit && o.group == null) {
      throw new IllegalArgumentException("--commit needs --group");
    }
    if (o.group != null && (o.partition != null || o.fromOffset != null)) {
      throw new IllegalArgumentException("--partition and --from OFFSET are for group-less runs");
    }
    return o;
  }

  private static int number(String flag, String v) {
    try {
      int n = Integer.parseInt(v);
      if (n >= 0) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(flag + " must be a number >= 0, got " + v);
  }

  private static int run(Opts o) throws Exception {
    Properties p = new Properties();
    o.conn.configure(p);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    if (o.metadataMaxAgeMs != null) {
      p.put("metadata.max.age.ms", o.metadataMaxAgeMs.toString());
    }
    if (o.group != null) {
      p.put("group.id", o.group);
      p.put("auto.offset.reset", o.from);
    }
    long deadline = System.nanoTime() + (long) (o.timeoutSeconds * 1e9);
    int[] printed = {0};
    // The deadline watchdog: poll, partitionsFor and commitSync have timeouts of their own, longer
    // than the run's deadline; when it passes, what was printed stands and the JVM stops.
    Thread watchdog = new Thread(() -> {
      try {
        Thread.sleep(Math.max(0, (deadline - System.nanoTime()) / 1_000_000));
      } catch (InterruptedException e) {
        return; // the run finished in time
      }
      synchronized (printed) {
        System.out.flush();
        System.err.println("java runner: read " + printed[0] + " of " + o.count + " records before the deadline ("
            + o.timeoutSeconds + "s)");
        Runtime.getRuntime().halt(EXIT_FAILED);
      }
    }, "deadline");
    watchdog.setDaemon(true);
    watchdog.start();

    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
    // With --commit, what was printed of a partition a rebalance takes away is committed first, so
    // that whoever reads it next (this member included) starts after it.
    ConsumerRebalanceListener onRevoke = new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
        Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
        for (TopicPartition tp : revoked) {
          OffsetAndMetadata off = next.remove(tp);
          if (off != null) {
            done.put(tp, off);
          }
        }
        if (o.commit && !done.isEmpty()) {
          consumer.commitSync(done);
        }
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> assigned) {}
    };
    try {
      if (o.topicRegex != null) {
        consumer.subscribe(o.topicRegex, onRevoke);
      } else if (o.group != null) {
        consumer.subscribe(List.of(o.topic), onRevoke);
      } else {
        List<TopicPartition> tps = new ArrayList<>();
        if (o.partition != null) {
          tps.add(new TopicPartition(o.topic, o.partition));
        } else {
          for (PartitionInfo pi : consumer.partitionsFor(o.topic, Duration.ofNanos(deadline - System.nanoTime()))) {
            tps.add(new TopicPartition(o.topic, pi.partition()));
          }
          if (tps.isEmpty()) {
            System.err.println("java runner: topic " + o.topic + " has no partitions");
            return EXIT_FAILED;
          }
        }
        consumer.assign(tps);
        if (o.fromOffset != null) {
          tps.forEach(tp -> consumer.seek(tp, o.fromOffset));
        } else if (o.from.equals("latest")) {
          consumer.seekToEnd(tps);
        } else {
          consumer.seekToBeginning(tps);
        }
      }
      while (printed[0] < o.count) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          synchronized (printed) {
            if (printed[0] == o.count) {
              break;
            }
            System.out.println(line(r, o.topicRegex != null));
            System.out.flush();
            printed[0]++;
          }
          next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
      }
      if (o.commit) {
        consumer.commitSync(next);
      }
      watchdog.interrupt(); // done in time: closing may take longer
    } catch (Exception e) {
      System.err.println("java runner: " + e);
      return EXIT_FAILED;
    } finally {
      consumer.close(); // leaves the group; commits nothing with auto-commit off
    }
    return EXIT_OK;
  }

  private static String line(ConsumerRecord<byte[], byte[]> r, boolean withTopic) {
    ObjectNode n = JSON.createObjectNode();
    if (withTopic) {
      n.put("topic", r.topic());
    }
    n.put("partition", r.partition());
    n.put("offset", r.offset());
    bytes(n, "key", r.key());
    bytes(n, "value", r.value());
    ArrayNode hs = n.putArray("headers");
    for (Header h : r.headers()) {
      ArrayNode pair = hs.addArray().add(h.key());
      String text = h.value() == null ? null : utf8(h.value());
      if (h.value() == null) {
        pair.addNull();
      } else if (text != null) {
        pair.add(text);
      } else {
        pair.addNull().add(Base64.getEncoder().encodeToString(h.value()));
      }
    }
    n.put("timestamp_ms", r.timestamp());
    return n.toString();
  }

  /** Writes name as text, null, or (bytes that are not UTF-8) name_b64 as base64. */
  private static void bytes(ObjectNode n, String name, byte[] b) {
    String text = b == null ? null : utf8(b);
    if (b == null) {
      n.putNull(name);
    } else if (text != null) {
      n.put(name, text);
    } else {
      n.put(name + "_b64", Base64.getEncoder().encodeToString(b));
    }
  }

  /** b as text, or null when it is not valid UTF-8. */
  private static String utf8(byte[] b) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }
}
