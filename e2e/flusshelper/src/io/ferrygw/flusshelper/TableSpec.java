package io.ferrygw.flusshelper;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.metadata.ValidationException;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DataTypeParser;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The JSON table spec accepted by {@code create-table}:
 *
 * <pre>
 * {"database": "db", "table": "t",
 *  "columns": [{"name": "id", "type": "BIGINT", "nullable": false, "comment": "..."},
 *              {"name": "amount", "type": "DECIMAL(10, 2)"},
 *              {"name": "tags", "type": "MAP&lt;STRING, ARRAY&lt;INT&gt;&gt;"}],
 *  "primary_key": ["id"], "partition_keys": [], "bucket_count": 3, "bucket_keys": ["id"],
 *  "properties": {"table.log.arrow.compression.type": "NONE"},
 *  "custom_properties": {"owner": "ferry"}, "comment": "...", "ignore_if_exists": false}
 * </pre>
 *
 * Types use Fluss's own SQL-like syntax (DataTypeParser), so "INT NOT NULL" works as well as
 * {@code "nullable": false}. Unknown keys are rejected so a misspelt option cannot be ignored.
 */
final class TableSpec {
    private static final Set<String> KEYS =
            Set.of(
                    "database",
                    "table",
                    "columns",
                    "primary_key",
                    "partition_keys",
                    "bucket_count",
                    "bucket_keys",
                    "properties",
                    "custom_properties",
                    "comment",
                    "ignore_if_exists");
    private static final Set<String> COLUMN_KEYS = Set.of("name", "type", "nullable", "comment");

    final TablePath path;
    final TableDescriptor descriptor;
    final boolean ignoreIfExists;

    private TableSpec(TablePath path, TableDescriptor descriptor, boolean ignoreIfExists) {
        this.path = path;
        this.descriptor = descriptor;
        this.ignoreIfExists = ignoreIfExists;
    }

    static TableSpec parse(JsonNode spec) {
        if (spec == null || !spec.isObject()) {
            throw new HelperException("table spec: want a JSON object");
        }
        rejectUnknown(spec, KEYS, "table spec");
        String db = requireText(spec, "database");
        String table = requireText(spec, "table");

        JsonNode cols = spec.get("columns");
        if (cols == null || !cols.isArray() || cols.isEmpty()) {
            throw new HelperException("table spec: \"columns\" must be a non-empty array");
        }
        Schema.Builder schema = Schema.newBuilder();
        for (int i = 0; i < cols.size(); i++) {
            JsonNode c = cols.get(i);
            String where = "table spec: columns[" + i + "]";
            if (!c.isObject()) {
                throw new HelperException(where + ": want an object");
            }
            rejectUnknown(c, COLUMN_KEYS, where);
            String name = requireText(c, "name", where);
            String typeText = requireText(c, "type", where + " (" + name + ")");
            DataType type;
            try {
                type = DataTypeParser.parse(typeText);
            } catch (ValidationException e) {
                throw new HelperException(where + " (" + name + "): bad type \"" + typeText + "\": " + e.getMessage());
            }
            JsonNode nullable = c.get("nullable");
            if (nullable != null && !nullable.isNull()) {
                if (!nullable.isBoolean()) {
                    throw new HelperException(where + " (" + name + "): \"nullable\" must be true/false");
                }
                type = type.copy(nullable.booleanValue());
            }
            schema.column(name, type);
            JsonNode comment = c.get("comment");
            if (comment != null && !comment.isNull()) {
                schema.withComment(comment.asText());
            }
        }
        List<String> pk = stringList(spec, "primary_key");
        if (!pk.isEmpty()) {
            schema.primaryKey(pk);
        }

        TableDescriptor.Builder td = TableDescriptor.builder();
        try {
            td.schema(schema.build());
        } catch (RuntimeException e) {
            throw new HelperException("table spec: invalid schema: " + e.getMessage(), e);
        }
        List<String> partitionKeys = stringList(spec, "partition_keys");
        if (!partitionKeys.isEmpty()) {
            td.partitionedBy(partitionKeys);
        }
        Integer buckets = null;
        JsonNode bc = spec.get("bucket_count");
        if (bc != null && !bc.isNull()) {
            if (!bc.isIntegralNumber() || bc.intValue() <= 0) {
                throw new HelperException("table spec: \"bucket_count\" must be a positive integer");
            }
            buckets = bc.intValue();
        }
        List<String> bucketKeys = stringList(spec, "bucket_keys");
        if (buckets != null || !bucketKeys.isEmpty()) {
            td.distributedBy(buckets, bucketKeys);
        }
        td.properties(stringMap(spec, "properties"));
        td.customProperties(stringMap(spec, "custom_properties"));
        JsonNode comment = spec.get("comment");
        if (comment != null && !comment.isNull()) {
            td.comment(comment.asText());
        }
        JsonNode ine = spec.get("ignore_if_exists");
        boolean ignore = ine != null && ine.asBoolean(false);
        try {
            return new TableSpec(TablePath.of(db, table), td.build(), ignore);
        } catch (RuntimeException e) {
            throw new HelperException("table spec: invalid table: " + e.getMessage(), e);
        }
    }

    private static void rejectUnknown(JsonNode obj, Set<String> known, String where) {
        for (Iterator<String> it = obj.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!known.contains(k)) {
                throw new HelperException(where + ": unknown key \"" + k + "\"");
            }
        }
    }

    private static String requireText(JsonNode obj, String key) {
        return requireText(obj, key, "table spec");
    }

    private static String requireText(JsonNode obj, String key, String where) {
        JsonNode v = obj.get(key);
        if (v == null || !v.isTextual() || v.textValue().isEmpty()) {
            throw new HelperException(where + ": \"" + key + "\" must be a non-empty string");
        }
        return v.textValue();
    }

    private static List<String> stringList(JsonNode obj, String key) {
        JsonNode v = obj.get(key);
        List<String> out = new ArrayList<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isArray()) {
            throw new HelperException("table spec: \"" + key + "\" must be an array of strings");
        }
        for (JsonNode e : v) {
            if (!e.isTextual()) {
                throw new HelperException("table spec: \"" + key + "\" must be an array of strings");
            }
            out.add(e.textValue());
        }
        return out;
    }

    private static Map<String, String> stringMap(JsonNode obj, String key) {
        JsonNode v = obj.get(key);
        Map<String, String> out = new LinkedHashMap<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isObject()) {
            throw new HelperException("table spec: \"" + key + "\" must be an object of strings");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isValueNode() || e.getValue().isNull()) {
                throw new HelperException(
                        "table spec: \"" + key + "\"." + e.getKey() + " must be a string");
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }
}
