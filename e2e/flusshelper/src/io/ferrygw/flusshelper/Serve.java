package io.ferrygw.flusshelper;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.fluss.client.Connection;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code flusshelper serve}: one JVM answers many commands, so Go tests pay the JVM start once
 * per test binary instead of once per call.
 *
 * <p>Request, one JSON line on stdin: {@code {"id": 7, "args": ["scan", "--database", "db", ...],
 * "stdin": "...optional input..."}}. Response, one JSON line on stdout, in completion order:
 * {@code {"id": 7, "code": 0, "stdout": "...", "error": "one-line message when code != 0"}}.
 * Codes are those of the command line (0 ok, 1 failure, 2 usage). Requests run concurrently,
 * each on its own thread. They share one Fluss connection per set of client options (see
 * Main.connect); a request that fails drops the connections it used, so a broken connection
 * is not reused. End of stdin ends the process: the parent is gone.
 */
final class Serve {
    private Serve() {}

    static int run() throws Exception {
        PrintStream responses = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        ExecutorService workers = Executors.newCachedThreadPool(daemon("flusshelper-request"));
        // Closing a Fluss connection waits out Netty's quiet period; do it off the request path.
        ExecutorService closer = Executors.newSingleThreadExecutor(daemon("flusshelper-closer"));
        ConnectionCache cache = new ConnectionCache(closer);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            final String request = line;
            workers.submit(() -> handle(request, responses, closer, cache));
        }
        return 0;
    }

    private static void handle(String request, PrintStream responses, ExecutorService closer, ConnectionCache cache) {
        ObjectNode resp = Main.JSON.createObjectNode();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(buf, false, StandardCharsets.UTF_8);
        Io io = null;
        boolean failed = false;
        try {
            JsonNode req = Main.JSON.readTree(request);
            resp.set("id", req.get("id"));
            JsonNode argsNode = req.get("args");
            if (argsNode == null || !argsNode.isArray()) {
                throw new UsageException("serve: request without an \"args\" array");
            }
            List<String> args = new ArrayList<>();
            for (JsonNode a : argsNode) {
                args.add(a.asText());
            }
            if (!args.isEmpty() && args.get(0).equals("serve")) {
                throw new UsageException("serve: cannot nest serve");
            }
            JsonNode stdin = req.get("stdin");
            byte[] input = stdin == null || stdin.isNull() ? new byte[0] : stdin.asText().getBytes(StandardCharsets.UTF_8);
            io = new Io(out, new ByteArrayInputStream(input), cache);
            Io.set(io);
            int code = Main.run(args.toArray(new String[0]));
            resp.put("code", code);
        } catch (UsageException e) {
            resp.put("code", 2);
            resp.put("error", e.getMessage());
        } catch (Throwable e) {
            resp.put("code", 1);
            resp.put("error", Main.oneLine(e));
            failed = true;
        } finally {
            Io.clear();
            out.flush();
            resp.put("stdout", buf.toString(StandardCharsets.UTF_8));
            if (io != null) {
                cache.release(io, failed);
                for (Connection c : io.connections) {
                    closer.submit(() -> {
                        try {
                            c.close();
                        } catch (Exception ignored) {
                            // The connection is discarded either way.
                        }
                    });
                }
            }
        }
        try {
            String json = Main.JSON.writeValueAsString(resp);
            synchronized (responses) {
                responses.println(json);
                responses.flush();
            }
        } catch (Exception e) {
            System.err.println("flusshelper: serve: cannot encode response: " + Main.oneLine(e));
        }
    }

    /**
     * Shared connections keyed by their complete client options, reference counted: a failed
     * request evicts the connections it used so later requests get fresh ones, and an evicted
     * connection is closed only when no running request still holds it.
     */
    static final class ConnectionCache {
        static final class Entry {
            final java.util.Map<String, String> conf;
            final Connection conn;
            int users;
            boolean evicted;

            Entry(java.util.Map<String, String> conf, Connection conn) {
                this.conf = conf;
                this.conn = conn;
            }
        }

        private final java.util.Map<java.util.Map<String, String>, Entry> byConf = new java.util.HashMap<>();
        private final ExecutorService closer;

        ConnectionCache(ExecutorService closer) {
            this.closer = closer;
        }

        synchronized Connection acquire(java.util.Map<String, String> conf, Io io) {
            Entry e =
                    byConf.computeIfAbsent(
                            conf,
                            c -> new Entry(c, org.apache.fluss.client.ConnectionFactory.createConnection(
                                    org.apache.fluss.config.Configuration.fromMap(c))));
            e.users++;
            io.sharedEntries.add(e);
            return e.conn;
        }

        synchronized void release(Io io, boolean failed) {
            for (Entry e : io.sharedEntries) {
                e.users--;
                if (failed && !e.evicted) {
                    e.evicted = true;
                    byConf.remove(e.conf, e);
                }
                if (e.evicted && e.users == 0) {
                    closer.submit(() -> {
                        try {
                            e.conn.close();
                        } catch (Exception ignored) {
                            // Discarded either way.
                        }
                    });
                }
            }
            io.sharedEntries.clear();
        }
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
