import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.writer.UpsertWriter;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TablePath;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * e2e/bench's primary-key writer: upserts the bench rows (AppendBench.row, the same values) into
 * a primary-key table (PRIMARY KEY (id)) with the official Fluss UpsertWriter, default settings,
 * and reports the time from the first upsert until flush() returned. As in AppendBench, a
 * warm-up pass into another table of the same shape runs first in the same JVM.
 *
 * <p>Usage: UpsertBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS. Prints one JSON
 * line: {"rows": N, "elapsed_ms": ms}.
 */
public final class UpsertBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: UpsertBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
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
        // The client's threads must not keep the JVM alive.
        System.exit(0);
    }

    /** Upserts rows 0..n-1 and returns the nanoseconds until all were acknowledged. */
    static long write(Table table, long n) throws Exception {
        UpsertWriter writer = table.newUpsert().createWriter();
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        long start = System.nanoTime();
        for (long i = 0; i < n; i++) {
            writer.upsert(AppendBench.row(i)).whenComplete((r, err) -> {
                if (err != null) {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, err);
                }
            });
        }
        writer.flush();
        long elapsed = System.nanoTime() - start;
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " upserts failed", firstError.get());
        }
        return elapsed;
    }
}
