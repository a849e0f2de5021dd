import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.lookup.Lookuper;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TableBucket;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.InternalRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.row.TimestampNtz;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/**
 * Reads a primary-key table back with the official Fluss client, for services/fluss's real-cluster
 * KV test. The table's key must be one BIGINT column.
 *
 * <pre>
 * lookup BOOTSTRAP DB TABLE ID...         one line per id: "ID\tROW" or "ID\tabsent"
 * changelog BOOTSTRAP DB TABLE N TIMEOUT_MS   N changelog records: "BUCKET\tOFFSET\tCHANGE\tROW"
 * </pre>
 *
 * ROW is the fields joined by "|": null, BinaryString text, a decimal's plain string, a timestamp
 * as EPOCH_MILLIS.NANO_OF_MILLI, bytes as base64, anything else String.valueOf.
 */
public final class KvReadBack {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[1]);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Table table = conn.getTable(TablePath.of(args[2], args[3]))) {
            TableInfo info = table.getTableInfo();
            InternalRow.FieldGetter[] getters = InternalRow.createFieldGetters(info.getRowType());
            switch (args[0]) {
                case "lookup":
                    Lookuper lookuper = table.newLookup().createLookuper();
                    for (int i = 4; i < args.length; i++) {
                        InternalRow row =
                                lookuper.lookup(GenericRow.of(Long.parseLong(args[i])))
                                        .get()
                                        .getSingletonRow();
                        out.println(args[i] + "\t" + (row == null ? "absent" : format(row, getters)));
                    }
                    break;
                case "changelog":
                    long want = Long.parseLong(args[4]);
                    long deadline = System.currentTimeMillis() + Long.parseLong(args[5]);
                    try (LogScanner scanner = table.newScan().createLogScanner()) {
                        for (int b = 0; b < info.getNumBuckets(); b++) {
                            scanner.subscribeFromBeginning(b);
                        }
                        long got = 0;
                        while (got < want) {
                            if (System.currentTimeMillis() > deadline) {
                                throw new IllegalStateException(
                                        got + " changelog records, expected " + want);
                            }
                            ScanRecords records = scanner.poll(Duration.ofMillis(500));
                            for (TableBucket tb : records.buckets()) {
                                for (ScanRecord r : records.records(tb)) {
                                    out.println(
                                            tb.getBucket()
                                                    + "\t"
                                                    + r.logOffset()
                                                    + "\t"
                                                    + r.getChangeType().shortString()
                                                    + "\t"
                                                    + format(r.getRow(), getters));
                                    got++;
                                }
                            }
                        }
                    }
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[0]);
            }
        }
        out.flush();
        // The client leaves non-daemon threads behind.
        Runtime.getRuntime().halt(0);
    }

    private static String format(InternalRow row, InternalRow.FieldGetter[] getters) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < getters.length; i++) {
            if (i > 0) {
                sb.append('|');
            }
            Object v = getters[i].getFieldOrNull(row);
            if (v instanceof Decimal) {
                sb.append(((Decimal) v).toBigDecimal().toPlainString());
            } else if (v instanceof TimestampNtz) {
                TimestampNtz t = (TimestampNtz) v;
                sb.append(t.getMillisecond()).append('.').append(t.getNanoOfMillisecond());
            } else if (v instanceof TimestampLtz) {
                TimestampLtz t = (TimestampLtz) v;
                sb.append(t.getEpochMillisecond()).append('.').append(t.getNanoOfMillisecond());
            } else if (v instanceof byte[]) {
                sb.append(Base64.getEncoder().encodeToString((byte[]) v));
            } else {
                sb.append(String.valueOf(v));
            }
        }
        return sb.toString();
    }
}
