import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions through Ferry with the unmodified Java producer (e2e/suite transactions_test.go).
 * Modes:
 *   run BOOTSTRAP TXN_ID TOPIC_A TOPIC_B N GROUP: N transactions; transaction t writes ids t*10+0..3
 *     to TOPIC_A and t*10+5..6 to TOPIC_B, sends offset t+1 of TOPIC_A partition 0 for GROUP, and
 *     commits when t is even, aborts when odd.
 *   fence BOOTSTRAP TXN_ID TOPIC: a second producer with the same id fences the first, whose commit
 *     must fail with ProducerFencedException; the second commits id 1001.
 *   timeout BOOTSTRAP TXN_ID TOPIC: a transaction with a 2 s timeout is left open for 6 s; its
 *     commit must fail.
 *   badrecord BOOTSTRAP TXN_ID TOPIC: a transaction with a record the table refuses is aborted
 *     (id 3000 with it); the next one commits id 3001.
 * Prints one line: OK, FENCED or ABORTED, or FAIL with the reason.
 */
public final class FerryTxn {
  private FerryTxn() {}

  static KafkaProducer<String, String> producer(String bootstrap, String txnID, int timeoutMs) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("transactional.id", txnID);
    p.put("transaction.timeout.ms", Integer.toString(timeoutMs));
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("max.block.ms", "60000");
    return new KafkaProducer<>(p);
  }

  static ProducerRecord<String, String> row(String topic, long id, String name) {
    return new ProducerRecord<>(topic, null, "{\"id\": " + id + ", \"name\": \"" + name + "\"}");
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0], bootstrap = args[1], txnID = args[2];
    switch (mode) {
      case "run": {
        String a = args[3], b = args[4], group = args[6];
        int n = Integer.parseInt(args[5]);
        try (KafkaProducer<String, String> p = producer(bootstrap, txnID, 60000)) {
          p.initTransactions();
          for (int t = 0; t < n; t++) {
            boolean commit = t % 2 == 0;
            String name = commit ? "committed" : "aborted";
            p.beginTransaction();
            for (int j = 0; j < 4; j++) {
              p.send(row(a, t * 10 + j, name));
            }
            for (int j = 5; j < 7; j++) {
              p.send(row(b, t * 10 + j, name));
            }
            p.sendOffsetsToTransaction(
                Map.of(new TopicPartition(a, 0), new OffsetAndMetadata(t + 1)), new ConsumerGroupMetadata(group));
            if (commit) {
              p.commitTransaction();
            } else {
              p.flush();
              p.abortTransaction();
            }
          }
        }
        System.out.println("OK");
        return;
      }
      case "fence": {
        String topic = args[3];
        KafkaProducer<String, String> first = producer(bootstrap, txnID, 60000);
        first.initTransactions();
        first.beginTransaction();
        first.send(row(topic, 1000, "zombie")).get();
        try (KafkaProducer<String, String> second = producer(bootstrap, txnID, 60000)) {
          second.initTransactions();
          second.beginTransaction();
          second.send(row(topic, 1001, "current")).get();
          second.commitTransaction();
        }
        try {
          first.commitTransaction();
          System.out.println("FAIL: the fenced producer committed");
        } catch (org.apache.kafka.common.errors.ProducerFencedException e) {
          System.out.println("FENCED");
        } catch (Exception e) {
          System.out.println("FAIL: " + e);
        } finally {
          first.close(java.time.Duration.ofSeconds(5));
        }
        return;
      }
      case "timeout": {
        String topic = args[3];
        try (KafkaProducer<String, String> p = producer(bootstrap, txnID, 2000)) {
          p.initTransactions();
          p.beginTransaction();
          p.send(row(topic, 2000, "expired")).get();
          Thread.sleep(6000);
          try {
            p.commitTransaction();
            System.out.println("FAIL: a timed-out transaction committed");
          } catch (Exception e) {
            System.out.println("ABORTED " + e.getClass().getSimpleName());
          }
        }
        return;
      }
      case "badrecord": {
        // A record the table refuses (INVALID_RECORD) is an abortable error: the transaction is
        // aborted and the next one, after the client's epoch bump (KIP-360), commits.
        String topic = args[3];
        try (KafkaProducer<String, String> p = producer(bootstrap, txnID, 60000)) {
          p.initTransactions();
          p.beginTransaction();
          p.send(row(topic, 3000, "aborted"));
          p.send(new ProducerRecord<>(topic, null, "not json"));
          try {
            p.commitTransaction();
            System.out.println("FAIL: a transaction with a refused record committed");
            return;
          } catch (org.apache.kafka.common.KafkaException e) {
            p.abortTransaction();
          }
          p.beginTransaction();
          p.send(row(topic, 3001, "committed"));
          p.commitTransaction();
        }
        System.out.println("OK");
        return;
      }
      default:
        System.out.println("FAIL: unknown mode " + mode);
    }
  }
}
