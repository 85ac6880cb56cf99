"""Codecs of the API versions kio lacks, generated from Kafka's message specs by
scripts/generate_codecs.py (do not edit): (api key, version) -> (module, request class,
response class), and the names of those APIs."""

VERSIONS: dict[tuple[int, int], tuple[str, str, str]] = {
    (18, 5): ("kafkalite.protocol.generated.api_versions.v5",
              "ApiVersionsRequest", "ApiVersionsResponse"),
    (28, 6): ("kafkalite.protocol.generated.txn_offset_commit.v6",
              "TxnOffsetCommitRequest", "TxnOffsetCommitResponse"),
    (42, 3): ("kafkalite.protocol.generated.delete_groups.v3",
              "DeleteGroupsRequest", "DeleteGroupsResponse"),
    (88, 1): ("kafkalite.protocol.generated.streams_group_heartbeat.v1",
              "StreamsGroupHeartbeatRequest", "StreamsGroupHeartbeatResponse"),
    (89, 1): ("kafkalite.protocol.generated.streams_group_describe.v1",
              "StreamsGroupDescribeRequest", "StreamsGroupDescribeResponse"),
    (93, 0): ("kafkalite.protocol.generated.streams_group_topology_description_update.v0",
              "StreamsGroupTopologyDescriptionUpdateRequest",
              "StreamsGroupTopologyDescriptionUpdateResponse"),
    (94, 0): ("kafkalite.protocol.generated.unregister_controller.v0",
              "UnregisterControllerRequest", "UnregisterControllerResponse"),
}

API_NAMES: dict[int, str] = {
    18: "api_versions",
    28: "txn_offset_commit",
    42: "delete_groups",
    88: "streams_group_heartbeat",
    89: "streams_group_describe",
    93: "streams_group_topology_description_update",
    94: "unregister_controller",
}
