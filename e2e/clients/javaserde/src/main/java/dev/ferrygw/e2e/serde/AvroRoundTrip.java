package dev.ferrygw.e2e.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.confluent.kafka.serializers.KafkaAvroDeserializer;
import io.confluent.kafka.serializers.KafkaAvroSerializer;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericEnumSymbol;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces Avro records with Confluent's KafkaAvroSerializer and consumes them back with its
 * KafkaAvroDeserializer, both configured as a Java application configures them and talking to the
 * Schema Registry at REGISTRY_URL over REST.
 *
 * <p>Usage: {@code AvroRoundTrip BOOTSTRAP REGISTRY_URL TOPIC MODE [SCHEMA_JSON] < RECORDS_JSON}
 *
 * <p>MODE is "auto" (auto.register.schemas=true: the serializer registers SCHEMA_JSON under
 * TOPIC-value), "latest" (auto.register.schemas=false, use.latest.version=true: the serializer
 * writes with the subject's latest version, after checking, as latest.compatibility.strict does by
 * default, that it reads records of SCHEMA_JSON) or "consume" (nothing produced: as many records as
 * RECORDS_JSON lists are consumed, e.g. rows another writer wrote). RECORDS_JSON is a JSON list of
 * objects, made GenericRecords of SCHEMA_JSON: decimals as strings, bytes as lists of integers,
 * dates, times and timestamps as ISO-8601 strings. Both serdes use Avro's logical type conversions
 * (avro.use.logical.type.converters=true), so those are BigDecimal, LocalDate and Instant values.
 *
 * <p>Prints one JSON object: "produced" (each record's partition and offset, or its error) and
 * "consumed" (as many records as were produced, or in "consume" mode listed, read back from
 * partition 0: each one's offset and the decoded record in the same forms, timestamps as ISO-8601
 * strings, or an error).
 */
public final class AvroRoundTrip {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private AvroRoundTrip() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || (!args[3].equals("consume") && args.length < 5)) {
            System.err.println("usage: AvroRoundTrip BOOTSTRAP REGISTRY_URL TOPIC auto|latest|consume [SCHEMA_JSON] < RECORDS_JSON");
            System.exit(2);
        }
        String bootstrap = args[0], url = args[1], topic = args[2], mode = args[3];
        JsonNode records = MAPPER.readTree(System.in); // UTF-8, whatever the locale
        if (!records.isArray()) {
            System.err.println("RECORDS_JSON is not a JSON list");
            System.exit(2);
        }
        ObjectNode out = NODES.objectNode();
        ArrayNode produced = out.putArray("produced");
        int n = records.size();
        if (!mode.equals("consume")) {
            produce(bootstrap, url, topic, mode, new Schema.Parser().parse(args[4]), records, produced);
            n = 0;
            for (JsonNode p : produced) {
                n += p.has("offset") ? 1 : 0;
            }
        }
        consume(bootstrap, url, topic, n, out.putArray("consumed"));
        // UTF-8 bytes: System.out's own encoding follows the locale.
        System.out.writeBytes(MAPPER.writeValueAsBytes(out));
        System.out.println();
    }

    private static void produce(String bootstrap, String url, String topic, String mode, Schema schema, JsonNode records, ArrayNode produced)
            throws InterruptedException {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ProducerConfig.ACKS_CONFIG, "all");
        conf.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        conf.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, KafkaAvroSerializer.class.getName());
        conf.put("schema.registry.url", url);
        conf.put("avro.use.logical.type.converters", true);
        switch (mode) {
            case "auto":
                conf.put("auto.register.schemas", true);
                break;
            case "latest":
                conf.put("auto.register.schemas", false);
                conf.put("use.latest.version", true);
                break;
            default:
                System.err.println("unknown mode " + mode);
                System.exit(2);
        }
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        try (KafkaProducer<byte[], Object> p = new KafkaProducer<>(conf)) {
            for (int i = 0; i < records.size(); i++) {
                Object value = toAvro(schema, records.get(i), "record " + i);
                // The serializer runs inside send: a refused schema throws here.
                try {
                    sent.add(p.send(new ProducerRecord<>(topic, 0, null, value)));
                    failed.add(null);
                } catch (RuntimeException e) {
                    sent.add(null);
                    failed.add(e + causes(e));
                }
            }
            p.flush();
            for (int i = 0; i < sent.size(); i++) {
                ObjectNode r = produced.addObject();
                if (sent.get(i) == null) {
                    r.put("error", failed.get(i));
                    continue;
                }
                try {
                    RecordMetadata md = sent.get(i).get(60, TimeUnit.SECONDS);
                    r.put("partition", md.partition()).put("offset", md.offset());
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    r.put("error", e.getCause() != null ? e.getCause().toString() : e.toString());
                }
            }
        }
    }

    private static void consume(String bootstrap, String url, String topic, int n, ArrayNode consumed) {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, KafkaAvroDeserializer.class.getName());
        conf.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        conf.put("schema.registry.url", url);
        conf.put("avro.use.logical.type.converters", true);
        TopicPartition tp = new TopicPartition(topic, 0);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        try (KafkaConsumer<byte[], Object> c = new KafkaConsumer<>(conf)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (consumed.size() < n && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], Object> rs;
                try {
                    rs = c.poll(Duration.ofSeconds(1));
                } catch (RecordDeserializationException e) {
                    consumed.addObject().put("offset", e.offset()).put("error", e + causes(e));
                    return;
                }
                for (ConsumerRecord<byte[], Object> r : rs) {
                    consumed.addObject().put("offset", r.offset()).set("value", toJson(r.value()));
                }
            }
        }
    }

    private static String causes(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            b.append(": ").append(c);
        }
        return b.toString();
    }

    private static String logical(Schema s) {
        return s.getLogicalType() == null ? "" : s.getLogicalType().getName();
    }

    /** The value of JSON v as schema s, in the forms the serializer's logical conversions take. */
    static Object toAvro(Schema s, JsonNode v, String where) {
        if (s.getType() == Schema.Type.UNION) {
            if (v == null || v.isNull()) {
                return null;
            }
            for (Schema b : s.getTypes()) {
                if (b.getType() != Schema.Type.NULL) {
                    return toAvro(b, v, where);
                }
            }
        }
        if (v == null || v.isNull()) {
            return null; // the serializer refuses it where the schema has no null
        }
        switch (s.getType()) {
            case RECORD: {
                GenericData.Record r = new GenericData.Record(s);
                for (Schema.Field f : s.getFields()) {
                    r.put(f.name(), toAvro(f.schema(), v.get(f.name()), where + "." + f.name()));
                }
                return r;
            }
            case ARRAY: {
                List<Object> l = new ArrayList<>();
                for (JsonNode e : v) {
                    l.add(toAvro(s.getElementType(), e, where + "[]"));
                }
                return l;
            }
            case MAP: {
                Map<String, Object> m = new LinkedHashMap<>();
                for (Map.Entry<String, JsonNode> e : v.properties()) {
                    m.put(e.getKey(), toAvro(s.getValueType(), e.getValue(), where + "." + e.getKey()));
                }
                return m;
            }
            case STRING:
                return v.asText();
            case BYTES: {
                if (logical(s).equals("decimal")) {
                    return new BigDecimal(v.asText());
                }
                byte[] b = new byte[v.size()];
                for (int i = 0; i < b.length; i++) {
                    b[i] = (byte) v.get(i).intValue();
                }
                return ByteBuffer.wrap(b);
            }
            case INT:
                switch (logical(s)) {
                    case "date":
                        return LocalDate.parse(v.asText());
                    case "time-millis":
                        return LocalTime.parse(v.asText());
                    default:
                        return v.intValue();
                }
            case LONG:
                switch (logical(s)) {
                    case "timestamp-millis":
                    case "timestamp-micros":
                        return OffsetDateTime.parse(v.asText()).toInstant();
                    case "local-timestamp-millis":
                    case "local-timestamp-micros":
                        return LocalDateTime.parse(v.asText());
                    case "time-micros":
                        return LocalTime.parse(v.asText());
                    default:
                        return v.longValue();
                }
            case FLOAT:
                return v.floatValue();
            case DOUBLE:
                return v.doubleValue();
            case BOOLEAN:
                return v.booleanValue();
            default:
                throw new IllegalArgumentException(where + ": Avro type " + s.getType() + " is not supported here");
        }
    }

    /** The JSON form of a value the deserializer gave. */
    static JsonNode toJson(Object v) {
        if (v == null) {
            return NODES.nullNode();
        }
        if (v instanceof GenericRecord) {
            GenericRecord r = (GenericRecord) v;
            ObjectNode o = NODES.objectNode();
            for (Schema.Field f : r.getSchema().getFields()) {
                o.set(f.name(), toJson(r.get(f.name())));
            }
            return o;
        }
        if (v instanceof CharSequence || v instanceof GenericEnumSymbol) {
            return NODES.textNode(v.toString());
        }
        if (v instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) v).duplicate();
            ArrayNode a = NODES.arrayNode();
            while (b.hasRemaining()) {
                a.add(b.get() & 0xff);
            }
            return a;
        }
        if (v instanceof GenericFixed) {
            ArrayNode a = NODES.arrayNode();
            for (byte x : ((GenericFixed) v).bytes()) {
                a.add(x & 0xff);
            }
            return a;
        }
        if (v instanceof BigDecimal) {
            return NODES.textNode(((BigDecimal) v).toPlainString());
        }
        if (v instanceof Instant) {
            return NODES.textNode(DateTimeFormatter.ISO_INSTANT.format((Instant) v));
        }
        if (v instanceof LocalDateTime) {
            return NODES.textNode(DateTimeFormatter.ISO_LOCAL_DATE_TIME.format((LocalDateTime) v));
        }
        if (v instanceof LocalTime) {
            return NODES.textNode(DateTimeFormatter.ISO_LOCAL_TIME.format((LocalTime) v));
        }
        if (v instanceof LocalDate) {
            return NODES.textNode(v.toString());
        }
        if (v instanceof Integer || v instanceof Long) {
            return NODES.numberNode(((Number) v).longValue());
        }
        if (v instanceof Float || v instanceof Double) {
            return NODES.numberNode(((Number) v).doubleValue());
        }
        if (v instanceof Boolean) {
            return NODES.booleanNode((Boolean) v);
        }
        if (v instanceof Collection) {
            ArrayNode a = NODES.arrayNode();
            for (Object e : (Collection<?>) v) {
                a.add(toJson(e));
            }
            return a;
        }
        if (v instanceof Map) {
            ObjectNode o = NODES.objectNode();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                o.set(e.getKey().toString(), toJson(e.getValue()));
            }
            return o;
        }
        throw new IllegalArgumentException("the deserializer gave a " + v.getClass().getName() + ": " + v);
    }
}
