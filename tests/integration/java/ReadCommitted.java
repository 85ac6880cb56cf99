import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KafkaConsumer with the given isolation.level reads partition 0 of TOPIC from the
 * beginning until a record with value LAST arrives, and prints what it read and the end
 * offset it was told.
 * Usage: ReadCommitted BOOTSTRAP TOPIC ISOLATION LAST
 */
public class ReadCommitted {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], isolation = args[2], last = args[3];
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "300");  // several fetches
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(Collections.singletonList(tp));
            consumer.seekToBeginning(Collections.singletonList(tp));
            long deadline = System.currentTimeMillis() + 30000;
            boolean done = false;
            while (!done && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                    offsets.add(r.offset());
                    done |= r.value().equals(last);
                }
            }
            System.out.println("end.offset=" + consumer.endOffsets(Collections.singletonList(tp)).get(tp));
        }
        System.out.println("values=" + String.join(",", values));
        List<String> os = new ArrayList<>();
        for (Long o : offsets) os.add(o.toString());
        System.out.println("offsets=" + String.join(",", os));
    }
}
