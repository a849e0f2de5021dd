package dev.ferrygw.e2e.protoserde;

import io.confluent.kafka.serializers.protobuf.KafkaProtobufSerializer;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * Prints the versions in use and the jars they load from: Confluent's Protobuf serializer,
 * protobuf-java, and the Kafka client (kafka-clients 4.4.0; the shaded jar's own copy is relocated).
 */
public final class Check {
    private Check() {}

    public static void main(String[] args) throws IOException {
        System.out.printf(
                "kafka-protobuf-serializer %s (%s), protobuf-java %s, kafka-clients %s (%s)%n",
                pomVersion("io.confluent", "kafka-protobuf-serializer"),
                jarOf(KafkaProtobufSerializer.class),
                pomVersion("com.google.protobuf", "protobuf-java"),
                kafkaVersion(),
                jarOf(KafkaProducer.class));
    }

    static String pomVersion(String group, String artifact) throws IOException {
        String path = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = Check.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        }
    }

    /** The version kafka-clients' own jar names, read from the jar KafkaProducer loads from. */
    static String kafkaVersion() throws IOException {
        URL jar = KafkaProducer.class.getProtectionDomain().getCodeSource().getLocation();
        try (InputStream in = new URL("jar:" + jar + "!/kafka/kafka-version.properties").openStream()) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        }
    }

    static String jarOf(Class<?> c) {
        String loc = c.getProtectionDomain().getCodeSource().getLocation().getPath();
        return loc.substring(loc.lastIndexOf('/') + 1);
    }
}
