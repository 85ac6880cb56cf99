"""KIP-932 share groups: the parts that do not depend on the coordinator's shape.

- ``partition``: one share-partition's in-flight records (Kafka's SharePartition);
- ``sessions``: share sessions and their epochs (ShareSessionCache);
- ``assignor``: the ``simple`` assignor;
- ``group``: ShareGroupHeartbeat's records and answers, and their replay;
- ``state_store``: share-partition state in ``__share_group_state`` (the share
  coordinator's snapshots and updates);
- ``offset_reset``: ``share.auto.offset.reset`` and the start offset it gives.
"""
