package io.ferrygw.flusshelper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Minimal "--name value" / "--name=value" / "--switch" parser. Every command declares the flags it
 * accepts so a typo fails loudly instead of being ignored.
 */
final class Flags {
    private final String command;
    private final Map<String, List<String>> values = new LinkedHashMap<>();
    private final Set<String> switches = new HashSet<>();

    private Flags(String command) {
        this.command = command;
    }

    /**
     * Parses args. {@code valued} lists flags that take a value, {@code booleans} flags that do not.
     */
    static Flags parse(String command, String[] args, Set<String> valued, Set<String> booleans) {
        Flags f = new Flags(command);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new UsageException(command + ": unexpected argument " + quote(a));
            }
            String name = a.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (booleans.contains(name)) {
                if (value != null) {
                    throw new UsageException(command + ": flag --" + name + " takes no value");
                }
                f.switches.add(name);
            } else if (valued.contains(name)) {
                if (value == null) {
                    if (i + 1 >= args.length) {
                        throw new UsageException(command + ": flag --" + name + " needs a value");
                    }
                    value = args[++i];
                }
                f.values.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
            } else {
                throw new UsageException(command + ": unknown flag --" + name);
            }
        }
        return f;
    }

    boolean has(String name) {
        return switches.contains(name) || values.containsKey(name);
    }

    String get(String name, String def) {
        List<String> v = values.get(name);
        return v == null ? def : v.get(v.size() - 1);
    }

    String require(String name) {
        String v = get(name, null);
        if (v == null || v.isEmpty()) {
            throw new UsageException(command + ": flag --" + name + " is required");
        }
        return v;
    }

    List<String> all(String name) {
        List<String> v = values.get(name);
        return v == null ? List.of() : v;
    }

    long getLong(String name, long def) {
        String v = get(name, null);
        if (v == null) {
            return def;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException(command + ": flag --" + name + ": not an integer: " + quote(v));
        }
    }

    Duration getDuration(String name, Duration def) {
        String v = get(name, null);
        if (v == null) {
            return def;
        }
        try {
            return parseDuration(v);
        } catch (IllegalArgumentException e) {
            throw new UsageException(command + ": flag --" + name + ": " + e.getMessage());
        }
    }

    /** Accepts Go-style durations with one unit: 500ms, 30s, 2m, 1h. */
    static Duration parseDuration(String v) {
        String[][] units = {{"ms", "1"}, {"s", "1000"}, {"m", "60000"}, {"h", "3600000"}};
        for (String[] u : units) {
            if (v.endsWith(u[0])) {
                String num = v.substring(0, v.length() - u[0].length());
                // "ms" ends with "s": make sure "500ms" is not read as 500m + "s".
                if (u[0].equals("s") && num.endsWith("m")) {
                    continue;
                }
                try {
                    double n = Double.parseDouble(num);
                    if (n < 0 || Double.isNaN(n) || Double.isInfinite(n)) {
                        throw new IllegalArgumentException("negative or invalid duration " + quote(v));
                    }
                    return Duration.ofMillis(Math.round(n * Long.parseLong(u[1])));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("invalid duration " + quote(v));
                }
            }
        }
        throw new IllegalArgumentException("invalid duration " + quote(v) + " (want e.g. 500ms, 30s, 2m)");
    }

    static String quote(String s) {
        return "\"" + s + "\"";
    }
}
