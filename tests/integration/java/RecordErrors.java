import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java producer writes COUNT records to partition 0 of TOPIC in one batch, every
 * EVERY-th without a key, and reports what became of each.
 * Prints "key=value" lines: the indices that failed with each exception class, the first
 * message of each class, and how many were delivered.
 * Usage: RecordErrors BOOTSTRAP TOPIC COUNT EVERY
 */
public class RecordErrors {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]), every = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1000");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "1000000");
        p.put(ProducerConfig.RETRIES_CONFIG, "0");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        TreeMap<String, List<Integer>> failed = new TreeMap<>();
        TreeMap<String, String> messages = new TreeMap<>();
        int delivered = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String key = i % every == every - 1 ? null : "k" + i;
                sent.add(producer.send(new ProducerRecord<>(topic, 0, key, "v" + i)));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                try {
                    sent.get(i).get();
                    delivered++;
                } catch (ExecutionException e) {
                    String cls = e.getCause().getClass().getSimpleName();
                    failed.computeIfAbsent(cls, k -> new ArrayList<>()).add(i);
                    messages.putIfAbsent(cls, String.valueOf(e.getCause().getMessage()));
                }
            }
        }
        System.out.println("delivered=" + delivered);
        for (String cls : failed.keySet()) {
            System.out.println("failed." + cls + "=" + failed.get(cls));
            System.out.println("message." + cls + "=" + messages.get(cls));
        }
    }
}
