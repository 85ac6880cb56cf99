"""Arbitrary ConsumerGroupHeartbeat requests (any epoch, member and instance ids, names,
regexes valid or not, owned partitions of topics that exist or not) never break the core:
each gets an answer with an error code, and what was written replays to the same state."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol.errors import ErrorCode as E

from .harness import Harness, check_replay, topic_id

IDS = st.sampled_from(["", " ", "m1", "m2", "m3"])
NAMES = st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "missing", ""]), max_size=3))
REGEX = st.one_of(st.none(), st.sampled_from(["", "a.*", "(", "[ab]", "b|missing"]))
TOPICS = st.sampled_from([topic_id("a"), topic_id("b"), uuid.UUID(int=9)])
OWNED = st.one_of(st.none(), st.lists(st.tuples(TOPICS, st.lists(st.integers(-1, 6),
                                                                  max_size=4)), max_size=3))
REQUEST = st.fixed_dictionaries({
    "member_id": IDS, "epoch": st.integers(-3, 6), "names": NAMES, "regex": REGEX,
    "owned": OWNED, "instance": st.sampled_from([None, None, "i1", ""]),
    "rebalance": st.sampled_from([None, -1, 1000]), "assignor": st.sampled_from(
        [None, None, "range", "uniform", "nope"]), "version": st.sampled_from([0, 1]),
    "advance": st.integers(0, 40_000)})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUEST, max_size=25))
def test_any_heartbeat_gets_an_answer_and_state_replays(reqs: list[dict[str, object]]) -> None:
    h = Harness.make(topics={"a": 3, "b": 2}, consumer_session_timeout_ms=30_000,
                     regex_refresh_interval_ms=0)
    for r in reqs:
        h.advance(r["advance"])  # type: ignore[arg-type]
        res = h.cg(r["member_id"], r["epoch"], names=r["names"], regex=r["regex"],  # type: ignore[arg-type]
                   owned=r["owned"], instance=r["instance"], rebalance=r["rebalance"],  # type: ignore[arg-type]
                   assignor=r["assignor"], version=r["version"])  # type: ignore[arg-type]
        assert isinstance(res.error, E)
        if res.error is E.none:
            assert res.member_id
    check_replay(h)
