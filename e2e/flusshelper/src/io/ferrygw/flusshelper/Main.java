package io.ferrygw.flusshelper;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.admin.OffsetSpec;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.client.lookup.LookupResult;
import org.apache.fluss.client.lookup.Lookuper;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.client.table.writer.UpsertWriter;
import org.apache.fluss.cluster.ServerNode;
import org.apache.fluss.cluster.ServerType;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.DatabaseDescriptor;
import org.apache.fluss.metadata.PartitionInfo;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableBucket;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.InternalRow;
import org.apache.fluss.types.RowType;

import java.io.BufferedReader;
import java.io.BufferedOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * flusshelper: an independent Fluss reader/writer built only on the official Java client
 * (org.apache.fluss:fluss-client 0.9.1-incubating). Ferry's Go tests use it to set up tables and to
 * check what Ferry wrote, and it is the reference writer for golden fixtures and benchmarks.
 *
 * <p>Every command prints JSON on stdout. On failure it prints one line "flusshelper: ..." on
 * stderr and exits 1 (2 for command line mistakes).
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    /** Bounds every single admin call so a stuck server fails the command instead of hanging it. */
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);

    static final String USAGE =
            String.join(
                    "\n",
                    "usage: flusshelper COMMAND [flags]   (every command takes --bootstrap HOST:PORT,",
                    "       default $FERRY_TEST_FLUSS_BOOTSTRAP, and repeatable --conf KEY=VALUE client options)",
                    "  wait-ready      [--timeout 60s]      wait until a tablet server is live and metadata works",
                    "  create-database --database DB [--if-not-exists]",
                    "  drop-database   --database DB [--if-exists] [--cascade]",
                    "  create-table    --spec FILE|-        JSON table spec (see TableSpec.java)",
                    "  drop-table      --database DB --table T [--if-exists]",
                    "  list-tables     --database DB",
                    "  table-info      --database DB --table T",
                    "  scan            --database DB --table T [--expect N] [--timeout 30s]",
                    "                  rows (a primary-key table's changelog) from the start of every bucket,",
                    "                  one JSON line each; without --expect it stops at the end offsets seen",
                    "                  when it started",
                    "  write           --database DB --table T [--input FILE|-] [--repeat N]",
                    "                  JSON-lines rows: appended (AppendWriter) to a log table, upserted",
                    "                  (UpsertWriter) to a primary-key table, where {\"$delete\": {key}} deletes;",
                    "                  flush, print a summary",
                    "  lookup          --database DB --table T [--input FILE|-]",
                    "                  point lookups of JSON-lines primary keys (Lookuper), one JSON line each",
                    "  serve           run commands sent as JSON lines on stdin in one JVM (see Serve.java)");

    private Main() {}

    public static void main(String[] args) {
        int code;
        Io.set(new Io(System.out, System.in));
        try {
            code = run(args);
        } catch (UsageException e) {
            System.err.println("flusshelper: " + e.getMessage());
            System.err.println(USAGE);
            code = 2;
        } catch (Throwable e) {
            System.err.println("flusshelper: " + oneLine(e));
            if (System.getenv("FLUSSHELPER_TRACE") != null) {
                e.printStackTrace();
            }
            code = 1;
        }
        System.out.flush();
        // The Fluss client keeps non-daemon threads (netty, metadata refresh); exit explicitly.
        Runtime.getRuntime().halt(code);
    }

    static int run(String[] args) throws Exception {
        if (args.length == 0 || args[0].equals("-h") || args[0].equals("--help") || args[0].equals("help")) {
            if (args.length == 0) {
                throw new UsageException("missing command");
            }
            System.out.println(USAGE);
            return 0;
        }
        String cmd = args[0];
        String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
        switch (cmd) {
            case "wait-ready":
                return waitReady(Flags.parse(cmd, rest, common("timeout"), Set.of()));
            case "create-database":
                return createDatabase(Flags.parse(cmd, rest, common("database"), Set.of("if-not-exists")));
            case "drop-database":
                return dropDatabase(Flags.parse(cmd, rest, common("database"), Set.of("if-exists", "cascade")));
            case "create-table":
                return createTable(Flags.parse(cmd, rest, common("spec"), Set.of()));
            case "drop-table":
                return dropTable(Flags.parse(cmd, rest, common("database", "table"), Set.of("if-exists")));
            case "list-tables":
                return listTables(Flags.parse(cmd, rest, common("database"), Set.of()));
            case "table-info":
                return tableInfo(Flags.parse(cmd, rest, common("database", "table"), Set.of()));
            case "scan":
                return scan(Flags.parse(cmd, rest, common("database", "table", "expect", "timeout"), Set.of()));
            case "serve":
                Flags.parse(cmd, rest, Set.of(), Set.of());
                return Serve.run();
            case "write":
                return write(Flags.parse(cmd, rest, common("database", "table", "input", "repeat"), Set.of()));
            case "lookup":
                return lookup(Flags.parse(cmd, rest, common("database", "table", "input"), Set.of()));
            default:
                throw new UsageException("unknown command \"" + cmd + "\"");
        }
    }

    private static Set<String> common(String... more) {
        Set<String> s = new java.util.HashSet<>(Set.of("bootstrap", "conf"));
        s.addAll(List.of(more));
        return s;
    }

    // ------------------------------------------------------------------ connection

    /**
     * Returns a connection for this command. On the command line it is new and never closed:
     * main() halts the JVM right after the command, and a graceful close would add Netty's
     * two-second quiet period to every call (writes are durable before that point because they
     * wait for every append to be acknowledged). In serve mode connections are shared between
     * requests with the same options; that is safe because getTable always refreshes the table's
     * metadata from the server.
     */
    static Connection connect(Flags f) {
        return connect(f, false);
    }

    /** fresh: a private connection the caller may close (wait-ready probes with these). */
    static Connection connect(Flags f, boolean fresh) {
        String bootstrap = f.get("bootstrap", System.getenv("FERRY_TEST_FLUSS_BOOTSTRAP"));
        if (bootstrap == null || bootstrap.isEmpty()) {
            throw new UsageException("--bootstrap HOST:PORT is required (or set FERRY_TEST_FLUSS_BOOTSTRAP)");
        }
        Map<String, String> conf = new java.util.TreeMap<>();
        conf.put("bootstrap.servers", bootstrap);
        for (String kv : f.all("conf")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new UsageException("--conf wants KEY=VALUE, got \"" + kv + "\"");
            }
            conf.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        Io io = Io.current();
        if (!fresh && io.shared != null) {
            return io.shared.acquire(conf, io);
        }
        Connection conn = ConnectionFactory.createConnection(Configuration.fromMap(conf));
        io.opened(conn);
        return conn;
    }

    static <T> T await(CompletableFuture<T> fut, String what) throws Exception {
        return await(fut, what, CALL_TIMEOUT);
    }

    static <T> T await(CompletableFuture<T> fut, String what, Duration timeout) throws Exception {
        try {
            return fut.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new HelperException(what + ": " + oneLine(e.getCause()), e.getCause());
        } catch (TimeoutException e) {
            fut.cancel(true);
            throw new HelperException(what + ": no answer within " + timeout.toMillis() + "ms");
        }
    }

    private static void print(JsonNode n) throws IOException {
        Io.current().out.println(JSON.writeValueAsString(n));
    }

    // ------------------------------------------------------------------ commands

    private static int waitReady(Flags f) throws Exception {
        Duration timeout = f.getDuration("timeout", Duration.ofSeconds(60));
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "no attempt made";
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new HelperException("Fluss not ready after " + timeout.toMillis() + "ms: " + last);
            }
            Duration callTimeout = Duration.ofNanos(Math.min(left, Duration.ofSeconds(5).toNanos()));
            try (Connection conn = connect(f, true)) {
                Admin admin = conn.getAdmin();
                List<ServerNode> nodes = await(admin.getServerNodes(), "get server nodes", callTimeout);
                boolean tablet = nodes.stream().anyMatch(n -> n.serverType() == ServerType.TABLET_SERVER);
                if (!tablet) {
                    last = "no tablet server registered yet (servers: " + nodes + ")";
                } else {
                    await(admin.listDatabases(), "list databases", callTimeout);
                    ObjectNode out = JSON.createObjectNode();
                    ArrayNode arr = out.putArray("servers");
                    for (ServerNode n : nodes) {
                        ObjectNode o = arr.addObject();
                        o.put("id", n.id());
                        o.put("host", n.host());
                        o.put("port", n.port());
                        o.put("type", n.serverType().name());
                    }
                    print(out);
                    return 0;
                }
            } catch (UsageException e) {
                throw e;
            } catch (Exception e) {
                last = oneLine(e);
            }
            Thread.sleep(Math.max(1, Math.min(500, (deadline - System.nanoTime()) / 1_000_000)));
        }
    }

    private static int createDatabase(Flags f) throws Exception {
        String db = f.require("database");
        {
            Connection conn = connect(f);
            await(
                    conn.getAdmin().createDatabase(db, DatabaseDescriptor.EMPTY, f.has("if-not-exists")),
                    "create database " + db);
        }
        print(JSON.createObjectNode().put("database", db));
        return 0;
    }

    private static int dropDatabase(Flags f) throws Exception {
        String db = f.require("database");
        {
            Connection conn = connect(f);
            await(conn.getAdmin().dropDatabase(db, f.has("if-exists"), f.has("cascade")), "drop database " + db);
        }
        print(JSON.createObjectNode().put("database", db));
        return 0;
    }

    private static int createTable(Flags f) throws Exception {
        String src = f.require("spec");
        JsonNode specJson;
        try (InputStream in = open(src)) {
            specJson = JSON.readTree(in);
        } catch (IOException e) {
            throw new HelperException("read table spec " + src + ": " + oneLine(e), e);
        }
        TableSpec spec = TableSpec.parse(specJson);
        Connection conn = connect(f);
        Admin admin = conn.getAdmin();
        boolean existed = spec.ignoreIfExists && await(admin.tableExists(spec.path), "table exists " + spec.path);
        await(admin.createTable(spec.path, spec.descriptor, spec.ignoreIfExists), "create table " + spec.path);
        TableInfo info = await(admin.getTableInfo(spec.path), "get table info " + spec.path);
        // Fluss 0.9.1's coordinator learns of new tables from a ZooKeeper cache, and when a table is
        // created right after its database the cache can report the table node already filled in,
        // an event the coordinator ignores: the table exists but its buckets never get a leader.
        // So wait for leaders, and re-create the table once if they do not come.
        if (!existed && !info.isPartitioned() && !waitForLeaders(admin, info, Duration.ofSeconds(10))) {
            System.err.println("flusshelper: warning: " + spec.path + " (id " + info.getTableId()
                    + ") got no bucket leader within 10s; re-creating it");
            await(admin.dropTable(spec.path, true), "drop leaderless table " + spec.path);
            await(admin.createTable(spec.path, spec.descriptor, false), "re-create table " + spec.path);
            info = await(admin.getTableInfo(spec.path), "get table info " + spec.path);
            if (!waitForLeaders(admin, info, Duration.ofSeconds(20))) {
                throw new HelperException("table " + spec.path + " created twice, but its buckets never got a leader");
            }
        }
        print(describe(info));
        return 0;
    }

    /** Polls until every bucket of a non-partitioned table has a leader that answers ListOffsets. */
    private static boolean waitForLeaders(Admin admin, TableInfo info, Duration timeout) throws InterruptedException {
        List<Integer> buckets = new ArrayList<>();
        for (int b = 0; b < info.getNumBuckets(); b++) {
            buckets.add(b);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                await(admin.listOffsets(info.getTablePath(), buckets, new OffsetSpec.LatestSpec()).all(),
                        "list offsets", Duration.ofSeconds(2));
                return true;
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                Thread.sleep(100);
            }
        }
        return false;
    }

    private static int dropTable(Flags f) throws Exception {
        TablePath path = TablePath.of(f.require("database"), f.require("table"));
        {
            Connection conn = connect(f);
            await(conn.getAdmin().dropTable(path, f.has("if-exists")), "drop table " + path);
        }
        print(JSON.createObjectNode().put("database", path.getDatabaseName()).put("table", path.getTableName()));
        return 0;
    }

    private static int listTables(Flags f) throws Exception {
        String db = f.require("database");
        {
            Connection conn = connect(f);
            List<String> tables = new ArrayList<>(await(conn.getAdmin().listTables(db), "list tables of " + db));
            tables.sort(String::compareTo);
            ArrayNode arr = JSON.createArrayNode();
            tables.forEach(arr::add);
            print(arr);
        }
        return 0;
    }

    private static int tableInfo(Flags f) throws Exception {
        TablePath path = TablePath.of(f.require("database"), f.require("table"));
        {
            Connection conn = connect(f);
            print(describe(await(conn.getAdmin().getTableInfo(path), "get table info " + path)));
        }
        return 0;
    }

    /** The table facts Go tests compare against: ids, schema, distribution, options. */
    static ObjectNode describe(TableInfo info) {
        ObjectNode o = JSON.createObjectNode();
        o.put("database", info.getTablePath().getDatabaseName());
        o.put("table", info.getTablePath().getTableName());
        o.put("table_id", info.getTableId());
        o.put("schema_id", info.getSchemaId());
        o.put("bucket_count", info.getNumBuckets());
        ArrayNode cols = o.putArray("columns");
        for (Schema.Column c : info.getSchema().getColumns()) {
            ObjectNode co = cols.addObject();
            co.put("name", c.getName());
            co.put("type", c.getDataType().asSerializableString());
            co.put("nullable", c.getDataType().isNullable());
            co.put("id", c.getColumnId());
        }
        info.getPrimaryKeys().forEach(o.putArray("primary_key")::add);
        info.getBucketKeys().forEach(o.putArray("bucket_keys")::add);
        info.getPartitionKeys().forEach(o.putArray("partition_keys")::add);
        ObjectNode props = o.putObject("properties");
        new java.util.TreeMap<>(info.getProperties().toMap()).forEach(props::put);
        ObjectNode custom = o.putObject("custom_properties");
        new java.util.TreeMap<>(info.getCustomProperties().toMap()).forEach(custom::put);
        return o;
    }

    private static int scan(Flags f) throws Exception {
        TablePath path = TablePath.of(f.require("database"), f.require("table"));
        long expect = f.getLong("expect", -1);
        Duration timeout = f.getDuration("timeout", Duration.ofSeconds(30));
        long deadline = System.nanoTime() + timeout.toNanos();
        OutputStream out = new BufferedOutputStream(Io.current().out, 1 << 16);
        JsonGenerator g = JSON.getFactory().createGenerator(out, JsonEncoding.UTF8);
        g.setRootValueSeparator(null);
        try {
            Connection conn = connect(f);
            Table table = conn.getTable(path);
            Admin admin = conn.getAdmin();
            TableInfo info = table.getTableInfo();
            // A primary-key table's log is its changelog (+I, -U, +U, -D): scanned the same way.
            RowType rowType = info.getRowType();
            List<Integer> buckets = new ArrayList<>();
            for (int b = 0; b < info.getNumBuckets(); b++) {
                buckets.add(b);
            }
            // The end offsets right now: without --expect, the scan is complete once every bucket
            // has been read up to its end. ends is fixed; next is the next offset each bucket owes.
            Map<TableBucket, Long> ends = new LinkedHashMap<>();
            Map<TableBucket, Long> next = new HashMap<>();
            LogScanner scanner = table.newScan().createLogScanner();
            if (info.isPartitioned()) {
                for (PartitionInfo p : await(admin.listPartitionInfos(path), "list partitions of " + path)) {
                    Map<Integer, Long> latest =
                            await(
                                    admin.listOffsets(path, p.getPartitionName(), buckets, new OffsetSpec.LatestSpec()).all(),
                                    "list offsets of " + path + " partition " + p.getPartitionName());
                    for (int b : buckets) {
                        scanner.subscribeFromBeginning(p.getPartitionId(), b);
                        ends.put(new TableBucket(info.getTableId(), p.getPartitionId(), b), latest.getOrDefault(b, 0L));
                    }
                }
            } else {
                Map<Integer, Long> latest =
                        await(admin.listOffsets(path, buckets, new OffsetSpec.LatestSpec()).all(), "list offsets of " + path);
                for (int b : buckets) {
                    scanner.subscribeFromBeginning(b);
                    ends.put(new TableBucket(info.getTableId(), b), latest.getOrDefault(b, 0L));
                }
            }
            long count = 0;
            while (expect >= 0 ? count < expect : !reachedEnds(ends, next)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    g.flush();
                    out.flush();
                    throw new HelperException(
                            expect >= 0
                                    ? "scan " + path + ": " + count + " rows, expected " + expect + " within " + timeout.toMillis() + "ms"
                                    : "scan " + path + ": end offsets " + ends.values() + " not reached within " + timeout.toMillis() + "ms after " + count + " rows");
                }
                ScanRecords records = scanner.poll(Duration.ofNanos(Math.min(left, Duration.ofMillis(500).toNanos())));
                for (TableBucket tb : records.buckets()) {
                    for (ScanRecord r : records.records(tb)) {
                        g.writeStartObject();
                        if (tb.getPartitionId() != null) {
                            g.writeNumberField("partition_id", tb.getPartitionId());
                        }
                        g.writeNumberField("bucket", tb.getBucket());
                        g.writeNumberField("offset", r.logOffset());
                        g.writeNumberField("timestamp", r.timestamp());
                        g.writeStringField("change_type", r.getChangeType().shortString());
                        g.writeFieldName("row");
                        RowCodec.writeRow(g, r.getRow(), rowType);
                        g.writeEndObject();
                        g.writeRaw('\n');
                        count++;
                        next.merge(tb, r.logOffset() + 1, Math::max);
                    }
                }
                g.flush();
            }
        } finally {
            g.flush();
            out.flush();
        }
        return 0;
    }

    private static boolean reachedEnds(Map<TableBucket, Long> ends, Map<TableBucket, Long> next) {
        for (Map.Entry<TableBucket, Long> e : ends.entrySet()) {
            if (next.getOrDefault(e.getKey(), 0L) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    /**
     * The key of a delete line in {@code write} input for a primary-key table: {@code {"$delete": {pk columns}}}.
     */
    static final String DELETE_FIELD = "$delete";

    /** One parsed input row of {@code write}: an append/upsert, or a delete of the row's key. */
    private record Change(GenericRow row, boolean delete) {}

    private static int write(Flags f) throws Exception {
        TablePath path = TablePath.of(f.require("database"), f.require("table"));
        long repeat = f.getLong("repeat", 1);
        if (repeat < 1) {
            throw new UsageException("--repeat must be >= 1");
        }
        String src = f.get("input", "-");
        {
            Connection conn = connect(f);
            Table table = conn.getTable(path);
            TableInfo info = table.getTableInfo();
            boolean upsert = info.hasPrimaryKey();
            RowType rowType = info.getRowType();
            // Parse everything first so a bad row fails before anything is written.
            List<Change> changes = new ArrayList<>();
            forEachJsonLine(src, (n, where) -> {
                if (n.isObject() && n.has(DELETE_FIELD) && rowType.getFieldIndex(DELETE_FIELD) < 0) {
                    if (!upsert || n.size() != 1) {
                        throw new HelperException(where + ": " + DELETE_FIELD + " needs a primary-key table and a line of its own");
                    }
                    changes.add(new Change(keyRow(n.get(DELETE_FIELD), info, where), true));
                } else {
                    changes.add(new Change(RowCodec.toRow(n, rowType, where), false));
                }
            });
            // Appends to log tables, upserts and deletes to primary-key tables, with the
            // official writers; both settle every future before the summary is printed.
            AppendWriter appender = upsert ? null : table.newAppend().createWriter();
            UpsertWriter upserter = upsert ? table.newUpsert().createWriter() : null;
            long start = System.nanoTime();
            List<CompletableFuture<?>> pending = new ArrayList<>();
            long written = 0, deletes = 0;
            for (long i = 0; i < repeat; i++) {
                for (Change c : changes) {
                    if (appender != null) {
                        pending.add(appender.append(c.row()));
                    } else if (c.delete()) {
                        pending.add(upserter.delete(c.row()));
                        deletes++;
                    } else {
                        pending.add(upserter.upsert(c.row()));
                    }
                    written++;
                    // Bound memory for large --repeat runs: settle completed futures periodically.
                    if (pending.size() >= 65536) {
                        flush(appender, upserter);
                        settle(pending);
                    }
                }
            }
            flush(appender, upserter);
            settle(pending);
            long elapsedNanos = System.nanoTime() - start;
            ObjectNode o = JSON.createObjectNode();
            o.put("rows", written);
            o.put("deletes", deletes);
            o.put("elapsed_ms", elapsedNanos / 1_000_000.0);
            print(o);
        }
        return 0;
    }

    private static void flush(AppendWriter appender, UpsertWriter upserter) {
        if (appender != null) {
            appender.flush();
        } else {
            upserter.flush();
        }
    }

    /**
     * A row holding only the primary-key columns of obj (which must name each of them and
     * nothing else), the other columns NULL: what UpsertWriter.delete reads the key from.
     */
    private static GenericRow keyRow(JsonNode obj, TableInfo info, String where) {
        RowType rowType = info.getRowType();
        List<String> pk = info.getPrimaryKeys();
        if (obj == null || !obj.isObject() || obj.size() != pk.size()) {
            throw new HelperException(where + ": want a JSON object with exactly the primary key " + pk);
        }
        GenericRow row = new GenericRow(rowType.getFieldCount());
        for (String name : pk) {
            int i = rowType.getFieldIndex(name);
            if (!obj.has(name)) {
                throw new HelperException(where + ": primary-key column \"" + name + "\" missing");
            }
            row.setField(i, RowCodec.toInternal(obj.get(name), rowType.getTypeAt(i), where + "." + name));
        }
        return row;
    }

    /**
     * Point lookups on a primary-key table with the official Lookuper: one input line per key
     * (a JSON object with exactly the primary-key columns), one output line per key in input
     * order: {"key": ..., "found": bool, "row": {...} or null}.
     */
    private static int lookup(Flags f) throws Exception {
        TablePath path = TablePath.of(f.require("database"), f.require("table"));
        String src = f.get("input", "-");
        Connection conn = connect(f);
        Table table = conn.getTable(path);
        TableInfo info = table.getTableInfo();
        if (!info.hasPrimaryKey()) {
            throw new HelperException(path + " has no primary key; lookup needs one");
        }
        RowType rowType = info.getRowType();
        RowType keyType = rowType.project(info.getPrimaryKeys());
        List<JsonNode> keys = new ArrayList<>();
        List<GenericRow> keyRows = new ArrayList<>();
        forEachJsonLine(src, (n, where) -> {
            if (!n.isObject() || n.size() != keyType.getFieldCount()) {
                throw new HelperException(where + ": want exactly the primary key " + info.getPrimaryKeys());
            }
            keys.add(n);
            keyRows.add(RowCodec.toRow(n, keyType, where));
        });
        Lookuper lookuper = table.newLookup().createLookuper();
        List<CompletableFuture<LookupResult>> results = new ArrayList<>();
        for (GenericRow k : keyRows) {
            results.add(lookuper.lookup(k));
        }
        OutputStream out = new BufferedOutputStream(Io.current().out, 1 << 16);
        JsonGenerator g = JSON.getFactory().createGenerator(out, JsonEncoding.UTF8);
        g.setRootValueSeparator(null);
        try {
            for (int i = 0; i < keys.size(); i++) {
                LookupResult res = await(results.get(i), "lookup " + keys.get(i));
                InternalRow row = res.getSingletonRow();
                g.writeStartObject();
                g.writeFieldName("key");
                g.writeTree(keys.get(i));
                g.writeBooleanField("found", row != null);
                g.writeFieldName("row");
                if (row == null) {
                    g.writeNull();
                } else {
                    RowCodec.writeRow(g, row, rowType);
                }
                g.writeEndObject();
                g.writeRaw('\n');
            }
        } finally {
            g.flush();
            out.flush();
        }
        return 0;
    }

    /** What forEachJsonLine calls per line: the parsed JSON and "input line N" for messages. */
    private interface JsonLine {
        void accept(JsonNode n, String where);
    }

    /** Parses every non-blank line of src ("-" is stdin) as JSON, in order; bad JSON fails with its line number. */
    private static void forEachJsonLine(String src, JsonLine each) throws IOException {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(open(src), StandardCharsets.UTF_8))) {
            String line;
            int lineNo = 0;
            while ((line = r.readLine()) != null) {
                lineNo++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode n;
                try {
                    n = JSON.readTree(line);
                } catch (IOException e) {
                    throw new HelperException("input line " + lineNo + ": bad JSON: " + oneLine(e));
                }
                each.accept(n, "input line " + lineNo);
            }
        }
    }

    private static void settle(List<CompletableFuture<?>> pending) throws Exception {
        for (CompletableFuture<?> p : pending) {
            await(p, "write");
        }
        pending.clear();
    }

    // ------------------------------------------------------------------ utilities

    private static InputStream open(String src) throws IOException {
        return src.equals("-") ? Io.current().in : new FileInputStream(src);
    }

    /**
     * Server errors arrive with the server's stack trace inside the message; keep the message and
     * its "Caused by" lines, drop the frames.
     */
    static String cleanMessage(String msg) {
        if (msg == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        for (String line : msg.split("\\R")) {
            String t = line.strip();
            if (t.isEmpty() || t.startsWith("at ") || (t.startsWith("...") && t.endsWith("more"))) {
                continue;
            }
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(t);
        }
        return sb.toString();
    }

    /** The root cause's message on one line, with its class when the message alone is unclear. */
    static String oneLine(Throwable e) {
        StringBuilder sb = new StringBuilder();
        Throwable cur = e;
        java.util.Set<Throwable> seen = new java.util.HashSet<>();
        while (cur != null && seen.add(cur)) {
            String msg = cleanMessage(cur.getMessage());
            if (cur instanceof HelperException || cur instanceof UsageException) {
                if (sb.length() > 0) {
                    sb.append(": ");
                }
                sb.append(msg);
            } else if (msg != null && !msg.isEmpty() && sb.indexOf(msg) < 0) {
                if (sb.length() > 0) {
                    sb.append(": ");
                }
                sb.append(cur.getClass().getSimpleName()).append(": ").append(msg);
            }
            cur = cur.getCause();
        }
        if (sb.length() == 0) {
            sb.append(e.getClass().getName());
        }
        return sb.toString().replace('\n', ' ').replace('\r', ' ');
    }
}
