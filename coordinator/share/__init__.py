"""KIP-932 share groups.

- ``partition``: one share-partition's in-flight records (Kafka's SharePartition);
- ``sessions``: share sessions and their epochs (ShareSessionCache);
- ``assignor``: the ``simple`` assignor;
- ``group``: ShareGroupHeartbeat's records and answers, and their replay;
- ``membership``: the group coordinator's share group part: ShareGroupHeartbeat, the
  member session timeout, ShareGroupDescribe;
- ``state_store``: share-partition state in ``__share_group_state`` (the share
  coordinator's snapshots and updates);
- ``offset_reset``: ``share.auto.offset.reset`` and the start offset it gives.
"""
