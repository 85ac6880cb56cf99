"""The local marker writer: data partitions through their log, ``__consumer_offsets``
through the group coordinator, append errors mapped as WriteTxnMarkers would carry them."""

from __future__ import annotations

from kafkalite.coordinator.txn.markers import LocalMarkerWriter
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.storage.errors import InvalidProducerEpochError, RecordTooLargeError


class Log:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.markers: list[tuple[int, int, int, bool]] = []
        self.fail = fail

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool,
                              transaction_version: int = 0) -> object:
        if self.fail is not None:
            raise self.fail
        self.markers.append((producer_id, producer_epoch, coordinator_epoch, commit))
        return len(self.markers)


class Groups:
    def __init__(self) -> None:
        self.completed: list[tuple[int, int, int, int, bool]] = []

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> E:
        self.completed.append((partition, producer_id, producer_epoch, coordinator_epoch,
                               commit))
        return E.none


def test_routes_markers_and_maps_errors() -> None:
    logs = {("t", 0): Log(), ("t", 1): Log(InvalidProducerEpochError("old")),
            ("t", 2): Log(OSError("disk")), ("t", 3): Log(RecordTooLargeError("big")),
            ("t", 4): Log(RuntimeError("?"))}
    groups = Groups()
    writer = LocalMarkerWriter(lambda t, p: logs.get((t, p)), groups)
    parts = [("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4), ("gone", 0),
             ("__consumer_offsets", 3)]
    assert writer.write_markers(7, 2, 1, True, parts) == {
        ("t", 0): E.none,
        ("t", 1): E.invalid_producer_epoch,
        ("t", 2): E.kafka_storage_error,
        ("t", 3): E.message_too_large,
        ("t", 4): E.unknown_server_error,
        ("gone", 0): E.unknown_topic_or_partition,
        ("__consumer_offsets", 3): E.none,
    }
    assert logs[("t", 0)].markers == [(7, 2, 1, True)]
    assert groups.completed == [(3, 7, 2, 1, True)]


def test_offsets_partition_is_a_plain_log_without_a_group_coordinator() -> None:
    log = Log()
    writer = LocalMarkerWriter(lambda t, p: log if t == "__consumer_offsets" else None)
    assert writer.write_markers(7, 0, 0, False, [("__consumer_offsets", 1)]) == {
        ("__consumer_offsets", 1): E.none}
    assert log.markers == [(7, 0, 0, False)]
