package io.ferrygw.flusshelper;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;

import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.DataGetters;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericArray;
import org.apache.fluss.row.GenericMap;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.InternalArray;
import org.apache.fluss.row.InternalMap;
import org.apache.fluss.row.InternalRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.row.TimestampNtz;
import org.apache.fluss.types.ArrayType;
import org.apache.fluss.types.BinaryType;
import org.apache.fluss.types.CharType;
import org.apache.fluss.types.DataField;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DataTypeRoot;
import org.apache.fluss.types.DecimalType;
import org.apache.fluss.types.LocalZonedTimestampType;
import org.apache.fluss.types.MapType;
import org.apache.fluss.types.RowType;
import org.apache.fluss.types.TimeType;
import org.apache.fluss.types.TimestampType;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Converts between Fluss internal rows and the helper's JSON representation. The representation is
 * lossless so Go tests can compare values exactly:
 *
 * <ul>
 *   <li>integers and floats: JSON numbers (NaN/Infinity/-Infinity as strings)
 *   <li>DECIMAL: plain string with exactly the column's scale, e.g. "12.30"
 *   <li>CHAR/STRING: string; BINARY/BYTES: standard base64 string
 *   <li>DATE: "yyyy-mm-dd"; TIME: "hh:mm:ss.fff"
 *   <li>TIMESTAMP(p): "yyyy-mm-ddThh:mm:ss.nnnnnnnnn" (always 9 fraction digits, no zone)
 *   <li>TIMESTAMP_LTZ(p): the same in UTC with a trailing "Z"
 *   <li>ARRAY: JSON array; MAP: JSON array of [key, value] pairs in stored order; ROW: object by field
 *       name
 * </ul>
 *
 * Input accepts the same forms, plus: epoch millis numbers for timestamps, fewer fraction digits,
 * ISO offsets for TIMESTAMP_LTZ, day numbers for DATE, millisecond numbers for TIME, JSON objects
 * for maps with character keys, numbers for DECIMAL.
 */
final class RowCodec {
    static final DateTimeFormatter NTZ =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");
    static final DateTimeFormatter LTZ =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS'Z'").withZone(ZoneOffset.UTC);
    static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS");

    private RowCodec() {}

    // ------------------------------------------------------------------ Fluss -> JSON

    /** Writes a whole row as a JSON object keyed by column name. */
    static void writeRow(JsonGenerator g, InternalRow row, RowType type) throws IOException {
        g.writeStartObject();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            g.writeFieldName(fields.get(i).getName());
            writeValue(g, row, i, fields.get(i).getType());
        }
        g.writeEndObject();
    }

    /** Writes the value at {@code pos} of a row or an array. */
    static void writeValue(JsonGenerator g, DataGetters src, int pos, DataType t) throws IOException {
        if (src.isNullAt(pos)) {
            g.writeNull();
            return;
        }
        switch (t.getTypeRoot()) {
            case CHAR:
                g.writeString(src.getChar(pos, ((CharType) t).getLength()).toString());
                return;
            case STRING:
                g.writeString(src.getString(pos).toString());
                return;
            case BOOLEAN:
                g.writeBoolean(src.getBoolean(pos));
                return;
            case BINARY:
                g.writeString(
                        Base64.getEncoder()
                                .encodeToString(src.getBinary(pos, ((BinaryType) t).getLength())));
                return;
            case BYTES:
                g.writeString(Base64.getEncoder().encodeToString(src.getBytes(pos)));
                return;
            case DECIMAL:
                {
                    DecimalType d = (DecimalType) t;
                    g.writeString(
                            src.getDecimal(pos, d.getPrecision(), d.getScale())
                                    .toBigDecimal()
                                    .setScale(d.getScale())
                                    .toPlainString());
                    return;
                }
            case TINYINT:
                g.writeNumber(src.getByte(pos));
                return;
            case SMALLINT:
                g.writeNumber(src.getShort(pos));
                return;
            case INTEGER:
                g.writeNumber(src.getInt(pos));
                return;
            case BIGINT:
                g.writeNumber(src.getLong(pos));
                return;
            case FLOAT:
                {
                    float f = src.getFloat(pos);
                    if (Float.isFinite(f)) {
                        g.writeNumber(f);
                    } else {
                        g.writeString(Float.toString(f));
                    }
                    return;
                }
            case DOUBLE:
                {
                    double d = src.getDouble(pos);
                    if (Double.isFinite(d)) {
                        g.writeNumber(d);
                    } else {
                        g.writeString(Double.toString(d));
                    }
                    return;
                }
            case DATE:
                g.writeString(LocalDate.ofEpochDay(src.getInt(pos)).toString());
                return;
            case TIME_WITHOUT_TIME_ZONE:
                g.writeString(TIME.format(LocalTime.ofNanoOfDay(src.getInt(pos) * 1_000_000L)));
                return;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                {
                    TimestampNtz ts = src.getTimestampNtz(pos, ((TimestampType) t).getPrecision());
                    g.writeString(NTZ.format(ts.toLocalDateTime()));
                    return;
                }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    TimestampLtz ts =
                            src.getTimestampLtz(pos, ((LocalZonedTimestampType) t).getPrecision());
                    g.writeString(LTZ.format(ts.toInstant()));
                    return;
                }
            case ARRAY:
                {
                    DataType elem = ((ArrayType) t).getElementType();
                    InternalArray arr = src.getArray(pos);
                    g.writeStartArray();
                    for (int i = 0; i < arr.size(); i++) {
                        writeValue(g, arr, i, elem);
                    }
                    g.writeEndArray();
                    return;
                }
            case MAP:
                {
                    MapType mt = (MapType) t;
                    InternalMap m = src.getMap(pos);
                    InternalArray keys = m.keyArray();
                    InternalArray vals = m.valueArray();
                    g.writeStartArray();
                    for (int i = 0; i < m.size(); i++) {
                        g.writeStartArray();
                        writeValue(g, keys, i, mt.getKeyType());
                        writeValue(g, vals, i, mt.getValueType());
                        g.writeEndArray();
                    }
                    g.writeEndArray();
                    return;
                }
            case ROW:
                {
                    RowType rt = (RowType) t;
                    writeRow(g, src.getRow(pos, rt.getFieldCount()), rt);
                    return;
                }
            default:
                throw new HelperException("unsupported Fluss type " + t);
        }
    }

    // ------------------------------------------------------------------ JSON -> Fluss

    /** Builds a row from a JSON object keyed by column name; absent columns are NULL. */
    static GenericRow toRow(JsonNode obj, RowType type, String where) {
        if (obj == null || !obj.isObject()) {
            throw new HelperException(where + ": want a JSON object keyed by column name");
        }
        List<DataField> fields = type.getFields();
        GenericRow row = new GenericRow(fields.size());
        for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (type.getFieldIndex(name) < 0) {
                throw new HelperException(where + ": unknown column \"" + name + "\"");
            }
        }
        for (int i = 0; i < fields.size(); i++) {
            DataField f = fields.get(i);
            row.setField(i, toInternal(obj.get(f.getName()), f.getType(), where + "." + f.getName()));
        }
        return row;
    }

    /** Converts one JSON value to the internal object Fluss expects for type {@code t}. */
    static Object toInternal(JsonNode n, DataType t, String where) {
        if (n == null || n.isNull() || n.isMissingNode()) {
            if (!t.isNullable()) {
                throw new HelperException(where + ": NULL for NOT NULL type " + t);
            }
            return null;
        }
        switch (t.getTypeRoot()) {
            case CHAR:
                {
                    String s = text(n, where);
                    int len = ((CharType) t).getLength();
                    if (s.codePointCount(0, s.length()) > len) {
                        throw new HelperException(where + ": longer than " + t);
                    }
                    return BinaryString.fromString(s);
                }
            case STRING:
                return BinaryString.fromString(text(n, where));
            case BOOLEAN:
                if (!n.isBoolean()) {
                    throw new HelperException(where + ": want true/false for " + t);
                }
                return n.booleanValue();
            case BINARY:
                {
                    byte[] b = base64(n, where);
                    int len = ((BinaryType) t).getLength();
                    if (b.length != len) {
                        throw new HelperException(
                                where + ": " + b.length + " bytes for fixed-length " + t);
                    }
                    return b;
                }
            case BYTES:
                return base64(n, where);
            case DECIMAL:
                return decimal(n, (DecimalType) t, where);
            case TINYINT:
                return (byte) integral(n, Byte.MIN_VALUE, Byte.MAX_VALUE, t, where);
            case SMALLINT:
                return (short) integral(n, Short.MIN_VALUE, Short.MAX_VALUE, t, where);
            case INTEGER:
                return (int) integral(n, Integer.MIN_VALUE, Integer.MAX_VALUE, t, where);
            case BIGINT:
                return integral(n, Long.MIN_VALUE, Long.MAX_VALUE, t, where);
            case FLOAT:
                return (float) floating(n, t, where);
            case DOUBLE:
                return floating(n, t, where);
            case DATE:
                if (n.isIntegralNumber()) {
                    return (int) integral(n, Integer.MIN_VALUE, Integer.MAX_VALUE, t, where);
                }
                try {
                    return (int) LocalDate.parse(text(n, where)).toEpochDay();
                } catch (DateTimeParseException e) {
                    throw new HelperException(where + ": bad DATE " + n + ": " + e.getMessage());
                }
            case TIME_WITHOUT_TIME_ZONE:
                {
                    if (n.isIntegralNumber()) {
                        return (int) integral(n, 0, 86_399_999, t, where);
                    }
                    LocalTime lt;
                    try {
                        lt = LocalTime.parse(text(n, where));
                    } catch (DateTimeParseException e) {
                        throw new HelperException(where + ": bad TIME " + n + ": " + e.getMessage());
                    }
                    checkPrecision(lt.getNano(), ((TimeType) t).getPrecision(), t, where);
                    return (int) (lt.toNanoOfDay() / 1_000_000L);
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                {
                    if (n.isIntegralNumber()) {
                        return TimestampNtz.fromMillis(
                                integral(n, Long.MIN_VALUE, Long.MAX_VALUE, t, where));
                    }
                    LocalDateTime ldt;
                    try {
                        ldt = LocalDateTime.parse(text(n, where));
                    } catch (DateTimeParseException e) {
                        throw new HelperException(
                                where + ": bad TIMESTAMP " + n + ": " + e.getMessage());
                    }
                    checkPrecision(ldt.getNano(), ((TimestampType) t).getPrecision(), t, where);
                    return TimestampNtz.fromLocalDateTime(ldt);
                }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    if (n.isIntegralNumber()) {
                        return TimestampLtz.fromEpochMillis(
                                integral(n, Long.MIN_VALUE, Long.MAX_VALUE, t, where));
                    }
                    Instant inst;
                    try {
                        inst = OffsetDateTime.parse(text(n, where)).toInstant();
                    } catch (DateTimeParseException e) {
                        throw new HelperException(
                                where + ": bad TIMESTAMP_LTZ " + n + " (want ISO-8601 with Z or offset): "
                                        + e.getMessage());
                    }
                    checkPrecision(
                            inst.getNano(), ((LocalZonedTimestampType) t).getPrecision(), t, where);
                    return TimestampLtz.fromInstant(inst);
                }
            case ARRAY:
                {
                    if (!n.isArray()) {
                        throw new HelperException(where + ": want a JSON array for " + t);
                    }
                    DataType elem = ((ArrayType) t).getElementType();
                    Object[] out = new Object[n.size()];
                    for (int i = 0; i < n.size(); i++) {
                        out[i] = toInternal(n.get(i), elem, where + "[" + i + "]");
                    }
                    return new GenericArray(out);
                }
            case MAP:
                return map(n, (MapType) t, where);
            case ROW:
                {
                    RowType rt = (RowType) t;
                    if (n.isArray()) {
                        // Positional form: [v0, v1, ...].
                        if (n.size() != rt.getFieldCount()) {
                            throw new HelperException(
                                    where + ": " + n.size() + " values for " + t);
                        }
                        GenericRow r = new GenericRow(rt.getFieldCount());
                        for (int i = 0; i < rt.getFieldCount(); i++) {
                            r.setField(i, toInternal(n.get(i), rt.getTypeAt(i), where + "[" + i + "]"));
                        }
                        return r;
                    }
                    return toRow(n, rt, where);
                }
            default:
                throw new HelperException(where + ": unsupported Fluss type " + t);
        }
    }

    private static Object map(JsonNode n, MapType mt, String where) {
        Map<Object, Object> m = new LinkedHashMap<>();
        if (n.isObject()) {
            if (!mt.getKeyType().isAnyOf(DataTypeRoot.CHAR, DataTypeRoot.STRING)) {
                throw new HelperException(
                        where + ": a JSON object only fits maps with character keys; use [[k, v], ...]");
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(
                        BinaryString.fromString(e.getKey()),
                        toInternal(e.getValue(), mt.getValueType(), where + "." + e.getKey()));
            }
        } else if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                JsonNode pair = n.get(i);
                if (!pair.isArray() || pair.size() != 2) {
                    throw new HelperException(where + "[" + i + "]: want a [key, value] pair");
                }
                Object k = toInternal(pair.get(0), mt.getKeyType(), where + "[" + i + "].key");
                if (m.containsKey(k)) {
                    throw new HelperException(where + "[" + i + "]: duplicate map key " + pair.get(0));
                }
                m.put(k, toInternal(pair.get(1), mt.getValueType(), where + "[" + i + "].value"));
            }
        } else {
            throw new HelperException(where + ": want [[key, value], ...] for " + mt);
        }
        return new GenericMap(m);
    }

    private static String text(JsonNode n, String where) {
        if (!n.isTextual()) {
            throw new HelperException(where + ": want a JSON string, got " + n.getNodeType());
        }
        return n.textValue();
    }

    private static byte[] base64(JsonNode n, String where) {
        try {
            return Base64.getDecoder().decode(text(n, where).getBytes(StandardCharsets.US_ASCII));
        } catch (IllegalArgumentException e) {
            throw new HelperException(where + ": bad base64: " + e.getMessage());
        }
    }

    private static long integral(JsonNode n, long min, long max, DataType t, String where) {
        BigInteger v;
        if (n.isIntegralNumber()) {
            v = n.bigIntegerValue();
        } else if (n.isTextual()) {
            // Strings are accepted so 64-bit values survive JSON producers that use doubles.
            try {
                v = new BigInteger(n.textValue().trim());
            } catch (NumberFormatException e) {
                throw new HelperException(where + ": not an integer: " + n);
            }
        } else {
            throw new HelperException(where + ": want an integer for " + t + ", got " + n);
        }
        if (v.compareTo(BigInteger.valueOf(min)) < 0 || v.compareTo(BigInteger.valueOf(max)) > 0) {
            throw new HelperException(where + ": " + v + " out of range for " + t);
        }
        return v.longValue();
    }

    private static double floating(JsonNode n, DataType t, String where) {
        if (n.isNumber()) {
            return n.doubleValue();
        }
        if (n.isTextual()) {
            switch (n.textValue()) {
                case "NaN":
                    return Double.NaN;
                case "Infinity":
                    return Double.POSITIVE_INFINITY;
                case "-Infinity":
                    return Double.NEGATIVE_INFINITY;
                default:
                    try {
                        return Double.parseDouble(n.textValue());
                    } catch (NumberFormatException e) {
                        throw new HelperException(where + ": not a number: " + n);
                    }
            }
        }
        throw new HelperException(where + ": want a number for " + t + ", got " + n);
    }

    private static Decimal decimal(JsonNode n, DecimalType t, String where) {
        BigDecimal bd;
        try {
            bd = n.isTextual() ? new BigDecimal(n.textValue().trim()) : n.isNumber() ? n.decimalValue() : null;
        } catch (NumberFormatException e) {
            throw new HelperException(where + ": not a decimal: " + n);
        }
        if (bd == null) {
            throw new HelperException(where + ": want a decimal string for " + t + ", got " + n);
        }
        try {
            // Unlike Decimal.fromBigDecimal this refuses to round: a reference writer must not
            // silently change the value it was given.
            bd = bd.setScale(t.getScale());
        } catch (ArithmeticException e) {
            throw new HelperException(where + ": " + bd.toPlainString() + " has more than "
                    + t.getScale() + " fraction digits for " + t);
        }
        Decimal d = Decimal.fromBigDecimal(bd, t.getPrecision(), t.getScale());
        if (d == null) {
            throw new HelperException(where + ": " + bd.toPlainString() + " overflows " + t);
        }
        return d;
    }

    /** Rejects sub-precision digits the column would silently drop. */
    private static void checkPrecision(int nanos, int precision, DataType t, String where) {
        long unit = 1;
        for (int i = precision; i < 9; i++) {
            unit *= 10;
        }
        if (nanos % unit != 0) {
            throw new HelperException(where + ": more fraction digits than " + t + " keeps");
        }
    }
}
