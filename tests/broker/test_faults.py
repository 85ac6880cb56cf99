"""Fault rules: building, matching, limits and the error responses they answer with."""

from __future__ import annotations

import dataclasses
import datetime
import typing
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_req
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.offset_commit.v8 import request as oc_req
from kio.schema.produce.v9 import request as produce_req

from kafkalite.broker.control.faults import (
    FaultAction,
    FaultError,
    FaultRules,
    api_key_of,
    error_of,
)
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.defaults import _default_for
from kafkalite.protocol.error_responses import shaped_error_response
from kafkalite.protocol.errors import ErrorCode

from .harness import Handlers

HEARTBEAT = 12


def hb(group: str = "g") -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=1, member_id="m",  # type: ignore[arg-type]
                            group_instance_id=None)


class Clock:
    def __init__(self) -> None:
        self.ms = 1000

    def __call__(self) -> int:
        return self.ms


def test_names_resolve_as_kafka_spells_them() -> None:
    assert api_key_of("Heartbeat") == api_key_of("heartbeat") == api_key_of("12") == 12
    assert api_key_of("OffsetCommit") == api_key_of("OFFSET_COMMIT") == 8
    assert error_of("REBALANCE_IN_PROGRESS") is ErrorCode.rebalance_in_progress
    assert error_of(25) is ErrorCode.unknown_member_id
    with pytest.raises(FaultError, match="unknown api 'Heartbeet'"):
        api_key_of("Heartbeet")
    with pytest.raises(FaultError, match="unknown error"):
        error_of("NOT_AN_ERROR")


def test_count_limits_fires_then_the_rule_goes() -> None:
    rules = FaultRules()
    rule = rules.add("Heartbeat", error="REBALANCE_IN_PROGRESS", count=2)
    assert rule.action is FaultAction.ERROR
    fired = [rules.match(HEARTBEAT, 4, "c", "User:ANONYMOUS", hb()) for _ in range(3)]
    assert fired[:2] == [rule, rule] and fired[2] is None
    assert rules.rules() == [] and HEARTBEAT not in rules.index


def test_match_on_group_client_principal_and_version() -> None:
    rules = FaultRules()
    rules.add("Heartbeat", error="UNKNOWN_MEMBER_ID", group_id="a", client_id="c1",
              principal="User:alice", versions=(3, 4))
    assert rules.match(HEARTBEAT, 4, "c1", "User:alice", hb("b")) is None
    assert rules.match(HEARTBEAT, 4, "c2", "User:alice", hb("a")) is None
    assert rules.match(HEARTBEAT, 4, "c1", "User:bob", hb("a")) is None
    assert rules.match(HEARTBEAT, 2, "c1", "User:alice", hb("a")) is None
    assert rules.match(HEARTBEAT, 4, "c1", "User:alice", hb("a")) is not None


def test_first_rule_by_id_wins_across_group_and_general_rules() -> None:
    rules = FaultRules()
    general = rules.add("Heartbeat", error="NOT_COORDINATOR")
    rules.add("Heartbeat", error="UNKNOWN_MEMBER_ID", group_id="g")
    assert rules.match(HEARTBEAT, 4, None, "User:ANONYMOUS", hb()) is general


def test_duration_on_the_faults_clock() -> None:
    clock = Clock()
    rules = FaultRules(clock)
    rules.add("Heartbeat", error="NOT_COORDINATOR", duration_ms=500)
    assert rules.match(HEARTBEAT, 4, None, "", hb()) is not None
    clock.ms += 500
    assert rules.match(HEARTBEAT, 4, None, "", hb()) is None
    assert len(rules) == 0


def test_probability_is_seeded() -> None:
    def run() -> list[bool]:
        rules = FaultRules()
        rules.add("Heartbeat", error="NOT_COORDINATOR", probability=0.3, seed=7)
        return [rules.match(HEARTBEAT, 4, None, "", hb()) is not None for _ in range(200)]

    first = run()
    assert first == run()
    assert 30 < sum(first) < 90


def test_topic_rules_match_produce_topics() -> None:
    rules = FaultRules()
    rules.add("Produce", error="NOT_LEADER_OR_FOLLOWER", topic="t2")
    req = produce_request(["t1"])
    assert rules.match(0, 9, None, "", req) is None
    assert rules.match(0, 9, None, "", produce_request(["t1", "t2"])) is not None


def test_context_manager_removes_the_rule() -> None:
    rules = FaultRules()
    with rules.injected("Heartbeat", error="REBALANCE_IN_PROGRESS") as rule:
        assert rules.get(rule.id) is rule
    assert rules.get(rule.id) is None


@pytest.mark.parametrize("spec, message", [
    ({}, "missing field api"),
    ({"api": "Nope", "error": "NOT_COORDINATOR"}, "unknown api"),
    ({"api": "Heartbeat"}, "needs an action"),
    ({"api": "Heartbeat", "error": "NONE"}, "non-zero error"),
    ({"api": "Heartbeat", "action": "explode"}, "unknown action"),
    ({"api": "Heartbeat", "action": "delay", "delay_ms": 0}, "delay_ms"),
    ({"api": "Heartbeat", "error": 27, "count": 0}, "count"),
    ({"api": "Heartbeat", "error": 27, "probability": 2}, "probability"),
    ({"api": "Heartbeat", "error": 27, "colour": "red"}, "unknown field"),
    ({"api": "Heartbeat", "error": 27, "count": "3"}, "count must be an integer"),
])
def test_bad_rules_say_what_is_wrong(spec: dict[str, object], message: str) -> None:
    with pytest.raises(FaultError, match=message):
        FaultRules().add_json(spec)


# --- responses ----------------------------------------------------------------------------


def produce_request(topics: list[str]) -> produce_req.ProduceRequest:
    return produce_req.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1),  # type: ignore[arg-type]
        topic_data=tuple(produce_req.TopicProduceData(
            name=t, partition_data=(produce_req.PartitionProduceData(index=0, records=b""),  # type: ignore[arg-type]
                                    produce_req.PartitionProduceData(index=3, records=b"")))  # type: ignore[arg-type]
            for t in topics))


def test_produce_errors_go_per_partition() -> None:
    c = codecs.codec(0, 9)
    resp = shaped_error_response(c.response_type, produce_request(["a", "b"]),
                          ErrorCode.not_leader_or_follower)
    got = [(t.name, p.index, p.error_code, p.base_offset)
           for t in resp.responses for p in t.partition_responses]
    assert got == [(t, i, ErrorCode.not_leader_or_follower, -1)
                   for t in ("a", "b") for i in (0, 3)]
    c.encode_response(resp)


def test_fetch_errors_go_per_partition_with_top_level_none() -> None:
    c = codecs.codec(1, 12)
    fields = {f.name for f in dataclasses.fields(fetch_req.FetchPartition)}
    part = fetch_req.FetchPartition(**{  # type: ignore[arg-type]
        "partition": 2, "current_leader_epoch": -1, "fetch_offset": 0,
        "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1000,
    } if "last_fetched_epoch" in fields else {})
    req = c.request_type(
        replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1000,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch_req.FetchTopic(topic="t", partitions=(part,)),),  # type: ignore[arg-type]
        forgotten_topics_data=(), rack_id="")
    resp = shaped_error_response(c.response_type, req, ErrorCode.offset_out_of_range)
    assert resp.error_code is ErrorCode.none
    assert [(r.topic, p.partition_index, p.error_code)
            for r in resp.responses for p in r.partitions] == \
        [("t", 2, ErrorCode.offset_out_of_range)]
    c.encode_response(resp)


def test_group_errors_land_at_the_top_and_keep_the_member_id() -> None:
    c = codecs.codec(11, 7)
    req = c.request_type(group_id="g", session_timeout=datetime.timedelta(seconds=10),
                         rebalance_timeout=datetime.timedelta(seconds=10), member_id="m-1",
                         group_instance_id=None, protocol_type="consumer", protocols=())
    resp = shaped_error_response(c.response_type, req, ErrorCode.unknown_member_id)
    assert (resp.error_code, resp.member_id, resp.generation_id) == \
        (ErrorCode.unknown_member_id, "m-1", -1)
    c.encode_response(resp)
    hb_resp = shaped_error_response(codecs.codec(12, 4).response_type, hb(),
                             ErrorCode.rebalance_in_progress)
    assert hb_resp.error_code is ErrorCode.rebalance_in_progress


def test_offset_commit_coordinator_errors_per_partition() -> None:
    c = codecs.codec(8, 8)
    req = c.request_type(
        group_id="g", generation_id_or_member_epoch=1, member_id="m", group_instance_id=None,
        topics=(oc_req.OffsetCommitRequestTopic(name="t", partitions=(
            oc_req.OffsetCommitRequestPartition(partition_index=1, committed_offset=5,  # type: ignore[arg-type]
                                                committed_leader_epoch=-1,
                                                committed_metadata=None),)),))
    resp = shaped_error_response(c.response_type, req, ErrorCode.not_coordinator)
    assert [(p.partition_index, p.error_code) for t in resp.topics for p in t.partitions] == \
        [(1, ErrorCode.not_coordinator)]
    c.encode_response(resp)


def test_find_coordinator_errors_name_each_key() -> None:
    c = codecs.codec(10, 4)
    req = c.request_type(key_type=0, coordinator_keys=("g1", "g2"))
    resp = shaped_error_response(c.response_type, req, ErrorCode.coordinator_not_available)
    assert [(x.key, x.node_id, x.port, x.error_code) for x in resp.coordinators] == \
        [(k, -1, -1, ErrorCode.coordinator_not_available) for k in ("g1", "g2")]
    c.encode_response(resp)


def _sample(cls: type[Any]) -> Any:
    """A request with one element in every list (and "x" for every string)."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        tp = hints[f.name]
        if typing.get_origin(tp) is tuple:
            elem = typing.get_args(tp)[0]
            kwargs[f.name] = ((_sample(elem),) if dataclasses.is_dataclass(elem)
                              else ("x",) if "str" in str(elem) else ())
            continue
        value = _default_for(tp, f.metadata)
        kwargs[f.name] = "x" if isinstance(value, str) or (
            value is None and "str" in str(tp)) else value
    return cls(**kwargs)


def _error_fields(entity: Any) -> list[ErrorCode]:
    found: list[ErrorCode] = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.metadata.get("kafka_type") == "error_code":
            found.append(value)
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    found += _error_fields(item)
    return found


async def test_every_served_api_answers_an_injected_error(handlers: Handlers) -> None:
    """Each API and version the broker serves: the error lands in at least one error
    field of a response that encodes."""
    for api_key, lo, hi in handlers.broker.apis.supported():
        for version in range(lo, hi + 1):
            c = codecs.codec(api_key, version)
            resp = shaped_error_response(c.response_type, _sample(c.request_type),
                                  ErrorCode.not_coordinator)
            c.encode_response(resp)
            fields = _error_fields(resp)
            assert not fields or ErrorCode.not_coordinator in fields, (api_key, version, resp)
