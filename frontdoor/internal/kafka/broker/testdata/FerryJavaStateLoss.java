import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One idempotent producer (default settings) across a loss of broker-side
 * producer state: sends count records one by one, prints "HALF", waits for a
 * line on stdin (the test makes frontdoor forget its producers meanwhile),
 * sends count more with the same producer, prints "OK offset...".
 * Usage: bootstrap topic partition count
 */
public class FerryJavaStateLoss {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "java-state-loss");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "20");
        int partition = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        StringBuilder out = new StringBuilder("OK");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int half = 0; half < 2; half++) {
                for (int i = 0; i < count; i++) {
                    String value = String.format("java-%04d", half * count + i);
                    out.append(' ').append(producer.send(new ProducerRecord<>(args[1], partition, null, value)).get().offset());
                }
                if (half == 0) {
                    System.out.println("HALF");
                    System.out.flush();
                    in.readLine();
                }
            }
        } catch (Exception e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            System.out.println("ERR " + c.getClass().getName() + ": " + c.getMessage());
            System.exit(1);
        }
        System.out.println(out);
    }
}
