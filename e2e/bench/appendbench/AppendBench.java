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

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Java side of appendbench: appends the benchmark rows with the official Fluss AppendWriter
 * and reports the time from the first append until flush() returned, i.e. until every row was
 * acknowledged. JVM start, connecting and the table lookup are outside the measurement, and a
 * warm-up pass into another table runs first so the JIT has compiled the write path.
 *
 * <p>Row i is the same function of i as in appendbench's Go code (rows.go); keep them in step.
 *
 * <p>Usage: AppendBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS [KEY=VALUE ...]
 * (the KEY=VALUE pairs are Fluss client options). Prints one JSON line:
 * {"rows": N, "elapsed_ms": ms}.
 */
public final class AppendBench {
    static final long TS_BASE = 1_700_000_000_000L;

    public static void main(String[] args) throws Exception {
        if (args.length < 6) {
            System.err.println("usage: AppendBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS [KEY=VALUE ...]");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        for (int i = 6; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("appendbench java: option " + args[i] + " is not KEY=VALUE");
                System.exit(2);
            }
            conf.setString(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String db = args[1];
        long rows = Long.parseLong(args[3]);
        long warmup = Long.parseLong(args[5]);
        try (Connection conn = ConnectionFactory.createConnection(conf)) {
            if (warmup > 0) {
                try (Table t = conn.getTable(TablePath.of(db, args[4]))) {
                    write(t, warmup);
                }
            }
            try (Table t = conn.getTable(TablePath.of(db, args[2]))) {
                long nanos = write(t, rows);
                System.out.printf("{\"rows\": %d, \"elapsed_ms\": %.3f}%n", rows, nanos / 1e6);
            }
        }
    }

    /** Appends rows 0..n-1 and returns the nanoseconds until all were acknowledged. */
    static long write(Table table, long n) throws Exception {
        AppendWriter writer = table.newAppend().createWriter();
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        long start = System.nanoTime();
        for (long i = 0; i < n; i++) {
            // No future is kept: a callback counts failures, flush() waits for all.
            writer.append(row(i)).whenComplete((r, err) -> {
                if (err != null) {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, err);
                }
            });
        }
        writer.flush();
        long elapsed = System.nanoTime() - start;
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " appends failed", firstError.get());
        }
        return elapsed;
    }

    static GenericRow row(long i) {
        GenericRow r = new GenericRow(10);
        r.setField(0, i);
        r.setField(1, (int) (i % 1000));
        r.setField(2, i * 0.25);
        r.setField(3, i % 2 == 0);
        r.setField(4, i % 10 == 0 ? null : BinaryString.fromString("name-" + i));
        r.setField(5, BinaryString.fromString("cat-" + (i % 8)));
        r.setField(6, TimestampLtz.fromEpochMillis(TS_BASE + i));
        r.setField(7, Decimal.fromUnscaledLong(i % 1_000_000, 10, 2));
        byte[] payload = new byte[16];
        putLE(payload, 0, i);
        putLE(payload, 8, i * 31);
        r.setField(8, payload);
        r.setField(9, (int) (19000 + i % 365));
        return r;
    }

    static void putLE(byte[] b, int off, long v) {
        for (int k = 0; k < 8; k++) {
            b[off + k] = (byte) (v >>> (8 * k));
        }
    }
}
