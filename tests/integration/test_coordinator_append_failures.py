"""Failed ``__consumer_offsets`` appends reach clients as Kafka maps them (over TCP)."""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E

FIND, JOIN, SYNC, HEARTBEAT = 10, 11, 14, 12
GROUP = "failing-group"


def _join(conn: RawConnection, metadata: bytes = b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff",
          member_id: str = "") -> Any:
    proto = request_class(JOIN, 9, "JoinGroupRequestProtocol")
    for _ in range(3):
        resp = conn.call(request(
            JOIN, 9, group_id=GROUP, session_timeout=timedelta(seconds=10),
            rebalance_timeout=timedelta(seconds=10), member_id=member_id,
            group_instance_id=None, protocol_type="consumer", reason=None,
            protocols=(proto(name="range", metadata=metadata),),
        ))
        if resp.error_code == E.member_id_required:
            member_id = resp.member_id
            continue
        return resp
    raise AssertionError("no member id")


def _sync(conn: RawConnection, member_id: str, generation: int) -> Any:
    assign = request_class(SYNC, 5, "SyncGroupRequestAssignment")
    return conn.call(request(
        SYNC, 5, group_id=GROUP, generation_id=generation, member_id=member_id,
        group_instance_id=None, protocol_type="consumer", protocol_name="range",
        assignments=(assign(member_id=member_id, assignment=b"\x00\x00\x00\x00\x00\x00"),),
    ))


@pytest.fixture
def conn(make_broker: Callable[..., BrokerThread]) -> Iterator[tuple[BrokerThread, RawConnection]]:
    b = make_broker({"group.initial.rebalance.delay.ms": "0", "message.max.bytes": "4000"})
    c = RawConnection(b.bootstrap)
    c.call(request(FIND, 4, key_type=0, coordinator_keys=(GROUP,)))
    yield b, c
    c.close()


def _group_state(b: BrokerThread) -> str:
    return str(b.call(lambda: b.broker.groups.core.group(GROUP).state.value))  # type: ignore[union-attr]


def _fail_appends(b: BrokerThread, exc: BaseException | None) -> None:
    def install() -> None:
        rt = b.broker.coordinator  # type: ignore[union-attr]
        log = rt.logs.get_or_create("__consumer_offsets", b.broker.groups.core.partition_for(GROUP))
        if exc is None:
            log.__dict__.pop("append_built", None)
            return

        def append(batch: bytes) -> tuple[int, int]:
            raise exc

        log.append_built = append

    b.call(install)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), E.not_coordinator),
        (TimeoutError("append timed out"), E.coordinator_not_available),
        (RuntimeError("unexpected"), E.unknown_server_error),
    ],
)
def test_failed_sync_store_maps_error_and_rebalances(
    conn: tuple[BrokerThread, RawConnection], exc: BaseException, code: E
) -> None:
    b, c = conn
    j = _join(c)
    assert j.error_code == E.none and j.generation_id == 1
    _fail_appends(b, exc)
    s = _sync(c, j.member_id, 1)
    assert s.error_code == code
    assert _group_state(b) == "PreparingRebalance"
    hb = c.call(request(HEARTBEAT, 4, group_id=GROUP, generation_id=1, member_id=j.member_id,
                        group_instance_id=None))
    assert hb.error_code == E.rebalance_in_progress
    _fail_appends(b, None)
    j2 = _join(c, member_id=j.member_id)
    assert j2.error_code == E.none and j2.generation_id == 2
    assert _sync(c, j.member_id, 2).error_code == E.none
    assert _group_state(b) == "Stable"


def test_group_record_over_max_message_bytes(conn: tuple[BrokerThread, RawConnection]) -> None:
    b, c = conn
    big = b"\x00\x00\x00\x00\x00\x00" + b"\x00\x00\x10\x00" + b"x" * 4096
    j = _join(c, metadata=big)
    assert j.error_code == E.none
    s = _sync(c, j.member_id, 1)
    assert s.error_code == E.unknown_server_error
    assert _group_state(b) == "PreparingRebalance"
