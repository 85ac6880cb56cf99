import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KIP-848 group member with Kafka's own client (group.protocol=consumer), for the
 * kafkalite integration tests, or a describer of the group through Admin.
 *
 *   member BOOTSTRAP GROUP TOPIC: consume and commit until SIGTERM, then close; every
 *     assignment change is printed as group_member.py --timeline prints it, and
 *     consumed=N / committed=TOPIC-P:OFFSET,... lines as they move.
 *   describe BOOTSTRAP GROUP: describeConsumerGroups, printed as key=value lines.
 */
public class ConsumerProtocolMember {
    static volatile boolean stop = false;

    static String parts(Collection<TopicPartition> parts) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : parts) {
            out.add("[\"" + tp.topic() + "\", " + tp.partition() + "]");
        }
        return "[" + String.join(", ", out) + "]";
    }

    static void event(String kind, Collection<TopicPartition> parts) {
        System.out.println("{\"t\": " + (System.currentTimeMillis() / 1000.0) + ", \"event\": \""
            + kind + "\", \"parts\": " + parts(parts) + "}");
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("describe")) {
            describe(args[1], args[2]);
            return;
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-kip848");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            consumer.wakeup();
            try {
                main.join(30000);
            } catch (InterruptedException e) {
                // exiting anyway
            }
        }));
        consumer.subscribe(List.of(args[3]), new ConsumerRebalanceListener() {
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                if (!parts.isEmpty()) event("assign", parts);
            }

            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                if (!parts.isEmpty()) event("revoke", parts);
            }

            public void onPartitionsLost(Collection<TopicPartition> parts) {
                if (!parts.isEmpty()) event("revoke", parts);
            }
        });
        long consumed = 0;
        Map<String, Long> committed = new TreeMap<>();
        try {
            while (!stop) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                if (records.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> offsets = new TreeMap<>(
                    (a, b) -> a.toString().compareTo(b.toString()));
                for (ConsumerRecord<String, String> r : records) {
                    consumed++;
                    offsets.put(new TopicPartition(r.topic(), r.partition()),
                                new OffsetAndMetadata(r.offset() + 1));
                }
                consumer.commitSync(offsets);
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    committed.put(e.getKey().toString(), e.getValue().offset());
                }
                System.out.println("consumed=" + consumed);
                List<String> c = new ArrayList<>();
                for (Map.Entry<String, Long> e : committed.entrySet()) {
                    c.add(e.getKey() + ":" + e.getValue());
                }
                System.out.println("committed=" + String.join(",", c));
                System.out.flush();
            }
        } catch (WakeupException e) {
            // SIGTERM
        } finally {
            consumer.close(Duration.ofSeconds(20));
            System.out.println("{\"closed\": true}");
            System.out.flush();
        }
    }

    static void describe(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get();
            System.out.println("group=" + d.groupId());
            System.out.println("type=" + d.type());
            System.out.println("state=" + d.groupState());
            System.out.println("assignor=" + d.partitionAssignor());
            System.out.println("members=" + d.members().size());
            int i = 0;
            for (MemberDescription m : d.members()) {
                String prefix = "member." + i++ + ".";
                System.out.println(prefix + "id=" + m.consumerId());
                System.out.println(prefix + "client=" + m.clientId());
                System.out.println(prefix + "assignment=" + parts(m.assignment().topicPartitions()));
                System.out.println(prefix + "target=" + (m.targetAssignment().isPresent()
                    ? parts(m.targetAssignment().get().topicPartitions()) : "none"));
                System.out.println(prefix + "epoch=" + m.memberEpoch().map(String::valueOf).orElse("none"));
                System.out.println(prefix + "upgraded=" + m.upgraded().map(String::valueOf).orElse("none"));
            }
        }
    }
}
