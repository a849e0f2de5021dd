import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.PartitionInfo;
import org.apache.fluss.metadata.TableBucket;
import org.apache.fluss.metadata.TablePath;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads every partition of a partitioned log table back with the official Fluss client, for
 * services/fluss's real-cluster partition test. The table's first column must be a BIGINT.
 *
 * <pre>
 * BOOTSTRAP DB TABLE N TIMEOUT_MS   N records: "PARTITION_NAME\tBUCKET\tFIRST_COLUMN"
 * </pre>
 */
public final class PartitionReadBack {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        TablePath path = TablePath.of(args[1], args[2]);
        long want = Long.parseLong(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Admin admin = conn.getAdmin();
                Table table = conn.getTable(path)) {
            int buckets = table.getTableInfo().getNumBuckets();
            List<PartitionInfo> partitions = admin.listPartitionInfos(path).get();
            Map<Long, String> names = new HashMap<>();
            try (LogScanner scanner = table.newScan().createLogScanner()) {
                for (PartitionInfo p : partitions) {
                    names.put(p.getPartitionId(), p.getPartitionName());
                    for (int b = 0; b < buckets; b++) {
                        scanner.subscribeFromBeginning(p.getPartitionId(), b);
                    }
                }
                long got = 0;
                while (got < want) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException(got + " records, expected " + want);
                    }
                    ScanRecords records = scanner.poll(Duration.ofMillis(500));
                    for (TableBucket tb : records.buckets()) {
                        for (ScanRecord r : records.records(tb)) {
                            out.println(
                                    names.get(tb.getPartitionId())
                                            + "\t"
                                            + tb.getBucket()
                                            + "\t"
                                            + r.getRow().getLong(0));
                            got++;
                        }
                    }
                }
            }
        }
        out.flush();
        // The client leaves non-daemon threads behind.
        Runtime.getRuntime().halt(0);
    }
}
