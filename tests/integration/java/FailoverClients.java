import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java clients while brokers stop, in one JVM, in two phases the test drives through
 * stdin and stdout:
 *
 * 1. An idempotent acks=all producer sends COUNT numbered records round the partitions
 *    (record i to partition i % PARTITIONS). A third of the way it prints
 *    "phase=produce" and keeps sending; two thirds of the way it waits (at most 90 s)
 *    for the line "resumed" (the test has stopped the leader's broker and started it
 *    again meanwhile), then sends the rest and waits for every acknowledgement.
 * 2. A consumer group member reads the topic, committing after every poll. A third of
 *    the way it prints "phase=group" and waits for the line "stopped" (the test has
 *    stopped the group coordinator's broker), then reads and commits to the end.
 *
 * Prints "key=value" lines for the test to check.
 * Usage: FailoverClients BOOTSTRAP TOPIC PARTITIONS COUNT GROUP
 */
public class FailoverClients {
    private static final BlockingQueue<String> INPUT = new LinkedBlockingQueue<>();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[4];
        int partitions = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                for (String line; (line = in.readLine()) != null; ) {
                    INPUT.add(line.trim());
                }
            } catch (Exception e) {
                INPUT.add("eof");
            }
        });
        reader.setDaemon(true);
        reader.start();
        produce(bootstrap, topic, partitions, count);
        consume(bootstrap, topic, partitions, count, group);
    }

    private static void await(String expected) throws InterruptedException {
        String got = INPUT.poll(90, TimeUnit.SECONDS);
        if (!expected.equals(got)) {
            throw new IllegalStateException("expected " + expected + " on stdin, got " + got);
        }
    }

    private static String value(int i) {
        return String.format("%06d", i);
    }

    static void produce(String bootstrap, String topic, int partitions, int count)
            throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "2");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                if (i == count / 3) {
                    System.out.println("phase=produce");
                    System.out.flush();
                }
                if (i == 2 * count / 3) {
                    await("resumed");
                }
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, null,
                                                            value(i))));
                if (i % 2 == 0) {
                    Thread.sleep(1);  // spread the sends over the stop and the start
                }
            }
            producer.flush();
        }
        // Each partition's acknowledged offsets run 0, 1, 2, ... in the order sent.
        Map<Integer, Long> next = new HashMap<>();
        int acked = 0, gaps = 0;
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata md = f.get(120, TimeUnit.SECONDS);
            long want = next.getOrDefault(md.partition(), 0L);
            if (md.offset() != want) {
                gaps++;
            }
            next.put(md.partition(), md.offset() + 1);
            acked++;
        }
        System.out.println("acked=" + acked);
        System.out.println("offset.gaps=" + gaps);
        System.out.flush();
    }

    static void consume(String bootstrap, String topic, int partitions, int count,
                        String group) throws Exception {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Set<String> seen = new HashSet<>();
        int records = 0, commitFailures = 0;
        boolean paused = false;
        Set<TopicPartition> all = new HashSet<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(topic, p));
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 120_000;
            while (seen.size() < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : batch) {
                    seen.add(r.value());
                    records++;
                }
                if (!batch.isEmpty()) {
                    try {
                        consumer.commitSync(Duration.ofSeconds(10));
                    } catch (Exception e) {
                        commitFailures++;  // retried with the next poll's commit
                    }
                }
                if (!paused && seen.size() >= count / 3) {
                    paused = true;
                    System.out.println("phase=group");
                    System.out.flush();
                    await("stopped");
                }
            }
            boolean committed = false;
            for (int i = 0; i < 20 && !committed; i++) {
                try {
                    consumer.commitSync(Duration.ofSeconds(10));
                    committed = true;
                } catch (Exception e) {
                    commitFailures++;
                    Thread.sleep(500);
                }
            }
            Map<TopicPartition, OffsetAndMetadata> done =
                consumer.committed(all, Duration.ofSeconds(30));
            for (TopicPartition tp : all) {
                OffsetAndMetadata om = done.get(tp);
                System.out.println("committed." + tp.partition() + "="
                                   + (om == null ? -1 : om.offset()));
            }
        }
        System.out.println("consumed.distinct=" + seen.size());
        System.out.println("consumed.records=" + records);
        System.out.println("commit.failures=" + commitFailures);
        System.out.flush();
    }
}
