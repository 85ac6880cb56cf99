import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKey;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValue;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKey;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValue;

/** Kafka's own serialization of the share group records, for byte-for-byte comparison:
 *  one line per record, "name key-hex value-hex". The values match those the Python test
 *  builds (tests/integration/test_share_records_oracle.py). */
public class ShareRecordsOracle {
    static final Uuid T1 = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
    static final Uuid T2 = new Uuid(-2L, 42L);

    static void print(String name, ApiMessage key, ApiMessage value) {
        HexFormat hex = HexFormat.of();
        System.out.println(name + " " + hex.formatHex(MessageUtil.toCoordinatorTypePrefixedBytes(key))
            + " " + hex.formatHex(MessageUtil.toVersionPrefixedBytes((short) 0, value)));
    }

    public static void main(String[] args) {
        print("member_metadata",
            new ShareGroupMemberMetadataKey().setGroupId("g").setMemberId("m-1"),
            new ShareGroupMemberMetadataValue().setRackId(null).setClientId("client")
                .setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("a", "b")));
        print("member_metadata_rack",
            new ShareGroupMemberMetadataKey().setGroupId("g").setMemberId("m-2"),
            new ShareGroupMemberMetadataValue().setRackId("r1").setClientId("c")
                .setClientHost("h").setSubscribedTopicNames(List.of()));
        print("metadata",
            new ShareGroupMetadataKey().setGroupId("group-ü"),
            new ShareGroupMetadataValue().setEpoch(7).setMetadataHash(-1234567890123L));
        print("target_metadata",
            new ShareGroupTargetAssignmentMetadataKey().setGroupId("g"),
            new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(3));
        print("target_metadata_stamp",
            new ShareGroupTargetAssignmentMetadataKey().setGroupId("g"),
            new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(4)
                .setAssignmentTimestamp(1700000000000L));
        print("target_member",
            new ShareGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m-1"),
            new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
                new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(T1)
                    .setPartitions(List.of(0, 2)),
                new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(T2)
                    .setPartitions(List.of()))));
        print("current_member",
            new ShareGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m-1"),
            new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(5)
                .setPreviousMemberEpoch(4).setState((byte) 0).setAssignedPartitions(List.of(
                    new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(T1)
                        .setPartitions(List.of(1)))));
        print("state_partition_metadata",
            new ShareGroupStatePartitionMetadataKey().setGroupId("g"),
            new ShareGroupStatePartitionMetadataValue()
                .setInitializingTopics(List.of(
                    new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(T1)
                        .setTopicName("a").setPartitions(List.of(0, 1))))
                .setInitializedTopics(List.of(
                    new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo().setTopicId(T2)
                        .setTopicName("b").setPartitions(List.of(3))))
                .setDeletingTopics(List.of(
                    new ShareGroupStatePartitionMetadataValue.TopicInfo().setTopicId(T1)
                        .setTopicName("gone"))));
        print("snapshot",
            new ShareSnapshotKey().setGroupId("g").setTopicId(T1).setPartition(3),
            new ShareSnapshotValue().setSnapshotEpoch(2).setStateEpoch(1).setLeaderEpoch(0)
                .setStartOffset(100).setCreateTimestamp(1700000000000L)
                .setWriteTimestamp(1700000000500L).setStateBatches(List.of(
                    new ShareSnapshotValue.StateBatch().setFirstOffset(100).setLastOffset(104)
                        .setDeliveryState((byte) 0).setDeliveryCount((short) 1),
                    new ShareSnapshotValue.StateBatch().setFirstOffset(105).setLastOffset(105)
                        .setDeliveryState((byte) 4).setDeliveryCount((short) 5))));
        print("snapshot_count",
            new ShareSnapshotKey().setGroupId("g").setTopicId(T2).setPartition(0),
            new ShareSnapshotValue().setSnapshotEpoch(0).setStateEpoch(0).setLeaderEpoch(-1)
                .setStartOffset(0).setDeliveryCompleteCount(12).setCreateTimestamp(1L)
                .setWriteTimestamp(2L).setStateBatches(List.of()));
        print("update",
            new ShareUpdateKey().setGroupId("g").setTopicId(T1).setPartition(3),
            new ShareUpdateValue().setSnapshotEpoch(2).setLeaderEpoch(0).setStartOffset(-1)
                .setStateBatches(List.of(
                    new ShareUpdateValue.StateBatch().setFirstOffset(106).setLastOffset(110)
                        .setDeliveryState((byte) 2).setDeliveryCount((short) 2))));
        print("update_count",
            new ShareUpdateKey().setGroupId("g").setTopicId(T1).setPartition(3),
            new ShareUpdateValue().setSnapshotEpoch(3).setLeaderEpoch(1).setStartOffset(111)
                .setDeliveryCompleteCount(0).setStateBatches(List.of()));
    }
}
