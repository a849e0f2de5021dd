import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TableBucket;
import org.apache.fluss.metadata.TablePath;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * e2e/bench's consume side on Fluss itself: the official Fluss LogScanner (default client
 * settings, no projection) subscribes every bucket of a log table from the beginning and polls
 * until it has read ROWS rows; the time runs from the first poll until the ROWS-th row was
 * returned. JVM start, connecting and the table lookup are outside the measurement, and a
 * warm-up scan of WARMUP_ROWS rows (of WARMUP_TABLE, with its own scanner) runs first in the
 * same JVM so the JIT has compiled the read path.
 *
 * <p>Every row's first column (the bench rows' BIGINT id) is read, so the rows are decoded, not
 * only counted, and each bucket's offsets must follow each other from 0 (nothing skipped or
 * read twice).
 *
 * <p>Usage: ScanBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS TIMEOUT_MS. Prints
 * one JSON line: {"rows": N, "elapsed_ms": ms, "first_row_ms": ms} (first_row_ms: from the first
 * poll until the first row came back); on failure one line on stderr and exit 1.
 */
public final class ScanBench {
    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: ScanBench BOOTSTRAP DATABASE TABLE ROWS WARMUP_TABLE WARMUP_ROWS TIMEOUT_MS");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        String db = args[1];
        long rows = Long.parseLong(args[3]);
        long warmup = Long.parseLong(args[5]);
        long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[6]));
        try (Connection conn = ConnectionFactory.createConnection(conf)) {
            if (warmup > 0) {
                scan(conn, TablePath.of(db, args[4]), warmup, timeoutNanos);
            }
            long[] nanos = scan(conn, TablePath.of(db, args[2]), rows, timeoutNanos);
            System.out.printf("{\"rows\": %d, \"elapsed_ms\": %.3f, \"first_row_ms\": %.3f}%n", rows, nanos[0] / 1e6, nanos[1] / 1e6);
        } catch (Exception e) {
            System.err.println("ScanBench: " + e);
            System.exit(1);
        }
        // The client's threads must not keep the JVM alive.
        System.exit(0);
    }

    /**
     * Reads n rows from the beginning of every bucket; returns the nanoseconds it took and those
     * until the first row.
     */
    static long[] scan(Connection conn, TablePath path, long n, long timeoutNanos) throws Exception {
        try (Table table = conn.getTable(path); LogScanner scanner = table.newScan().createLogScanner()) {
            int buckets = table.getTableInfo().getNumBuckets();
            for (int b = 0; b < buckets; b++) {
                scanner.subscribeFromBeginning(b);
            }
            Map<TableBucket, Long> next = new HashMap<>();
            long count = 0;
            long ids = 0;
            long start = System.nanoTime();
            long deadline = start + timeoutNanos;
            long end = 0;
            long first = 0;
            while (count < n) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(path + ": " + count + " of " + n + " rows before the deadline");
                }
                ScanRecords records = scanner.poll(Duration.ofMillis(500));
                if (first == 0 && !records.isEmpty()) {
                    first = System.nanoTime();
                }
                for (TableBucket tb : records.buckets()) {
                    for (ScanRecord r : records.records(tb)) {
                        long want = next.getOrDefault(tb, 0L);
                        if (r.logOffset() != want) {
                            throw new IllegalStateException(tb + ": offset " + r.logOffset() + ", want " + want);
                        }
                        next.put(tb, want + 1);
                        if (count < n) {
                            ids += r.getRow().getLong(0);
                            count++;
                        }
                    }
                }
                if (count >= n) {
                    end = System.nanoTime();
                }
            }
            if (ids < 0) {
                throw new IllegalStateException(path + ": negative ids");
            }
            return new long[] {end - start, first - start};
        }
    }
}
