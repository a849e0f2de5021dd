import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produces records with the Java client for frontdoor's compatibility test.
 * Usage: bootstrap topic partition count acks compression idempotence(true|false|default) [user pass]
 * Prints "OK offset..." or "ERR class: message"; exits 0 on success.
 */
public class FerryJavaProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.ACKS_CONFIG, args[4]);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args[5]);
        if (!args[6].equals("default")) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, args[6]);
        }
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-compat");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        if (args.length > 8) {
            p.put("security.protocol", "SASL_PLAINTEXT");
            p.put("sasl.mechanism", "PLAIN");
            p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                    + args[7] + "\" password=\"" + args[8] + "\";");
        }
        int partition = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        StringBuilder out = new StringBuilder("OK");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String value = "java-" + args[5] + "-" + i + "-" + "x".repeat(200);
                futures.add(producer.send(new ProducerRecord<>(args[1], partition, null, value)));
            }
            for (Future<RecordMetadata> f : futures) {
                out.append(' ').append(f.get().offset());
            }
        } catch (Exception e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            System.out.println("ERR " + c.getClass().getName() + ": " + c.getMessage());
            System.exit(1);
        }
        System.out.println(out);
    }
}
