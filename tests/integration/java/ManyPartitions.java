import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A Java consumer reading every partition of a topic with PARTITIONS partitions: the topic
 * is created, one record written to each of the first WRITTEN partitions, the consumer
 * assigned all of them from the beginning; while it polls, a second round of records is
 * written to a few partitions. Prints "read=N" (records consumed) and "seconds=S".
 * Usage: ManyPartitions BOOTSTRAP TOPIC PARTITIONS WRITTEN
 */
public class ManyPartitions {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), written = Integer.parseInt(args[3]);
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        long start = System.currentTimeMillis();
        int read = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p);
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            for (int i = 0; i < written; i++) {
                producer.send(new ProducerRecord<>(topic, i, "k", "first " + i));
            }
            producer.flush();
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 60000;
            boolean second = false;
            while (read < written + 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    read++;
                }
                if (!second && read >= written) {
                    second = true;
                    for (int i = 0; i < 5; i++) {
                        producer.send(new ProducerRecord<>(topic, partitions - 1 - i, "k", "again"));
                    }
                    producer.flush();
                }
            }
            // A few more polls with nothing new: each is an incremental fetch.
            for (int i = 0; i < 5; i++) {
                consumer.poll(Duration.ofMillis(200));
            }
        }
        System.out.println("read=" + read);
        System.out.println("seconds=" + (System.currentTimeMillis() - start) / 1000.0);
    }
}
