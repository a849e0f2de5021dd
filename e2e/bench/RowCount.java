import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.admin.OffsetSpec;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * e2e/bench's row counter: for each named log table (not partitioned), the sum over its buckets
 * of the latest offset, i.e. how many rows it holds, from Fluss's own ListOffsets through the
 * official client. Each table is retried until every bucket answers (a new table's buckets may
 * not have a leader yet) or the deadline passes, so the same call also waits for new tables.
 *
 * <p>Usage: RowCount BOOTSTRAP DATABASE TIMEOUT_MS TABLE... Prints one JSON object,
 * {"TABLE": rows, ...}; on failure one line on stderr and exit 1.
 */
public final class RowCount {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: RowCount BOOTSTRAP DATABASE TIMEOUT_MS TABLE...");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
        StringBuilder out = new StringBuilder("{");
        try (Connection conn = ConnectionFactory.createConnection(conf)) {
            Admin admin = conn.getAdmin();
            for (int i = 3; i < args.length; i++) {
                TablePath path = TablePath.of(args[1], args[i]);
                long rows = count(admin, path, deadline);
                if (i > 3) {
                    out.append(", ");
                }
                out.append('"').append(args[i]).append("\": ").append(rows);
            }
        } catch (Exception e) {
            System.err.println("RowCount: " + e);
            System.exit(1);
        }
        System.out.println(out.append('}'));
        // The client's threads must not keep the JVM alive.
        System.exit(0);
    }

    static long count(Admin admin, TablePath path, long deadline) throws Exception {
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                TableInfo info = admin.getTableInfo(path).get(5, TimeUnit.SECONDS);
                if (info.isPartitioned()) {
                    throw new IllegalArgumentException(path + " is partitioned");
                }
                List<Integer> buckets = new ArrayList<>();
                for (int b = 0; b < info.getNumBuckets(); b++) {
                    buckets.add(b);
                }
                Map<Integer, Long> latest =
                        admin.listOffsets(path, buckets, new OffsetSpec.LatestSpec()).all().get(5, TimeUnit.SECONDS);
                if (latest.size() != buckets.size()) {
                    throw new IllegalStateException(path + ": ListOffsets answered " + latest.size() + " of " + buckets.size() + " buckets");
                }
                long rows = 0;
                for (long o : latest.values()) {
                    rows += o;
                }
                return rows;
            } catch (IllegalArgumentException e) {
                throw e;
            } catch (Exception e) {
                last = e;
                Thread.sleep(200);
            }
        }
        throw new IllegalStateException("no row count for " + path + " before the deadline", last);
    }
}
