import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.TimestampLtz;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * e2e/bench's kafka+bridge baseline: what a sink job between a Kafka broker and Fluss does. A
 * Kafka consumer (kafka-clients, default settings, no group: every partition assigned) reads the
 * bench topic from its current end, parses each JSON record into the bench row (Jackson's
 * streaming parser, the columns of rows.go by name) and appends it with the Fluss AppendWriter
 * (default settings).
 *
 * <p>Protocol on stdout, one JSON line each: {"ready": true} once the consumer is positioned and
 * the table opened; {"warm": W} once the first W records (the warm-up) are appended and flushed;
 * then after W + ROWS records and a flush that returned (every row acknowledged, so readable):
 * {"rows": ROWS, "end_unix_ms": ms, "p50_ms": ms, "p99_ms": ms}, where the latencies run from a
 * measured record's Kafka timestamp (the producer's send time) to its append's acknowledgement.
 * It then waits for stdin to close before it exits, so its caller can read its CPU time. On
 * failure one line on stderr and exit 1.
 *
 * <p>Usage: Bridge KAFKA_BOOTSTRAP TOPIC PARTITIONS FLUSS_BOOTSTRAP DATABASE TABLE WARMUP ROWS TIMEOUT_MS
 */
public final class Bridge {
    static final JsonFactory JSON = new JsonFactory();

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println("usage: Bridge KAFKA_BOOTSTRAP TOPIC PARTITIONS FLUSS_BOOTSTRAP DATABASE TABLE WARMUP ROWS TIMEOUT_MS");
            System.exit(2);
        }
        try {
            run(args);
        } catch (Exception e) {
            System.err.println("Bridge: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        // The clients' threads must not keep the JVM alive.
        System.exit(0);
    }

    static void run(String[] args) throws Exception {
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long warmup = Long.parseLong(args[6]);
        long rows = Long.parseLong(args[7]);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[8]));

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "ferry-bench-bridge");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[3]);

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
                Connection conn = ConnectionFactory.createConnection(conf);
                Table table = conn.getTable(TablePath.of(args[4], args[5]))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            consumer.assign(tps);
            consumer.seekToEnd(tps);
            for (TopicPartition tp : tps) {
                consumer.position(tp); // resolves the end now, before the producer starts
            }
            AppendWriter writer = table.newAppend().createWriter();
            System.out.println("{\"ready\": true}");
            if (warmup == 0) {
                System.out.println("{\"warm\": 0}");
            }
            System.out.flush();

            AtomicLong failed = new AtomicLong();
            AtomicReference<Throwable> firstError = new AtomicReference<>();
            long[] latencies = new long[(int) rows];
            long seen = 0;
            long total = warmup + rows;
            while (seen < total) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("timed out after " + seen + " of " + total + " records");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    GenericRow row = parse(r.value());
                    long i = seen - warmup; // index among the measured records, negative in the warm-up
                    long sent = r.timestamp();
                    writer.append(row).whenComplete((res, err) -> {
                        if (err != null) {
                            failed.incrementAndGet();
                            firstError.compareAndSet(null, err);
                        } else if (i >= 0) {
                            latencies[(int) i] = System.currentTimeMillis() - sent;
                        }
                    });
                    seen++;
                    if (seen == warmup) {
                        writer.flush();
                        check(failed, firstError);
                        System.out.printf("{\"warm\": %d}%n", warmup);
                        System.out.flush();
                    }
                }
            }
            writer.flush();
            Instant end = Instant.now();
            check(failed, firstError);
            Arrays.sort(latencies);
            System.out.printf("{\"rows\": %d, \"end_unix_ms\": %.3f, \"p50_ms\": %d, \"p99_ms\": %d}%n", rows,
                    end.getEpochSecond() * 1e3 + end.getNano() / 1e6, rank(latencies, 0.50), rank(latencies, 0.99));
            System.out.flush();
            // Stay alive until the caller, which reads this process's CPU time, closes stdin.
            while (System.in.read() >= 0) {
            }
        }
    }

    static void check(AtomicLong failed, AtomicReference<Throwable> firstError) {
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " appends failed", firstError.get());
        }
    }

    /** Nearest-rank q-quantile of sorted xs. */
    static long rank(long[] xs, double q) {
        if (xs.length == 0) {
            return 0;
        }
        int r = (int) Math.ceil(q * xs.length) - 1;
        return xs[Math.min(Math.max(r, 0), xs.length - 1)];
    }

    /** The bench row a JSON record names (rows.go's appendRow), field by field. */
    static GenericRow parse(byte[] value) throws IOException {
        GenericRow row = new GenericRow(10);
        try (JsonParser p = JSON.createParser(value)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("record is not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                if (p.nextToken() == JsonToken.VALUE_NULL) {
                    continue;
                }
                switch (field) {
                    case "id": row.setField(0, p.getLongValue()); break;
                    case "qty": row.setField(1, p.getIntValue()); break;
                    case "price": row.setField(2, p.getDoubleValue()); break;
                    case "flag": row.setField(3, p.getBooleanValue()); break;
                    case "name": row.setField(4, BinaryString.fromString(p.getText())); break;
                    case "category": row.setField(5, BinaryString.fromString(p.getText())); break;
                    case "ts": row.setField(6, TimestampLtz.fromEpochMillis(Instant.parse(p.getText()).toEpochMilli())); break;
                    case "amount": row.setField(7, Decimal.fromBigDecimal(new BigDecimal(p.getText()), 10, 2)); break;
                    case "payload": row.setField(8, p.getBinaryValue()); break;
                    case "day": row.setField(9, (int) LocalDate.parse(p.getText()).toEpochDay()); break;
                    default: throw new IOException("unknown field " + field);
                }
            }
        }
        if (row.isNullAt(0)) {
            throw new IOException("record without id");
        }
        return row;
    }
}
