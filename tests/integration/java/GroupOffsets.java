import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A consumer group round trip against a broker: subscribe, poll, commitSync, close; then a
 * second consumer of the same group resumes, and Admin describes the group while it is in.
 * Prints "key=value" lines for the test to check.
 * Usage: GroupOffsets BOOTSTRAP TOPIC GROUP COUNT
 */
public class GroupOffsets {
    static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-offsets");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    static ConsumerRecord<String, String> firstRecord(KafkaConsumer<String, String> c, long deadline) {
        while (System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<String, String> r : recs) {
                return r;
            }
        }
        throw new IllegalStateException("no record before the deadline");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int count = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 40_000;
        TopicPartition tp = new TopicPartition(topic, 0);

        try (KafkaConsumer<String, String> c = consumer(bootstrap, group)) {
            c.subscribe(Collections.singletonList(topic));
            ConsumerRecord<String, String> first = firstRecord(c, deadline);
            System.out.println("first.offset=" + first.offset());
            c.commitSync(Map.of(tp, new OffsetAndMetadata(count, "java-meta")));
            System.out.println("committed=" + c.committed(Collections.singleton(tp)).get(tp).offset());
        }

        try (KafkaConsumer<String, String> c = consumer(bootstrap, group);
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            c.subscribe(Collections.singletonList(topic));
            ConsumerRecord<String, String> resumed = firstRecord(c, deadline);
            System.out.println("resumed.offset=" + resumed.offset());
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
            System.out.println("describe.state=" + d.groupState());
            System.out.println("describe.members=" + d.members().size());
            System.out.println("describe.assignor=" + d.partitionAssignor());
            Collection<TopicPartition> assigned = d.members().iterator().next().assignment().topicPartitions();
            System.out.println("describe.assigned=" + assigned);
            System.out.println("describe.client=" + d.members().iterator().next().clientId());
        }
    }
}
