import org.apache.fluss.bucketing.FlussBucketingFunction;
import org.apache.fluss.client.table.getter.PartitionGetter;
import org.apache.fluss.config.AutoPartitionTimeUnit;
import org.apache.fluss.compression.ArrowCompressionInfo;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.config.TableConfig;
import org.apache.fluss.compression.ArrowCompressionType;
import org.apache.fluss.memory.AbstractPagedOutputView;
import org.apache.fluss.memory.UnmanagedPagedOutputView;
import org.apache.fluss.metadata.KvFormat;
import org.apache.fluss.record.ChangeType;
import org.apache.fluss.record.KvRecordBatchBuilder;
import org.apache.fluss.record.MemoryLogRecordsArrowBuilder;
import org.apache.fluss.record.bytesview.BytesView;
import org.apache.fluss.record.bytesview.MultiBytesView;
import org.apache.fluss.row.InternalRow;
import org.apache.fluss.row.arrow.ArrowReader;
import org.apache.fluss.row.arrow.ArrowWriter;
import org.apache.fluss.row.arrow.ArrowWriterPool;
import org.apache.fluss.row.columnar.ColumnVector;
import org.apache.fluss.row.BinaryRow;
import org.apache.fluss.row.encode.KeyEncoder;
import org.apache.fluss.row.encode.RowEncoder;
import org.apache.fluss.shaded.arrow.org.apache.arrow.memory.BufferAllocator;
import org.apache.fluss.shaded.arrow.org.apache.arrow.memory.RootAllocator;
import org.apache.fluss.shaded.arrow.org.apache.arrow.vector.FieldVector;
import org.apache.fluss.shaded.arrow.org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.fluss.shaded.arrow.org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.fluss.shaded.arrow.org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.fluss.shaded.netty4.io.netty.buffer.ByteBuf;
import org.apache.fluss.types.DataField;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DataTypeParser;
import org.apache.fluss.types.RowType;
import org.apache.fluss.utils.ArrowUtils;
import org.apache.fluss.utils.PartitionUtils;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.TimeZone;

/**
 * Golden-fixture generator for Ferry's Go log batch and bucketing code. It runs Fluss 0.9.1's own
 * classes (the ones the Java client uses when it writes) on rows the Go test sends as an Arrow IPC
 * stream, so both sides see exactly the same values.
 *
 * <p>Protocol: one request per stdin line, fields separated by single spaces, one answer line per
 * request ("ok ..." or "err message").
 *
 * <pre>
 * batch COLUMNS SCHEMA_ID NONE|LZ4_FRAME|ZSTD LEVEL WRITER_ID BATCH_SEQUENCE MAGIC CHANGES IPC
 *   -> ok BATCH                      one log record batch as MemoryLogRecordsArrowBuilder builds it
 * bucket COLUMNS KEYS NUM_BUCKETS IPC
 *   -> ok KEY:BUCKET KEY:BUCKET ...  CompactedKeyEncoder bytes and FlussBucketingFunction bucket
 * schema COLUMNS
 *   -> ok IPC                        ArrowUtils.toArrowSchema as an IPC stream without batches
 * kv COLUMNS KEYS SCHEMA_ID WRITER_ID BATCH_SEQUENCE DELETES IPC
 *   -> ok BATCH                      one KV record batch as the UpsertWriter's KvWriteBatch builds it
 * partition COLUMNS KEYS IPC
 *   -> ok .NAME .NAME ...            PartitionGetter's partition name of every row, base64 after a
 *                                    "." (the name may be empty)
 * autotime UNIT ZONE EPOCH_MILLIS OFFSET...
 *   -> ok VALUE VALUE ...            PartitionUtils.generateAutoPartitionTime at each offset from
 *                                    the instant in java.util.TimeZone ZONE
 * </pre>
 *
 * COLUMNS is base64 of "name\tTYPE" lines in Fluss type syntax, KEYS comma-separated column names,
 * IPC base64 of an Arrow IPC stream with one record batch, BATCH and KEY base64. CHANGES is "-"
 * for an append-only batch (what ArrowLogWriteBatch builds) or one ChangeType byte value digit
 * per row. DELETES is "-" when every row is an upsert, or one digit per row, 1 for a delete of
 * the row's key (UpsertWriter.delete) and 0 for an upsert; KEYS are then the primary key.
 */
public final class FlussGolden {
    private static final Base64.Decoder B64D = Base64.getDecoder();
    private static final Base64.Encoder B64E = Base64.getEncoder();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        // Neither the allocator nor the pool is closed: the process halts when stdin ends, and
        // closing would only add leak checks over readers this short-lived tool never recycles.
        BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
        ArrowWriterPool pool = new ArrowWriterPool(allocator);
        {
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            long tableId = 0;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) {
                    continue;
                }
                String[] f = line.split(" ");
                try {
                    switch (f[0]) {
                        case "batch":
                            out.println("ok " + batch(f, allocator, pool, ++tableId));
                            break;
                        case "bucket":
                            out.println("ok " + bucket(f, allocator));
                            break;
                        case "schema":
                            out.println("ok " + schema(f, allocator));
                            break;
                        case "kv":
                            out.println("ok " + kv(f, allocator));
                            break;
                        case "partition":
                            out.println("ok " + partition(f, allocator));
                            break;
                        case "autotime":
                            out.println("ok " + autoTime(f));
                            break;
                        default:
                            out.println("err unknown request " + f[0]);
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                    out.println("err " + String.valueOf(e).replace('\n', ' '));
                }
            }
        }
        out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static String batch(String[] f, BufferAllocator allocator, ArrowWriterPool pool, long tableId)
            throws Exception {
        if (f.length != 10) {
            throw new IllegalArgumentException("batch wants 9 fields, got " + (f.length - 1));
        }
        RowType rowType = columns(f[1]);
        int schemaId = Integer.parseInt(f[2]);
        ArrowCompressionType ct = ArrowCompressionType.valueOf(f[3]);
        int level = Integer.parseInt(f[4]);
        long writerId = Long.parseLong(f[5]);
        int sequence = Integer.parseInt(f[6]);
        byte magic = Byte.parseByte(f[7]);
        String changes = f[8];
        boolean appendOnly = changes.equals("-");
        ArrowCompressionInfo compression = new ArrowCompressionInfo(ct, level);

        try (ArrowStreamReader reader =
                new ArrowStreamReader(new ByteArrayInputStream(B64D.decode(f[9])), allocator)) {
            ArrowReader rows = rows(reader, rowType);
            ArrowWriter writer =
                    pool.getOrCreateWriter(tableId, schemaId, 64 << 20, rowType, compression);
            // The public factories fix either the magic (client: CURRENT_LOG_MAGIC_VALUE, i.e. V0)
            // or append-only=false; the private constructor takes both, so every combination
            // goes through the same code the client runs.
            Constructor<MemoryLogRecordsArrowBuilder> ctor =
                    MemoryLogRecordsArrowBuilder.class.getDeclaredConstructor(
                            long.class,
                            int.class,
                            byte.class,
                            ArrowWriter.class,
                            AbstractPagedOutputView.class,
                            boolean.class);
            ctor.setAccessible(true);
            MemoryLogRecordsArrowBuilder builder =
                    ctor.newInstance(
                            0L,
                            schemaId,
                            magic,
                            writer,
                            new UnmanagedPagedOutputView(64 * 1024),
                            appendOnly);
            if (!appendOnly && changes.length() != rows.getRowCount()) {
                throw new IllegalArgumentException(
                        changes.length() + " change types for " + rows.getRowCount() + " rows");
            }
            for (int i = 0; i < rows.getRowCount(); i++) {
                ChangeType change =
                        appendOnly
                                ? ChangeType.APPEND_ONLY
                                : ChangeType.fromByteValue((byte) (changes.charAt(i) - '0'));
                builder.append(change, rows.read(i));
            }
            // The client closes a batch before it learns the writer state, then rebuilds the header.
            builder.close();
            builder.setWriterState(writerId, sequence);
            MultiBytesView view = builder.build();
            ByteBuf buf = view.getByteBuf();
            byte[] bytes = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), bytes);
            buf.release();
            return B64E.encodeToString(bytes);
        }
    }

    private static String bucket(String[] f, BufferAllocator allocator) throws Exception {
        if (f.length != 5) {
            throw new IllegalArgumentException("bucket wants 4 fields, got " + (f.length - 1));
        }
        RowType rowType = columns(f[1]);
        List<String> keys = Arrays.asList(f[2].split(","));
        int numBuckets = Integer.parseInt(f[3]);
        KeyEncoder encoder = KeyEncoder.ofBucketKeyEncoder(rowType, keys, null);
        FlussBucketingFunction function = new FlussBucketingFunction();
        StringBuilder sb = new StringBuilder();
        try (ArrowStreamReader reader =
                new ArrowStreamReader(new ByteArrayInputStream(B64D.decode(f[4])), allocator)) {
            ArrowReader rows = rows(reader, rowType);
            for (int i = 0; i < rows.getRowCount(); i++) {
                InternalRow row = rows.read(i);
                byte[] key = encoder.encodeKey(row);
                if (i > 0) {
                    sb.append(' ');
                }
                sb.append(B64E.encodeToString(key))
                        .append(':')
                        .append(function.bucketing(key, numBuckets));
            }
        }
        return sb.toString();
    }

    private static String partition(String[] f, BufferAllocator allocator) throws Exception {
        if (f.length != 4) {
            throw new IllegalArgumentException("partition wants 3 fields, got " + (f.length - 1));
        }
        RowType rowType = columns(f[1]);
        PartitionGetter getter = new PartitionGetter(rowType, Arrays.asList(f[2].split(",")));
        StringBuilder sb = new StringBuilder();
        try (ArrowStreamReader reader =
                new ArrowStreamReader(new ByteArrayInputStream(B64D.decode(f[3])), allocator)) {
            ArrowReader rows = rows(reader, rowType);
            for (int i = 0; i < rows.getRowCount(); i++) {
                if (i > 0) {
                    sb.append(' ');
                }
                String name = getter.getPartition(rows.read(i));
                sb.append('.').append(B64E.encodeToString(name.getBytes(StandardCharsets.UTF_8)));
            }
        }
        return sb.toString();
    }

    private static String autoTime(String[] f) {
        if (f.length < 5) {
            throw new IllegalArgumentException("autotime wants at least 4 fields, got " + (f.length - 1));
        }
        AutoPartitionTimeUnit unit = AutoPartitionTimeUnit.valueOf(f[1]);
        ZonedDateTime now =
                ZonedDateTime.ofInstant(
                        Instant.ofEpochMilli(Long.parseLong(f[3])),
                        TimeZone.getTimeZone(f[2]).toZoneId());
        StringBuilder sb = new StringBuilder();
        for (int i = 4; i < f.length; i++) {
            if (i > 4) {
                sb.append(' ');
            }
            sb.append(PartitionUtils.generateAutoPartitionTime(now, Integer.parseInt(f[i]), unit));
        }
        return sb.toString();
    }

    private static String kv(String[] f, BufferAllocator allocator) throws Exception {
        if (f.length != 8) {
            throw new IllegalArgumentException("kv wants 7 fields, got " + (f.length - 1));
        }
        RowType rowType = columns(f[1]);
        List<String> keys = Arrays.asList(f[2].split(","));
        int schemaId = Integer.parseInt(f[3]);
        long writerId = Long.parseLong(f[4]);
        int sequence = Integer.parseInt(f[5]);
        String deletes = f[6];
        // The encoders UpsertWriterImpl picks for a table without lake format or kv options.
        KeyEncoder keyEncoder =
                KeyEncoder.ofPrimaryKeyEncoder(
                        rowType, keys, new TableConfig(new Configuration()), true);
        RowEncoder rowEncoder = RowEncoder.create(KvFormat.COMPACTED, rowType);
        InternalRow.FieldGetter[] getters = InternalRow.createFieldGetters(rowType);
        KvRecordBatchBuilder builder =
                KvRecordBatchBuilder.builder(
                        schemaId,
                        Integer.MAX_VALUE,
                        new UnmanagedPagedOutputView(64 * 1024),
                        KvFormat.COMPACTED);
        try (ArrowStreamReader reader =
                new ArrowStreamReader(new ByteArrayInputStream(B64D.decode(f[7])), allocator)) {
            ArrowReader rows = rows(reader, rowType);
            if (!deletes.equals("-") && deletes.length() != rows.getRowCount()) {
                throw new IllegalArgumentException(
                        deletes.length() + " delete flags for " + rows.getRowCount() + " rows");
            }
            for (int i = 0; i < rows.getRowCount(); i++) {
                InternalRow row = rows.read(i);
                byte[] key = keyEncoder.encodeKey(row);
                BinaryRow value = null;
                if (deletes.equals("-") || deletes.charAt(i) == '0') {
                    rowEncoder.startNewRow();
                    for (int c = 0; c < getters.length; c++) {
                        rowEncoder.encodeField(c, getters[c].getFieldOrNull(row));
                    }
                    value = rowEncoder.finishRow();
                }
                builder.append(key, value);
            }
        }
        // As KvWriteBatch: closed first, writer state set when the batch is drained.
        builder.close();
        builder.setWriterState(writerId, sequence);
        BytesView view = builder.build();
        ByteBuf buf = view.getByteBuf();
        byte[] bytes = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), bytes);
        return B64E.encodeToString(bytes);
    }

    private static String schema(String[] f, BufferAllocator allocator) throws Exception {
        if (f.length != 2) {
            throw new IllegalArgumentException("schema wants 1 field, got " + (f.length - 1));
        }
        RowType rowType = columns(f[1]);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (VectorSchemaRoot root =
                        VectorSchemaRoot.create(ArrowUtils.toArrowSchema(rowType), allocator);
                ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
            writer.start();
            writer.end();
        }
        return B64E.encodeToString(bytes.toByteArray());
    }

    private static RowType columns(String b64) {
        String text = new String(B64D.decode(b64), StandardCharsets.UTF_8);
        List<DataField> fields = new ArrayList<>();
        for (String l : text.split("\n")) {
            int tab = l.indexOf('\t');
            if (tab < 0) {
                throw new IllegalArgumentException("column line without tab: " + l);
            }
            DataType t = DataTypeParser.parse(l.substring(tab + 1));
            fields.add(new DataField(l.substring(0, tab), t));
        }
        return new RowType(fields);
    }

    private static ArrowReader rows(ArrowStreamReader reader, RowType rowType) throws Exception {
        if (!reader.loadNextBatch()) {
            throw new IllegalArgumentException("IPC stream has no record batch");
        }
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        List<FieldVector> vectors = root.getFieldVectors();
        if (vectors.size() != rowType.getFieldCount()) {
            throw new IllegalArgumentException(
                    "IPC has " + vectors.size() + " columns, spec " + rowType.getFieldCount());
        }
        ColumnVector[] cols = new ColumnVector[vectors.size()];
        for (int i = 0; i < cols.length; i++) {
            cols[i] = ArrowUtils.createArrowColumnVector(vectors.get(i), rowType.getTypeAt(i));
        }
        return new ArrowReader(cols, root.getRowCount());
    }
}
