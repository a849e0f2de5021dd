package io.ferrygw.flusshelper;

import org.apache.fluss.client.Connection;

import java.io.InputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The streams of the command running on this thread. A command-line run uses System.out/in; in
 * serve mode every request runs on its own thread with its own buffers, so commands print through
 * {@link #current()} instead of System.out.
 */
final class Io {
    private static final ThreadLocal<Io> CURRENT = new ThreadLocal<>();

    final PrintStream out;
    final InputStream in;
    /** Private connections the command opened, closed by serve mode once the command is done. */
    final List<Connection> connections = new ArrayList<>();
    /** Serve mode's shared connections; null on the command line. */
    final Serve.ConnectionCache shared;
    /** The shared connections this command holds, released (and evicted if it failed) at its end. */
    final List<Serve.ConnectionCache.Entry> sharedEntries = new ArrayList<>();

    Io(PrintStream out, InputStream in) {
        this(out, in, null);
    }

    Io(PrintStream out, InputStream in, Serve.ConnectionCache shared) {
        this.out = out;
        this.in = in;
        this.shared = shared;
    }

    static Io current() {
        Io io = CURRENT.get();
        if (io == null) {
            throw new IllegalStateException("no Io bound to this thread");
        }
        return io;
    }

    static void set(Io io) {
        CURRENT.set(io);
    }

    static void clear() {
        CURRENT.remove();
    }

    void opened(Connection c) {
        connections.add(c);
    }
}
