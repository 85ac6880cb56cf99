import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

/**
 * The Java Admin's calls for the cluster admin APIs, against kafkalite; prints "key=value"
 * lines for the test to read. Usage: AdminApis BOOTSTRAP COMMAND ARGS... [+ COMMAND ARGS...]
 *   describe-topics LIMIT TOPIC...   TopicDescription of each (DescribeTopicPartitions)
 *   quorum                           describeMetadataQuorum
 *   client-metrics                   listClientMetricsResources
 *   log-dirs TOPIC OTHER_DIR         describeLogDirs, then alterReplicaLogDirs of TOPIC-0
 *                                    to the broker's directory and to OTHER_DIR
 *   quotas                           alterClientQuotas, then describeClientQuotas
 *   features                         describeFeatures and updateFeatures
 * An error prints "KEY=error:ExceptionClassName".
 */
public class AdminApis {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            List<String> command = new ArrayList<>();
            for (int i = 1; i <= args.length; i++) {
                if (i == args.length || args[i].equals("+")) {
                    run(admin, command.toArray(new String[0]));
                    command.clear();
                } else {
                    command.add(args[i]);
                }
            }
        }
    }

    static void run(Admin admin, String[] args) throws Exception {
        switch (args[0]) {
            case "describe-topics" -> describeTopics(admin, args);
            case "quorum" -> quorum(admin);
            case "client-metrics" -> System.out.println("client-metrics="
                + admin.listConfigResources(Set.of(ConfigResource.Type.CLIENT_METRICS),
                    new ListConfigResourcesOptions()).all().get().size());
            case "log-dirs" -> logDirs(admin, args[1], args[2]);
            case "quotas" -> quotas(admin);
            case "features" -> features(admin);
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    static String error(ExecutionException e) {
        return "error:" + e.getCause().getClass().getSimpleName();
    }

    static void describeTopics(Admin admin, String[] args) throws Exception {
        List<String> names = new ArrayList<>();
        for (int i = 2; i < args.length; i++) names.add(args[i]);
        DescribeTopicsOptions options = new DescribeTopicsOptions()
            .partitionSizeLimitPerResponse(Integer.parseInt(args[1]));
        Map<String, org.apache.kafka.common.KafkaFuture<TopicDescription>> futures =
            admin.describeTopics(names, options).topicNameValues();
        for (String name : names) {
            try {
                TopicDescription d = futures.get(name).get();
                StringBuilder parts = new StringBuilder();
                for (TopicPartitionInfo tp : d.partitions()) {
                    parts.append(tp.partition()).append(':').append(tp.leader().id())
                        .append(':').append(tp.replicas().size()).append(':')
                        .append(tp.isr().size()).append(',');
                }
                System.out.println(name + "=" + d.topicId() + ";" + d.isInternal() + ";" + parts);
            } catch (ExecutionException e) {
                System.out.println(name + "=" + error(e));
            }
        }
    }

    static void quorum(Admin admin) throws Exception {
        QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
        System.out.println("leader=" + q.leaderId());
        System.out.println("epoch=" + q.leaderEpoch());
        System.out.println("hw=" + q.highWatermark());
        StringBuilder voters = new StringBuilder();
        for (QuorumInfo.ReplicaState v : q.voters()) {
            voters.append(v.replicaId()).append(':').append(v.logEndOffset()).append(':')
                .append(v.lastCaughtUpTimestamp().isPresent()).append(',');
        }
        System.out.println("voters=" + voters);
        System.out.println("observers=" + q.observers().size());
        System.out.println("nodes=" + q.nodes().keySet());
    }

    static void logDirs(Admin admin, String topic, String other) throws Exception {
        Map<Integer, Map<String, LogDirDescription>> all =
            admin.describeLogDirs(Collections.singleton(1)).allDescriptions().get();
        Map<String, LogDirDescription> dirs = all.get(1);
        String dir = dirs.keySet().iterator().next();
        System.out.println("dirs=" + dirs.size());
        System.out.println("dir=" + dir);
        LogDirDescription d = dirs.get(dir);
        ReplicaInfo r = d.replicaInfos().get(new TopicPartition(topic, 0));
        System.out.println("size=" + (r == null ? -1 : r.size()));
        System.out.println("total=" + d.totalBytes().isPresent());
        TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, 1);
        for (String[] target : new String[][] {{"same", dir}, {"other", other}}) {
            try {
                admin.alterReplicaLogDirs(Collections.singletonMap(replica, target[1])).all().get();
                System.out.println("alter-" + target[0] + "=ok");
            } catch (ExecutionException e) {
                System.out.println("alter-" + target[0] + "=" + error(e));
            }
        }
    }

    static void quotas(Admin admin) throws Exception {
        ClientQuotaEntity alice = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "alice"));
        Map<String, String> defaultUser = new java.util.HashMap<>();
        defaultUser.put(ClientQuotaEntity.USER, null);
        ClientQuotaEntity anyUser = new ClientQuotaEntity(defaultUser);
        admin.alterClientQuotas(List.of(
            new ClientQuotaAlteration(alice, List.of(
                new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
                new ClientQuotaAlteration.Op("request_percentage", 12.5))),
            new ClientQuotaAlteration(anyUser, List.of(
                new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))))).all().get();
        Map<ClientQuotaEntity, Map<String, Double>> every =
            admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
        System.out.println("all=" + every.size());
        System.out.println("alice=" + new java.util.TreeMap<>(every.get(alice)));
        System.out.println("default=" + every.get(anyUser));
        Map<ClientQuotaEntity, Map<String, Double>> exact = admin.describeClientQuotas(
            ClientQuotaFilter.containsOnly(List.of(
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, "alice"))))
            .entities().get();
        System.out.println("exact=" + exact.keySet());
        try {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice, List.of(
                new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all().get();
            System.out.println("bad=ok");
        } catch (ExecutionException e) {
            System.out.println("bad=" + error(e));
        }
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice, List.of(
            new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all().get();
        System.out.println("after-remove=" + admin.describeClientQuotas(
            ClientQuotaFilter.containsOnly(List.of(
                ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, "alice"))))
            .entities().get().get(alice));
    }

    static void features(Admin admin) throws Exception {
        FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
        for (Map.Entry<String, FinalizedVersionRange> e : f.finalizedFeatures().entrySet()) {
            System.out.println("finalized." + e.getKey() + "=" + e.getValue().minVersionLevel()
                + "-" + e.getValue().maxVersionLevel());
        }
        for (Map.Entry<String, SupportedVersionRange> e : f.supportedFeatures().entrySet()) {
            System.out.println("supported." + e.getKey() + "=" + e.getValue().minVersion()
                + "-" + e.getValue().maxVersion());
        }
        System.out.println("features-epoch=" + f.finalizedFeaturesEpoch().orElse(-1L));
        try {
            short current = f.finalizedFeatures().get("metadata.version").maxVersionLevel();
            admin.updateFeatures(Map.of("metadata.version",
                new FeatureUpdate(current, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions()).all().get();
            System.out.println("update-same=ok");
        } catch (ExecutionException e) {
            System.out.println("update-same=" + error(e));
        }
        try {
            admin.updateFeatures(Map.of("group.version",
                new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions()).all().get();
            System.out.println("update-group=ok");
        } catch (ExecutionException e) {
            System.out.println("update-group=" + error(e));
        }
    }
}
