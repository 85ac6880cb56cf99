import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Java client's exactly-once loop: a read_committed KafkaConsumer in GROUP reads IN,
 * a transactional KafkaProducer writes "t-" + value to OUT and the consumer's positions
 * with sendOffsetsToTransaction(offsets, groupMetadata) in the same transaction; every
 * second transaction is aborted and its batch read again from the committed offsets.
 * Then read_committed and read_uncommitted consumers read OUT, and a second producer with
 * the same transactional id fences a first one.
 * Usage: Transactions BOOTSTRAP IN OUT GROUP
 */
public class Transactions {
    static Properties consumerProps(String bootstrap, String isolation) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return c;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static List<String> readAll(String bootstrap, String topic, String isolation, int expect) {
        List<String> values = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            c.assign(Collections.singletonList(tp));
            c.seekToBeginning(Collections.singletonList(tp));
            long deadline = System.currentTimeMillis() + 20000;
            while (values.size() < expect && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], in = args[1], out = args[2], group = args[3];
        Properties cp = consumerProps(bootstrap, "read_committed");
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2");
        TopicPartition inTp = new TopicPartition(in, 0);
        int written = 0, committedCount = 0, attempt = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
             KafkaProducer<String, String> producer = producer(bootstrap, "java-app")) {
            producer.initTransactions();
            consumer.subscribe(Collections.singletonList(in));
            long deadline = System.currentTimeMillis() + 60000;
            while (committedCount < 6 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                attempt++;
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, "t-" + r.value()));
                    written++;
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : records.partitions()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (attempt % 2 == 0) {
                    // Flushed first: an abort drops what the producer has not sent, and the
                    // aborted records are to be in the log for read_uncommitted to see.
                    producer.flush();
                    producer.abortTransaction();
                    OffsetAndMetadata last = consumer.committed(Collections.singleton(inTp)).get(inTp);
                    consumer.seek(inTp, last == null ? 0 : last.offset());
                    continue;
                }
                producer.commitTransaction();
                committedCount += records.count();
            }
            OffsetAndMetadata groupOffset = consumer.committed(Collections.singleton(inTp)).get(inTp);
            System.out.println("group-offset=" + (groupOffset == null ? -1 : groupOffset.offset()));
        }
        // The transaction admin APIs, as kafka-transactions.sh uses them.
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            List<String> listed = new ArrayList<>();
            for (TransactionListing t : admin.listTransactions().all().get()) {
                listed.add(t.transactionalId() + ":" + t.state());
            }
            Collections.sort(listed);
            System.out.println("listed=" + String.join(",", listed));
            TransactionDescription d = admin.describeTransactions(Collections.singleton("java-app"))
                .description("java-app").get();
            System.out.println("described=" + d.state() + ":" + d.producerEpoch() + ":"
                + d.topicPartitions().size());
            TopicPartition outTp = new TopicPartition(out, 0);
            List<ProducerState> producers = admin.describeProducers(Collections.singleton(outTp))
                .partitionResult(outTp).get().activeProducers();
            System.out.println("producers=" + producers.size() + ":"
                + (producers.isEmpty() ? "" : producers.get(0).currentTransactionStartOffset().isPresent()));
        }
        System.out.println("attempts=" + attempt);
        System.out.println("written=" + written);
        System.out.println("committed-values=" + String.join(",", readAll(bootstrap, out, "read_committed", 6)));
        System.out.println("uncommitted-count=" + readAll(bootstrap, out, "read_uncommitted", written).size());

        // Fencing: the second producer's initTransactions aborts the first one's transaction.
        try (KafkaProducer<String, String> first = producer(bootstrap, "java-fence")) {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(out + "-fence", "zombie")).get();
            try (KafkaProducer<String, String> second = producer(bootstrap, "java-fence")) {
                second.initTransactions();
                String fenced = "none";
                try {
                    first.commitTransaction();
                } catch (KafkaException e) {
                    Throwable t = e;
                    while (t.getCause() != null && !(t instanceof org.apache.kafka.common.errors.ProducerFencedException)) {
                        t = t.getCause();
                    }
                    fenced = t.getClass().getSimpleName();
                }
                System.out.println("fenced=" + fenced);
            }
        }
    }
}
