import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Kafka's Java share consumer and the Admin client's share-group APIs against a broker:
 * a KafkaShareConsumer in implicit acknowledgement mode reads every record once; one in
 * explicit mode releases one record (delivered again with delivery count 2), rejects one
 * and accepts the rest; while it is in its group Admin lists share groups, describes the
 * group and lists its offsets, and altering them is refused; once it left, the offsets are
 * altered, listed and deleted. Prints "key=value" lines for the test to check.
 * Usage: ShareGroups BOOTSTRAP TOPIC COUNT
 */
public class ShareGroups {

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group,
                                                       String mode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "java-share-" + mode);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    /** Poll until at least {@code atLeast} records came or {@code ms} passed. */
    static List<ConsumerRecord<String, String>> poll(KafkaShareConsumer<String, String> c,
                                                     int atLeast, long ms) {
        long deadline = System.currentTimeMillis() + ms;
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        while (got.size() < atLeast && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                got.add(r);
            }
        }
        return got;
    }

    static void earliest(Admin admin, String group) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
            .all().get();
    }

    static String offsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin.listShareGroupOffsets(
            Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
        Map<String, String> sorted = new TreeMap<>();
        got.forEach((tp, info) -> sorted.put(tp.toString(), info == null ? "null"
            : info.startOffset() + "/" + info.lag().map(String::valueOf).orElse("-")));
        return sorted.toString();
    }

    static String error(Runnable r) {
        try {
            r.run();
            return "none";
        } catch (RuntimeException e) {
            Throwable cause = e.getCause() instanceof ExecutionException
                ? e.getCause().getCause() : e.getCause();
            return (cause == null ? e : cause).getClass().getSimpleName();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        String implicitGroup = topic + "-implicit";
        String explicitGroup = topic + "-explicit";
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            earliest(admin, implicitGroup);
            earliest(admin, explicitGroup);

            try (KafkaShareConsumer<String, String> c = consumer(bootstrap, implicitGroup,
                                                                 "implicit")) {
                c.subscribe(List.of(topic));
                List<ConsumerRecord<String, String>> got = poll(c, count, 30_000);
                c.commitSync();
                System.out.println("implicit.count=" + got.size());
                System.out.println("implicit.max_delivery=" + got.stream()
                    .mapToInt(r -> r.deliveryCount().orElse((short) 0)).max().orElse(0));
                System.out.println("implicit.again=" + poll(c, 1, 3_000).size());
            }

            KafkaShareConsumer<String, String> c = consumer(bootstrap, explicitGroup, "explicit");
            c.subscribe(List.of(topic));
            // Explicit mode: every record of a poll is acknowledged before the next poll
            // (a ShareFetch may hold one partition's records only). In the poll that
            // completes the count, the first record is released and the second rejected;
            // every other record is accepted.
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            ConsumerRecord<String, String> released = null;
            long until = System.currentTimeMillis() + 30_000;
            while (got.size() < count && System.currentTimeMillis() < until) {
                List<ConsumerRecord<String, String>> batch = new ArrayList<>();
                c.poll(Duration.ofMillis(200)).forEach(batch::add);
                boolean last = got.size() + batch.size() >= count;
                for (int i = 0; i < batch.size(); i++) {
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (last && i == 0) {
                        type = AcknowledgeType.RELEASE;
                        released = batch.get(i);
                    } else if (last && i == 1) {
                        type = AcknowledgeType.REJECT;
                    }
                    c.acknowledge(batch.get(i), type);
                }
                got.addAll(batch);
            }
            System.out.println("explicit.count=" + got.size());
            System.out.println("explicit.commit_errors=" + c.commitSync().values().stream()
                .filter(Optional::isPresent).count());
            List<ConsumerRecord<String, String>> again = poll(c, 1, 30_000);
            System.out.println("explicit.redelivered=" + (again.isEmpty() ? "none"
                : again.get(0).value() + "/" + again.get(0).deliveryCount().orElse((short) 0)));
            System.out.println("explicit.released=" + released.value());
            for (ConsumerRecord<String, String> r : again) {
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            c.commitSync();

            Collection<GroupListing> listed = admin.listGroups(ListGroupsOptions.forShareGroups())
                .all().get();
            System.out.println("listed=" + new TreeMap<>(listed.stream().collect(
                java.util.stream.Collectors.toMap(GroupListing::groupId,
                    g -> g.type().map(Object::toString).orElse("?") + "/"
                        + g.groupState().map(Object::toString).orElse("?")))));
            ShareGroupDescription d = admin.describeShareGroups(List.of(explicitGroup))
                .describedGroups().get(explicitGroup).get();
            System.out.println("describe.state=" + d.groupState());
            System.out.println("describe.members=" + d.members().size());
            ShareMemberDescription m = d.members().iterator().next();
            System.out.println("describe.client=" + m.clientId());
            System.out.println("describe.partitions=" + m.assignment().topicPartitions().size());
            System.out.println("offsets.live=" + offsets(admin, explicitGroup));
            TopicPartition tp0 = new TopicPartition(topic, 0);
            System.out.println("alter.busy=" + error(() -> {
                try {
                    admin.alterShareGroupOffsets(explicitGroup, Map.of(tp0, 0L)).all().get();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }));
            c.close();

            System.out.println("describe.after_close=" + admin.describeShareGroups(
                List.of(explicitGroup)).describedGroups().get(explicitGroup).get().groupState());
            admin.alterShareGroupOffsets(explicitGroup, Map.of(tp0, 0L)).all().get();
            System.out.println("offsets.altered=" + offsets(admin, explicitGroup));
            admin.deleteShareGroupOffsets(explicitGroup, Set.of(topic)).all().get();
            System.out.println("offsets.deleted=" + offsets(admin, explicitGroup));
        }
    }
}
