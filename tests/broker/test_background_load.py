"""The internal topics load in the background once the broker starts, as Kafka loads its
coordinator partitions after its listeners open: until a partition is loaded, its
groups are answered COORDINATOR_LOAD_IN_PROGRESS; then they are served."""

from __future__ import annotations

from pathlib import Path

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .harness import Handlers


def _heartbeat(h: Handlers) -> object:
    return h.request(ApiKey.HEARTBEAT, 0, group_id="g", generation_id=1, member_id="m1")


async def test_groups_answer_load_in_progress_until_their_partition_is_loaded(
        tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data")
    await h.broker.open(wait_loaded=False)
    try:
        # Started, not yet loaded: no await has let the loading task run.
        r = await h.call(ApiKey.HEARTBEAT, 0, _heartbeat(h))
        assert ErrorCode(r.error_code) is ErrorCode.coordinator_load_in_progress
        await h.broker.loaded()
        r = await h.call(ApiKey.HEARTBEAT, 0, _heartbeat(h))
        # Loaded: the group is unknown to the coordinator, no longer loading.
        assert ErrorCode(r.error_code) is not ErrorCode.coordinator_load_in_progress
        assert ErrorCode(r.error_code) is not NO_ERROR
    finally:
        await h.close()
