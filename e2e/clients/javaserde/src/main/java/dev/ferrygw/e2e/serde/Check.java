package dev.ferrygw.e2e.serde;

import io.confluent.kafka.serializers.KafkaAvroSerializer;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Prints the versions in use and the jars they load from: Confluent's serializer, Avro, and the
 * Kafka client (which must be kafka-clients 4.4.0, not the copy inside the shaded serde jar).
 */
public final class Check {
    private Check() {}

    public static void main(String[] args) throws IOException {
        System.out.printf(
                "kafka-avro-serializer %s (%s), avro %s, kafka-clients %s (%s)%n",
                pomVersion("io.confluent", "kafka-avro-serializer"),
                jarOf(KafkaAvroSerializer.class),
                pomVersion("org.apache.avro", "avro"),
                AppInfoParser.getVersion(),
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

    static String jarOf(Class<?> c) {
        String loc = c.getProtectionDomain().getCodeSource().getLocation().getPath();
        return loc.substring(loc.lastIndexOf('/') + 1);
    }
}
