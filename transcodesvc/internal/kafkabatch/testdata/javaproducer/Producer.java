import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces the records on stdin, one per line as "timestamp|key|value", to
 * partition 0 of a topic with the unmodified Java client, so the fixture
 * generator can capture the record batch the client builds.
 * Usage: Producer BOOTSTRAP TOPIC CODEC
 */
public class Producer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args[2]);
        // One batch: wait long enough for every line, and make room for it.
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1000");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(4 << 20));
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(8 << 20));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] parts = line.split("\\|", 3);
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(args[1], 0, Long.parseLong(parts[0]),
                        parts[1].getBytes(StandardCharsets.UTF_8), parts[2].getBytes(StandardCharsets.UTF_8));
                r.headers().add("client", "java".getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
    }
}
