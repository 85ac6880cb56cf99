"""Scenarios: client quotas enforced. Each quota is set on a client id of its own, its
requests sent on connections of that client id (a throttled connection is muted, so each
call after a throttle takes a new one), and the throttle times noted beside the responses
(the normaliser zeroes ``throttle_time``): in full where both brokers compute them from the
same bytes at the first record of a sensor, in whole seconds (rounded up) where the
time between calls enters them."""

from __future__ import annotations

import math
import time
from typing import Any

from .harness import Run, Wire, batch
from .registry import (
    ALTER_CLIENT_QUOTAS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLIENT_QUOTAS,
    FETCH,
    call_until,
    create_topic,
    produce,
    scenario,
)


def _set_quota(run: Run, client: str, key: str, value: float | None) -> None:
    entity = [{"entity_type": "client-id", "entity_name": client}]
    run.call(f"set_{key}", ALTER_CLIENT_QUOTAS, record=False, validate_only=False,
             entries=[{"entity": entity, "ops": [{"key": key, "value": value or 0.0,
                                                  "remove": value is None}]}])
    if value is None:
        return
    components = [{"entity_type": "client-id", "match_type": 0, "match": client}]
    call_until(run, "quota_set", DESCRIBE_CLIENT_QUOTAS, lambda r: bool(r.entries),
               strict=True, components=components)
    # Kafka's broker and controller apply the quota from the metadata log a moment later.
    time.sleep(0.5)


def _wire(run: Run, client: str) -> Wire:
    w = Wire(run.target.bootstrap, client)
    run._wires.append(w)
    return w


def _ms(resp: Any) -> int:
    return round(resp.throttle_time.total_seconds() * 1000)


def _secs(resp: Any) -> int:
    """A throttle time in whole seconds, rounded up: the debt it repays is whole tokens at
    1/s, less the time between the calls (well under a second)."""
    return math.ceil(_ms(resp) / 1000)


def _note(run: Run, step: str, resp: Any, errors: list[int]) -> None:
    run.note(step, {"errors": errors, "throttle_s": _secs(resp)})


def _topic(name: str, partitions: int) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": 1,
            "assignments": [], "configs": []}


@scenario("quota-controller-mutation")
def controller_mutation(run: Run) -> None:
    """controller_mutation_rate 1/s: 11 tokens of burst (11 windows of 1 s). At the oldest
    versions the requests are throttled; from CreateTopics v6, DeleteTopics v5 and
    CreatePartitions v3 a request made while in debt is refused with
    THROTTLING_QUOTA_EXCEEDED."""
    client = run.group("creator")
    kept = run.topic("kept")
    create_topic(run, kept)
    _set_quota(run, client, "controller_mutation_rate", 1.0)
    try:
        # 16 partitions from 11 tokens: allowed, 5 tokens short.
        # (Only the error codes: the created topics' configs are compared elsewhere.)
        first = run.call("create_16", CREATE_TOPICS, wire=_wire(run, client), record=False,
                         topics=[_topic(run.topic("big"), 16)], timeout=30_000,
                         validate_only=False)
        _note(run, "create_16", first, [int(t.error_code) for t in first.topics])
        second = run.call("create_1", CREATE_TOPICS, wire=_wire(run, client), record=False,
                          topics=[_topic(run.topic("small"), 1)], timeout=30_000,
                          validate_only=False)
        _note(run, "create_1", second, [int(t.error_code) for t in second.topics])
        grow = run.call("create_partitions", CREATE_PARTITIONS, wire=_wire(run, client),
                        topics=[{"name": kept, "count": 2, "assignments": None}],
                        timeout=30_000, validate_only=False)
        run.note("create_partitions_throttle_s", _secs(grow))
        kwargs: dict[str, Any] = {"topics": [{"name": kept, "topic_id": None}]} \
            if run.version(DELETE_TOPICS) >= 6 else {"topic_names": [kept]}
        gone = run.call("delete", DELETE_TOPICS, wire=_wire(run, client),
                        timeout=30_000, **kwargs)
        run.note("delete_throttle_s", _secs(gone))
    finally:
        _set_quota(run, client, "controller_mutation_rate", None)


@scenario("quota-produce-throttle")
def produce_throttle(run: Run) -> None:
    """producer_byte_rate 1024 B/s: one produce of about 12 KB is taken over ten windows
    (12 KB / 10 s) and throttled for its excess, (size / 10 - 1024) / 1024 * 10 s; the
    response comes at once with that time."""
    client = run.group("producer")
    tid = create_topic(run, run.topic())
    _set_quota(run, client, "producer_byte_rate", 1024.0)
    try:
        values = [bytes([65 + i % 26]) * 1000 for i in range(12)]
        resp = produce(run, "produce", run.topic(), tid, batch(*values))  # not throttled
        run.note("unquoted_throttle_ms", _ms(resp))
        resp = run.call("produce_quota", 0, wire=_wire(run, client), transactional_id=None,
                        acks=-1, timeout=10_000, topic_data=[{
                            "name": run.topic(), "topic_id": tid, "partition_data": [
                                {"index": 0, "records": batch(*values)}]}])
        run.note("throttle_ms", _ms(resp))
    finally:
        _set_quota(run, client, "producer_byte_rate", None)


@scenario("quota-fetch-throttle")
def fetch_throttle(run: Run) -> None:
    """consumer_byte_rate 1024 B/s: a fetch of a 12 KB batch is over the quota, so it is
    answered with no records and the throttle time of the records it would have sent."""
    client = run.group("consumer")
    tid = create_topic(run, run.topic())
    values = [bytes([97 + i % 26]) * 1000 for i in range(12)]
    produce(run, "produce", run.topic(), tid, batch(*values))
    _set_quota(run, client, "consumer_byte_rate", 1024.0)
    try:
        resp = run.call("fetch_quota", FETCH, wire=_wire(run, client), max_wait=0,
                        min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=-1, replica_id=-1, forgotten_topics_data=[],
                        rack_id="", topics=[{
                            "topic": run.topic(), "topic_id": tid, "partitions": [{
                                "partition": 0, "fetch_offset": 0,
                                "partition_max_bytes": 1 << 20, "log_start_offset": -1}]}])
        run.note("throttle_ms", _ms(resp))
    finally:
        _set_quota(run, client, "consumer_byte_rate", None)
