package dev.ferrygw.e2e.protoserde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.confluent.kafka.schemaregistry.client.CachedSchemaRegistryClient;
import io.confluent.kafka.schemaregistry.client.SchemaMetadata;
import io.confluent.kafka.schemaregistry.client.rest.entities.SchemaReference;
import io.confluent.kafka.schemaregistry.protobuf.ProtobufSchema;
import io.confluent.kafka.serializers.protobuf.KafkaProtobufDeserializer;
import io.confluent.kafka.serializers.protobuf.KafkaProtobufSerializer;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces Protobuf messages serialized by Confluent's KafkaProtobufSerializer and consumes them
 * back with its KafkaProtobufDeserializer, both talking to the Schema Registry at REGISTRY_URL over
 * REST. The serdes implement the Kafka Serializer interface of the kafka-clients copy relocated
 * inside their shaded jar (pom.xml), so they are called directly and the bytes travel through
 * kafka-clients 4.4.0 with byte-array serdes.
 *
 * <p>Usage: {@code ProtobufRoundTrip BOOTSTRAP REGISTRY_URL TOPIC MODE [PROTO] < RECORDS_JSON}
 *
 * <p>MODE is "auto" (auto.register.schemas=true: the messages are DynamicMessages of PROTO's first
 * message, parsed by Confluent's ProtobufSchema with the well-known files it imports, and the
 * serializer registers those files and then PROTO under TOPIC-value), "latest" (auto.register.schemas=false, use.latest.version=true: the messages are
 * of the first message of TOPIC-value's latest version, read with the registry client as an
 * application without generated classes would, and the serializer frames them with that version)
 * or "consume" (nothing produced: as many records as RECORDS_JSON lists are consumed, e.g. rows
 * another writer wrote). RECORDS_JSON is a JSON list of messages in the Protobuf JSON mapping.
 *
 * <p>Prints one JSON object: "produced" (each record's partition and offset, the schema id and
 * message indexes the serializer framed it with, or its error) and "consumed" (as many records as
 * were produced, or in "consume" mode listed, read back from partition 0: each one's offset and
 * the deserializer's message in the JSON mapping with the schema's field names, or an error).
 */
public final class ProtobufRoundTrip {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private ProtobufRoundTrip() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || (args[3].equals("auto") && args.length < 5)) {
            System.err.println("usage: ProtobufRoundTrip BOOTSTRAP REGISTRY_URL TOPIC auto|latest|consume [PROTO] < RECORDS_JSON");
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
            Map<String, Object> conf = new HashMap<>();
            conf.put("schema.registry.url", url);
            Descriptors.Descriptor type;
            switch (mode) {
                case "auto":
                    conf.put("auto.register.schemas", true);
                    type = withWellKnownImports(args[4]).toDescriptor();
                    break;
                case "latest":
                    conf.put("auto.register.schemas", false);
                    conf.put("use.latest.version", true);
                    SchemaMetadata latest = new CachedSchemaRegistryClient(url, 10).getLatestSchemaMetadata(topic + "-value");
                    out.put("latest_id", latest.getId());
                    type = new ProtobufSchema(latest.getSchema()).toDescriptor();
                    break;
                default:
                    System.err.println("unknown mode " + mode);
                    System.exit(2);
                    return;
            }
            out.put("schema", new ProtobufSchema(type).canonicalString());
            produce(bootstrap, topic, conf, type, records, produced);
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

    private static final Pattern IMPORT = Pattern.compile("import\\s+\"(google/protobuf/[a-z_]+\\.proto)\"");

    /**
     * PROTO parsed with the well-known files it imports: 5.5.3's ProtobufSchema has no copies of
     * them, so they come from protobuf-java's own descriptors, as an application's generated
     * classes link to them. The serializer registers each under a subject named after it.
     */
    static ProtobufSchema withWellKnownImports(String proto) {
        Map<String, Descriptors.Descriptor> known = Map.of(
                "google/protobuf/timestamp.proto", com.google.protobuf.Timestamp.getDescriptor(),
                "google/protobuf/duration.proto", com.google.protobuf.Duration.getDescriptor(),
                "google/protobuf/wrappers.proto", com.google.protobuf.Int32Value.getDescriptor(),
                "google/protobuf/struct.proto", com.google.protobuf.Struct.getDescriptor(),
                "google/protobuf/empty.proto", com.google.protobuf.Empty.getDescriptor());
        List<SchemaReference> refs = new ArrayList<>();
        Map<String, String> resolved = new HashMap<>();
        Matcher m = IMPORT.matcher(proto);
        while (m.find()) {
            Descriptors.Descriptor d = known.get(m.group(1));
            if (d == null) {
                throw new IllegalArgumentException("no copy of " + m.group(1) + " here");
            }
            refs.add(new SchemaReference(m.group(1), m.group(1), null));
            resolved.put(m.group(1), new ProtobufSchema(d).canonicalString());
        }
        return new ProtobufSchema(proto, refs, resolved, null, null);
    }

    private static void produce(String bootstrap, String topic, Map<String, Object> serdeConf, Descriptors.Descriptor type,
            JsonNode records, ArrayNode produced) throws Exception {
        KafkaProtobufSerializer<Message> serializer = new KafkaProtobufSerializer<>();
        serializer.configure(serdeConf, false);
        Map<String, Object> conf = new HashMap<>();
        conf.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ProducerConfig.ACKS_CONFIG, "all");
        conf.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        conf.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(conf)) {
            for (int i = 0; i < records.size(); i++) {
                DynamicMessage.Builder b = DynamicMessage.newBuilder(type);
                JsonFormat.parser().merge(MAPPER.writeValueAsString(records.get(i)), b);
                ObjectNode r = produced.addObject();
                byte[] value;
                try {
                    value = serializer.serialize(topic, b.build());
                } catch (RuntimeException e) {
                    r.put("error", e + causes(e));
                    sent.add(null);
                    continue;
                }
                framing(value, r);
                sent.add(p.send(new ProducerRecord<>(topic, 0, null, value)));
            }
            p.flush();
            for (int i = 0; i < sent.size(); i++) {
                if (sent.get(i) == null) {
                    continue;
                }
                ObjectNode r = (ObjectNode) produced.get(i);
                try {
                    RecordMetadata md = sent.get(i).get(60, TimeUnit.SECONDS);
                    r.put("partition", md.partition()).put("offset", md.offset());
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    r.put("error", e.getCause() != null ? e.getCause().toString() : e.toString());
                }
            }
        } finally {
            serializer.close();
        }
    }

    private static void consume(String bootstrap, String url, String topic, int n, ArrayNode consumed) throws Exception {
        KafkaProtobufDeserializer<Message> deserializer = new KafkaProtobufDeserializer<>();
        deserializer.configure(Map.of("schema.registry.url", url), false);
        Map<String, Object> conf = new HashMap<>();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        conf.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        TopicPartition tp = new TopicPartition(topic, 0);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        JsonFormat.Printer printer = JsonFormat.printer().preservingProtoFieldNames();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(conf)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while (consumed.size() < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofSeconds(1))) {
                    ObjectNode o = consumed.addObject().put("offset", r.offset());
                    try {
                        Message m = deserializer.deserialize(topic, r.value());
                        framing(r.value(), o);
                        o.put("type", m.getDescriptorForType().getFullName());
                        o.set("value", MAPPER.readTree(printer.print(m)));
                    } catch (RuntimeException e) {
                        o.put("error", e + causes(e));
                    }
                }
            }
        } finally {
            deserializer.close();
        }
    }

    /**
     * Puts the schema id and message indexes of a framed value into o: magic byte 0, a 4-byte id,
     * then a zig-zag varint count and as many zig-zag varint indexes (a count of 0 means [0]).
     */
    static void framing(byte[] v, ObjectNode o) {
        ByteBuffer b = ByteBuffer.wrap(v);
        o.put("magic", b.get());
        o.put("id", b.getInt());
        ArrayNode idx = o.putArray("indexes");
        int count = zigzag(b);
        if (count == 0) {
            idx.add(0);
        }
        for (int i = 0; i < count; i++) {
            idx.add(zigzag(b));
        }
        o.put("index_bytes", b.position() - 5);
    }

    private static int zigzag(ByteBuffer b) {
        int raw = 0;
        for (int shift = 0; ; shift += 7) {
            byte x = b.get();
            raw |= (x & 0x7f) << shift;
            if (x >= 0) {
                break;
            }
        }
        return (raw >>> 1) ^ -(raw & 1);
    }

    private static String causes(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            b.append(": ").append(c);
        }
        return b.toString();
    }
}
