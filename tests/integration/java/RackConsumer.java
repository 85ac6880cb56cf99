import java.time.Duration;
import java.util.Collections;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KafkaConsumer with client.rack RACK reads partition 0 of TOPIC from the beginning
 * until it has COUNT records (at most 60 s), and prints how many it read, whether their
 * offsets ran 0, 1, 2 ... without a gap, and the last value.
 * Usage: RackConsumer BOOTSTRAP TOPIC RACK COUNT
 */
public class RackConsumer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], rack = args[2];
        int count = Integer.parseInt(args[3]);
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.CLIENT_RACK_CONFIG, rack);
        c.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "2000");  // several fetches
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, 0);
        int read = 0;
        boolean inOrder = true;
        String last = "";
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(Collections.singletonList(tp));
            consumer.seekToBeginning(Collections.singletonList(tp));
            long deadline = System.currentTimeMillis() + 60000;
            while (read < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    inOrder &= r.offset() == read;
                    read++;
                    last = r.value();
                }
            }
        }
        System.out.println("read=" + read);
        System.out.println("in.order=" + inOrder);
        System.out.println("last=" + last);
    }
}
