"""Fault rules: make a request fail on demand, the way a real broker rarely does when asked.

A rule matches requests by API key (and version range), client id, principal, group id
and topic, and fires one action: answer with an error code instead of handling (the
core never sees the request, so no state changes), delay the response, drop it (the
connection stalls as on a dead network path until the client gives up), or close the
connection before or after handling. A rule is limited by a count, a duration and a
probability drawn from a seeded generator, so a run repeats.

Matching is on the dispatch path of every request, so rules are indexed by API key, then
by the group, client id, principal or topic they name: a request of an API no rule names
costs one dict lookup, and one whose group, client and principal no rule names a few
more, whatever the number of rules installed.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafkalite.protocol.apis import API_NAMES
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import CoordinatorType
from kafkalite.timekeeping.clock import wall_ms

GROUP = CoordinatorType.GROUP

#: ms on the clock rule durations are measured on (the broker's clock).
Clock = Callable[[], int]


class FaultError(ValueError):
    """A rule that cannot be built: the message says which field is wrong and why."""


class FaultAction(StrEnum):
    ERROR = "error"
    DELAY = "delay"
    DROP = "drop"
    CLOSE_BEFORE = "close_before"
    CLOSE_AFTER = "close_after"


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


_API_BY_NAME: dict[str, int] = {_squash(n): k for k, n in API_NAMES.items()}
_ERROR_BY_NAME: dict[str, ErrorCode] = {_squash(e.name): e for e in ErrorCode}


def api_key_of(api: str | int) -> int:
    """``Heartbeat``, ``heartbeat``, ``OFFSET_COMMIT`` or ``12`` -> the API key."""
    if isinstance(api, int) and not isinstance(api, bool):
        if api not in API_NAMES:
            raise FaultError(f"unknown api key {api}")
        return api
    if isinstance(api, str):
        if api.strip().isdigit():
            return api_key_of(int(api))
        key = _API_BY_NAME.get(_squash(api))
        if key is not None:
            return key
    raise FaultError(f"unknown api {api!r}: expected a Kafka API name such as Heartbeat "
                     f"or JoinGroup, or an api key")


def api_display_name(api_key: int) -> str:
    return "".join(p.capitalize() for p in API_NAMES.get(api_key, str(api_key)).split("_"))


def error_of(error: str | int | ErrorCode) -> ErrorCode:
    """``REBALANCE_IN_PROGRESS``, ``rebalance_in_progress`` or ``27`` -> the error code."""
    if isinstance(error, ErrorCode):
        return error
    if isinstance(error, int) and not isinstance(error, bool):
        try:
            return ErrorCode(error)
        except ValueError:
            raise FaultError(f"unknown error code {error}") from None
    if isinstance(error, str):
        if error.strip().lstrip("-").isdigit():
            return error_of(int(error))
        found = _ERROR_BY_NAME.get(_squash(error))
        if found is not None:
            return found
    raise FaultError(f"unknown error {error!r}: expected a Kafka error name such as "
                     f"REBALANCE_IN_PROGRESS, or its code")


@dataclass(slots=True)
class FaultRule:
    id: int
    api_key: int
    action: FaultAction
    error: ErrorCode | None = None
    delay_ms: int = 0
    min_version: int = 0
    max_version: int = 32767
    client_id: str | None = None
    principal: str | None = None
    group_id: str | None = None
    topic: str | None = None
    #: Only requests to this node (``kafkalite.nodes``); None: every node.
    node: int | None = None
    #: Fires left (None: unlimited).
    count: int | None = None
    #: The rule stops matching at this time (ms, the faults' clock); None: never.
    until_ms: int | None = None
    probability: float = 1.0
    seed: int | None = None
    fired: int = 0
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def to_json(self, now_ms: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "api": api_display_name(self.api_key),
            "api_key": self.api_key,
            "action": self.action.value,
            "min_version": self.min_version,
            "max_version": self.max_version,
            "client_id": self.client_id,
            "principal": self.principal,
            "group_id": self.group_id,
            "topic": self.topic,
            "node": self.node,
            "count": self.count,
            "probability": self.probability,
            "seed": self.seed,
            "fired": self.fired,
            "until_ms": self.until_ms,
        }
        if self.error is not None:
            out["error"] = self.error.name.upper()
            out["error_code"] = self.error.value
        if self.action is FaultAction.DELAY:
            out["delay_ms"] = self.delay_ms
        if now_ms is not None and self.until_ms is not None:
            out["remaining_ms"] = max(self.until_ms - now_ms, 0)
        return out


def request_groups(request: Any) -> Iterator[str]:
    """Group ids a request names: ``group_id`` (group and offset APIs), FindCoordinator's
    key (v0-3, key type group) or coordinator keys (v4+), DescribeGroups',
    DeleteGroups', ConsumerGroupDescribe's and ShareGroupDescribe's lists, OffsetFetch v8+'s
    and DescribeShareGroupOffsets' groups."""
    gid = getattr(request, "group_id", None)
    if isinstance(gid, str):
        yield gid
        return
    key = getattr(request, "key", None)
    if isinstance(key, str):
        if getattr(request, "key_type", GROUP) == GROUP:
            yield key
        return
    if getattr(request, "key_type", GROUP) != GROUP:
        return  # FindCoordinator for transactional ids
    for name in ("coordinator_keys", "groups", "groups_names", "group_ids"):
        items = getattr(request, name, None)
        if isinstance(items, tuple):
            for item in items:
                if isinstance(item, str):
                    yield item
                else:
                    g = getattr(item, "group_id", None)
                    if isinstance(g, str):
                        yield g


def request_topics(request: Any) -> Iterator[str]:
    """Topic names a request names (Produce, Fetch, Metadata, offsets, topic admin, the
    share-group offsets APIs). ShareFetch and ShareAcknowledge name topics by id only."""
    for fname in ("topic_data", "topics", "groups"):
        items = getattr(request, fname, None)
        if not isinstance(items, tuple):
            continue
        for item in items:
            if isinstance(item, str):
                yield item
                continue
            for attr in ("name", "topic", "topic_name"):
                v = getattr(item, attr, None)
                if isinstance(v, str):
                    yield v
                    break
            if fname == "groups":  # OffsetFetch v8+, OffsetCommit per group
                yield from request_topics(item)


class KeyIndex:
    """The rules of one API key, each filed under the most selective thing it names: its
    group, else its client id, else its principal, else its topic; the rest in a list.
    A request looks up only its own group, client id and principal, so rules that name
    others cost a dict lookup each, however many there are."""

    __slots__ = ("by_client", "by_group", "by_principal", "by_topic", "names", "open", "rest")

    def __init__(self) -> None:
        self.by_group: dict[str, list[FaultRule]] = {}
        self.by_client: dict[str | None, list[FaultRule]] = {}
        self.by_principal: dict[str, list[FaultRule]] = {}
        self.by_topic: dict[str, list[FaultRule]] = {}
        self.rest: list[FaultRule] = []
        #: Rules that every request must be checked against (topic rules need the
        #: request's topics, the rest name nothing to look up).
        self.open = False
        #: Every group, client id and principal a rule names, plus None when a rule
        #: names a group: dispatch's quick test (is the request's client id, principal
        #: or ``group_id`` attribute in here?) then also passes requests that name
        #: groups elsewhere (FindCoordinator, DescribeGroups) on to ``match``. A name
        #: found under the wrong kind only costs a full ``match``.
        self.names: frozenset[str | None] = frozenset()

    def add(self, rule: FaultRule) -> None:
        if rule.group_id is not None:
            self.by_group.setdefault(rule.group_id, []).append(rule)
        elif rule.client_id is not None:
            self.by_client.setdefault(rule.client_id, []).append(rule)
        elif rule.principal is not None:
            self.by_principal.setdefault(rule.principal, []).append(rule)
        elif rule.topic is not None:
            self.by_topic.setdefault(rule.topic, []).append(rule)
            self.open = True
        else:
            self.rest.append(rule)
            self.open = True

    def seal(self) -> None:
        """Compute ``names`` once every rule is in."""
        names: set[str | None] = {*self.by_group, *self.by_client, *self.by_principal}
        if self.by_group:
            names.add(None)
        self.names = frozenset(names)

    def candidates(self, client_id: str | None, principal: str, request: Any
                   ) -> list[FaultRule]:
        """The rules that may match, by id (the order they are tried in)."""
        found: list[list[FaultRule]] = []
        if self.by_group:
            gid = getattr(request, "group_id", None)
            if isinstance(gid, str):
                rules = self.by_group.get(gid)
                if rules:
                    found.append(rules)
            else:
                for g in request_groups(request):
                    rules = self.by_group.get(g)
                    if rules:
                        found.append(rules)
        if self.by_client:
            rules = self.by_client.get(client_id)
            if rules:
                found.append(rules)
        if self.by_principal:
            rules = self.by_principal.get(principal)
            if rules:
                found.append(rules)
        if self.by_topic:
            for t in set(request_topics(request)):
                rules = self.by_topic.get(t)
                if rules:
                    found.append(rules)
        if self.rest:
            found.append(self.rest)
        if len(found) <= 1:
            return found[0] if found else []
        return sorted({r.id: r for rules in found for r in rules}.values(), key=_rule_id)


def _rule_id(rule: FaultRule) -> int:
    return rule.id


class FaultRules:
    """The installed rules. ``add``/``remove``/``clear`` from Python, the CLI and the
    admin HTTP API, all on the broker's loop; ``match`` on the dispatch path, which
    looks ``api_key`` up in ``index`` first, so an API no rule names costs one dict
    lookup."""

    def __init__(self, clock: Clock = wall_ms,
                 on_fire: Callable[[FaultRule], None] | None = None) -> None:
        self.clock = clock
        self._rules: dict[int, FaultRule] = {}
        self._ids = itertools.count(1)
        #: api key -> its rules; read on every request, so rebuilt on every change.
        self.index: dict[int, KeyIndex] = {}
        #: Called with the rule each time one fires (metrics).
        self.on_fire = on_fire
    # --- managing rules -------------------------------------------------------------------

    def add(
        self,
        api: str | int,
        *,
        error: str | int | ErrorCode | None = None,
        action: str | FaultAction | None = None,
        delay_ms: int = 0,
        versions: tuple[int, int] | None = None,
        client_id: str | None = None,
        principal: str | None = None,
        group_id: str | None = None,
        topic: str | None = None,
        count: int | None = None,
        duration_ms: int | None = None,
        probability: float = 1.0,
        seed: int | None = None,
        node: int | None = None,
    ) -> FaultRule:
        api_key = api_key_of(api)
        if action is None:
            act = FaultAction.ERROR if error is not None else \
                FaultAction.DELAY if delay_ms else None
            if act is None:
                raise FaultError("a rule needs an action: error, delay, drop, close_before "
                                 "or close_after")
        else:
            try:
                act = FaultAction(action)
            except ValueError:
                raise FaultError(f"unknown action {action!r}: expected one of "
                                 f"{', '.join(a.value for a in FaultAction)}") from None
        code = error_of(error) if error is not None else None
        if act is FaultAction.ERROR and (code is None or code is NO_ERROR):
            raise FaultError("action error needs a non-zero error code")
        if act is not FaultAction.ERROR and code is not None:
            raise FaultError(f"error is only for action error, not {act.value}")
        if act is FaultAction.DELAY and not 0 < _int(delay_ms, "delay_ms") <= 3_600_000:
            raise FaultError("delay_ms must be within 1..3600000")
        lo, hi = versions if versions is not None else (0, 32767)
        if not 0 <= _int(lo, "min_version") <= _int(hi, "max_version"):
            raise FaultError(f"bad version range {lo}..{hi}")
        if node is not None and _int(node, "node") < 0:
            raise FaultError("node must be a node id")
        if count is not None and _int(count, "count") < 1:
            raise FaultError("count must be at least 1")
        if duration_ms is not None and _int(duration_ms, "duration_ms") < 1:
            raise FaultError("duration_ms must be at least 1")
        if isinstance(probability, bool) or not isinstance(probability, int | float) \
                or not 0.0 < probability <= 1.0:
            raise FaultError("probability must be within (0, 1]")
        for name, value in (("client_id", client_id), ("principal", principal),
                            ("group_id", group_id), ("topic", topic)):
            if value is not None and not isinstance(value, str):
                raise FaultError(f"{name} must be a string")
        rule = FaultRule(
            id=next(self._ids), api_key=api_key, action=act, error=code,
            delay_ms=delay_ms if act is FaultAction.DELAY else 0,
            min_version=lo, max_version=hi, client_id=client_id, principal=principal,
            group_id=group_id, topic=topic, node=node, count=count,
            until_ms=None if duration_ms is None else self.clock() + duration_ms,
            probability=float(probability), seed=seed, rng=random.Random(seed),
        )
        self._rules[rule.id] = rule
        self._reindex()
        return rule

    def add_json(self, spec: Any) -> FaultRule:
        """A rule from the admin API's JSON object (the names of ``add``'s arguments)."""
        if not isinstance(spec, dict):
            raise FaultError("a rule is a JSON object")
        known = {"api", "error", "action", "delay_ms", "min_version", "max_version",
                 "client_id", "principal", "group_id", "topic", "count", "duration_ms",
                 "probability", "seed", "node"}
        unknown = sorted(set(spec) - known)
        if unknown:
            raise FaultError(f"unknown field(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(known))}")
        if "api" not in spec:
            raise FaultError("missing field api (a Kafka API name such as Heartbeat)")
        versions = None
        if "min_version" in spec or "max_version" in spec:
            versions = (spec.get("min_version", 0), spec.get("max_version", 32767))
        return self.add(
            spec["api"], error=spec.get("error"), action=spec.get("action"),
            delay_ms=spec.get("delay_ms", 0), versions=versions,
            client_id=spec.get("client_id"), principal=spec.get("principal"),
            group_id=spec.get("group_id"), topic=spec.get("topic"), count=spec.get("count"),
            duration_ms=spec.get("duration_ms"), probability=spec.get("probability", 1.0),
            seed=spec.get("seed"), node=spec.get("node"),
        )

    def remove(self, rule_id: int) -> bool:
        found = self._rules.pop(rule_id, None) is not None
        if found:
            self._reindex()
        return found

    def clear(self) -> int:
        n = len(self._rules)
        self._rules.clear()
        self._reindex()
        return n

    def get(self, rule_id: int) -> FaultRule | None:
        return self._rules.get(rule_id)

    def rules(self) -> list[FaultRule]:
        self._expire()
        return list(self._rules.values())

    def __len__(self) -> int:
        return len(self._rules)

    @contextmanager
    def injected(self, api: str | int, **kwargs: Any) -> Iterator[FaultRule]:
        """``with broker.faults.injected("Heartbeat", error="REBALANCE_IN_PROGRESS"):``;
        the rule is removed on exit."""
        rule = self.add(api, **kwargs)
        try:
            yield rule
        finally:
            self.remove(rule.id)

    def _expire(self) -> None:
        now = self.clock()
        dead = [r.id for r in self._rules.values()
                if r.until_ms is not None and now >= r.until_ms]
        for rid in dead:
            del self._rules[rid]
        if dead:
            self._reindex()

    def _reindex(self) -> None:
        index: dict[int, KeyIndex] = {}
        for rule in self._rules.values():
            ki = index.get(rule.api_key)
            if ki is None:
                ki = index[rule.api_key] = KeyIndex()
            ki.add(rule)
        for ki in index.values():
            ki.seal()
        self.index = index

    # --- the dispatch path ----------------------------------------------------------------

    def match(self, api_key: int, api_version: int, client_id: str | None, principal: str,
              request: Any, node: int | None = None) -> FaultRule | None:
        """The first rule (by id) that matches and fires now; it is charged one fire.
        ``node``: the node the request came to."""
        ki = self.index.get(api_key)
        if ki is None:
            return None
        topics: set[str] | None = None
        for rule in ki.candidates(client_id, principal, request):
            if not rule.min_version <= api_version <= rule.max_version:
                continue
            if rule.client_id is not None and rule.client_id != client_id:
                continue
            if rule.principal is not None and rule.principal != principal:
                continue
            if rule.node is not None and rule.node != node:
                continue
            if rule.topic is not None:
                if topics is None:
                    topics = set(request_topics(request))
                if rule.topic not in topics:
                    continue
            if rule.until_ms is not None and self.clock() >= rule.until_ms:
                self.remove(rule.id)
                continue
            if rule.probability < 1.0 and rule.rng.random() >= rule.probability:
                continue
            rule.fired += 1
            if rule.count is not None:
                rule.count -= 1
                if rule.count <= 0:
                    self.remove(rule.id)
            if self.on_fire is not None:
                self.on_fire(rule)
            return rule
        return None


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultError(f"{name} must be an integer, got {value!r}")
    return value
