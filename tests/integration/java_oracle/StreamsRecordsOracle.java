import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;

/** Kafka's own serialization of the streams group records, for byte-for-byte comparison:
 *  one line per record, "name key-hex value-hex". The values match those the Python test
 *  builds (tests/integration/test_streams_records_oracle.py). */
public class StreamsRecordsOracle {
    static void print(String name, ApiMessage key, ApiMessage value) {
        HexFormat hex = HexFormat.of();
        System.out.println(name + " " + hex.formatHex(MessageUtil.toCoordinatorTypePrefixedBytes(key))
            + " " + hex.formatHex(MessageUtil.toVersionPrefixedBytes((short) 0, value)));
    }

    static StreamsGroupCurrentMemberAssignmentValue.TaskIds cur(String s, Integer... ps) {
        return new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId(s)
            .setPartitions(List.of(ps));
    }

    static StreamsGroupTargetAssignmentMemberValue.TaskIds tgt(String s, Integer... ps) {
        return new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId(s)
            .setPartitions(List.of(ps));
    }

    static StreamsGroupTopologyValue.TopicInfo info(String name, int partitions, String... kv) {
        List<StreamsGroupTopologyValue.TopicConfig> configs = new java.util.ArrayList<>();
        for (int i = 0; i < kv.length; i += 2) {
            configs.add(new StreamsGroupTopologyValue.TopicConfig().setKey(kv[i]).setValue(kv[i + 1]));
        }
        return new StreamsGroupTopologyValue.TopicInfo().setName(name).setPartitions(partitions)
            .setReplicationFactor((short) 0).setTopicConfigs(configs);
    }

    public static void main(String[] args) {
        print("metadata",
            new StreamsGroupMetadataKey().setGroupId("group-ü"),
            new StreamsGroupMetadataValue().setEpoch(7).setMetadataHash(-1234567890123L));
        print("metadata_validated",
            new StreamsGroupMetadataKey().setGroupId("g"),
            new StreamsGroupMetadataValue().setEpoch(3).setMetadataHash(42L)
                .setValidatedTopologyEpoch(1));
        print("member_metadata",
            new StreamsGroupMemberMetadataKey().setGroupId("g").setMemberId("m-1"),
            new StreamsGroupMemberMetadataValue().setInstanceId(null).setRackId(null)
                .setClientId("client").setClientHost("/127.0.0.1").setRebalanceTimeoutMs(300000)
                .setTopologyEpoch(1).setProcessId("p-1").setUserEndpoint(null)
                .setClientTags(List.of()));
        print("member_metadata_full",
            new StreamsGroupMemberMetadataKey().setGroupId("g").setMemberId("m-2"),
            new StreamsGroupMemberMetadataValue().setInstanceId("i").setRackId("r")
                .setClientId("c").setClientHost("h").setRebalanceTimeoutMs(1000)
                .setTopologyEpoch(2).setProcessId("p-2")
                .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint()
                    .setHost("localhost").setPort(65000))
                .setClientTags(List.of(new StreamsGroupMemberMetadataValue.KeyValue()
                    .setKey("zone").setValue("a"))));
        print("target_metadata",
            new StreamsGroupTargetAssignmentMetadataKey().setGroupId("g"),
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(3)
                .setAssignmentTimestamp(1700000000000L));
        print("target_member",
            new StreamsGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m-1"),
            new StreamsGroupTargetAssignmentMemberValue()
                .setActiveTasks(List.of(tgt("0", 0, 2), tgt("1", 1)))
                .setStandbyTasks(List.of()).setWarmupTasks(List.of()));
        print("current_member",
            new StreamsGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m-1"),
            new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(5)
                .setPreviousMemberEpoch(4).setState((byte) 2)
                .setActiveTasks(List.of(cur("0", 0)))
                .setStandbyTasks(List.of()).setWarmupTasks(List.of())
                .setActiveTasksPendingRevocation(List.of(cur("1", 0, 1)))
                .setStandbyTasksPendingRevocation(List.of())
                .setWarmupTasksPendingRevocation(List.of()));
        print("current_member_epochs",
            new StreamsGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m-2"),
            new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(6)
                .setPreviousMemberEpoch(5).setState((byte) 2)
                .setActiveTasks(List.of(cur("0", 0, 1).setAssignmentEpochs(List.of(3, 6))))
                .setStandbyTasks(List.of(cur("1", 1))).setWarmupTasks(List.of())
                .setActiveTasksPendingRevocation(List.of(
                    cur("1", 0).setAssignmentEpochs(List.of(4))))
                .setStandbyTasksPendingRevocation(List.of())
                .setWarmupTasksPendingRevocation(List.of()));
        print("topology",
            new StreamsGroupTopologyKey().setGroupId("g"),
            new StreamsGroupTopologyValue().setEpoch(1).setSubtopologies(List.of(
                new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("0")
                    .setSourceTopics(List.of("lines")).setSourceTopicRegex(List.of())
                    .setStateChangelogTopics(List.of())
                    .setRepartitionSinkTopics(List.of("app-words-repartition"))
                    .setRepartitionSourceTopics(List.of()).setCopartitionGroups(List.of()),
                new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("1")
                    .setSourceTopics(List.of()).setSourceTopicRegex(List.of())
                    .setStateChangelogTopics(List.of(info("app-counts-changelog", 0,
                        "cleanup.policy", "compact")))
                    .setRepartitionSinkTopics(List.of())
                    .setRepartitionSourceTopics(List.of(info("app-words-repartition", 4)))
                    .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup()
                        .setSourceTopics(List.of((short) 0)).setSourceTopicRegex(List.of())
                        .setRepartitionSourceTopics(List.of((short) 1, (short) 2)))))));
    }
}
