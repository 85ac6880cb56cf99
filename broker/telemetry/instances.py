"""Client instances (KIP-714), as Kafka's ``ClientMetricsManager`` and
``ClientMetricsInstance`` keep them: each client instance id gets the union of the
subscriptions that match it (metric prefixes, the shortest interval), a subscription id
(CRC-32C of the metrics and interval XOR the instance id's hash), and the times of its
last GetTelemetrySubscriptions and PushTelemetry, which throttle the next ones on the
broker's clock. An instance ends with its connection, or when it has not been heard from
for three push intervals (at least a minute). Pushed metrics are kept per instance: the
latest value of each series and a short history of it.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafkalite.protocol.crc import crc32c
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .otlp import KNOWN_COMPRESSION, BadPayload, Point, TooLarge, decode
from .subscriptions import ALL_METRICS, DEFAULT_INTERVAL_MS, Subscriptions

#: Kafka's cache size: 16k client instances per broker.
MAX_INSTANCES = 16_384
#: Kafka's DEFAULT_CACHE_EXPIRY_MS: an instance lives at least this long unheard.
MIN_EXPIRY_MS = 60_000
#: Series kept per instance, and values kept per series (for the console's charts).
MAX_SERIES = 1000
HISTORY = 60
#: Uuid.RESERVED: the zero id and the metadata topic's id.
_RESERVED = frozenset({0, 1})

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


def kafka_uuid(iid: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(iid.bytes).decode("ascii").rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID | None:
    """A client instance id as Kafka prints it (or in the dashed form); None if neither."""
    try:
        return uuid.UUID(text)
    except ValueError:
        pass
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def java_uuid_hash(iid: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves XORed, then the two words of that."""
    h = (iid.int >> 64) ^ (iid.int & 0xFFFFFFFFFFFFFFFF)
    return _int32((h >> 32) ^ h)


def subscription_id(metrics: list[str], interval_ms: int, iid: uuid.UUID) -> int:
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    return _int32(crc32c(text.encode()) ^ java_uuid_hash(iid))


@dataclass(slots=True)
class Series:
    name: str
    unit: str
    attributes: tuple[tuple[str, str], ...]
    #: (broker time ms, value), oldest first.
    values: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=HISTORY))


@dataclass(slots=True)
class Instance:
    instance_id: uuid.UUID
    #: The match attributes (client_id, client_software_name, ...).
    attributes: dict[str, str | None]
    connection_id: int
    version: int
    metrics: list[str]
    interval_ms: int
    subscription_id: int
    last_get_ms: int | None = None
    last_push_ms: int | None = None
    terminating: bool = False
    last_error: ErrorCode = NO_ERROR
    expires_ms: int = 0
    series: dict[SeriesKey, Series] = field(default_factory=dict)
    pushes: int = 0

    def may_get(self, now: int) -> bool:
        """Kafka's ``maybeUpdateGetRequestTimestamp``: a push interval since the last
        request of either kind."""
        last = max(self.last_get_ms or 0, self.last_push_ms or 0)
        if ((self.last_get_ms is None and self.last_push_ms is None)
                or now - last >= self.interval_ms):
            self.last_get_ms = now
            return True
        return False

    def may_push(self, now: int) -> bool:
        """Kafka's ``maybeUpdatePushRequestTimestamp``: the first push after a get is
        taken at once (clients jitter the interval), later ones a push interval apart."""
        ok = (self.last_get_ms is not None
              and (self.last_push_ms is None or self.last_get_ms > self.last_push_ms))
        if not ok:
            ok = self.last_push_ms is None or now - self.last_push_ms >= self.interval_ms
        if ok:
            self.last_push_ms = now
        return ok

    def record(self, points: list[Point], now: int) -> None:
        for p in points:
            key = (p.name, p.attributes)
            s = self.series.get(key)
            if s is None:
                if len(self.series) >= MAX_SERIES:
                    continue
                s = self.series[key] = Series(p.name, p.unit, p.attributes)
            s.values.append((now, p.value))
        self.pushes += 1


@dataclass(frozen=True, slots=True)
class Subscription:
    """What GetTelemetrySubscriptions answers (the error response carries only the code)."""

    error: ErrorCode
    instance_id: uuid.UUID | None = None
    subscription_id: int = 0
    interval_ms: int = 0
    metrics: tuple[str, ...] = ()


class Instances:
    """Every client instance of the broker, by id, and the connection each came over."""

    def __init__(self, subscriptions: Subscriptions, clock_ms: Callable[[], int],
                 max_bytes: Callable[[], int]) -> None:
        self.subscriptions = subscriptions
        self.clock_ms = clock_ms
        self.max_bytes = max_bytes
        #: Least recently heard first.
        self.by_id: OrderedDict[uuid.UUID, Instance] = OrderedDict()
        self.by_connection: dict[int, uuid.UUID] = {}

    def _evaluate(self, iid: uuid.UUID, attributes: dict[str, str | None],
                  connection_id: int) -> Instance:
        """The union of the matching subscriptions (``*`` alone if any has it)."""
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        for sub in self.subscriptions.parsed.values():
            if sub.matches(attributes):
                metrics |= sub.metrics
                interval = min(interval, sub.interval_ms)
        chosen = [ALL_METRICS] if ALL_METRICS in metrics else sorted(metrics)
        return Instance(iid, attributes, connection_id, self.subscriptions.version, chosen,
                        interval, subscription_id(chosen, interval, iid))

    def _instance(self, iid: uuid.UUID, attributes: Callable[[], dict[str, str | None]],
                  connection_id: int, now: int) -> Instance:
        self.expire(now)
        inst = self.by_id.get(iid)
        if inst is None:
            inst = self._evaluate(iid, attributes(), connection_id)
            self._add(inst)
        elif inst.version < self.subscriptions.version:
            fresh = self._evaluate(iid, inst.attributes, connection_id)
            fresh.series = inst.series  # what was pushed stays listed
            fresh.pushes = inst.pushes
            self._add(fresh)
            inst = fresh
        else:
            self.by_id.move_to_end(iid)
        inst.expires_ms = now + max(MIN_EXPIRY_MS, 3 * inst.interval_ms)
        return inst

    def _add(self, inst: Instance) -> None:
        self.by_id[inst.instance_id] = inst
        self.by_id.move_to_end(inst.instance_id)
        self.by_connection[inst.connection_id] = inst.instance_id
        while len(self.by_id) > MAX_INSTANCES:
            self._drop(next(iter(self.by_id)))

    def _drop(self, iid: uuid.UUID) -> None:
        inst = self.by_id.pop(iid, None)
        if inst is not None and self.by_connection.get(inst.connection_id) == iid:
            del self.by_connection[inst.connection_id]

    def expire(self, now: int) -> None:
        expired = [iid for iid, inst in self.by_id.items() if inst.expires_ms <= now]
        for iid in expired:
            self._drop(iid)

    def disconnected(self, connection_id: int) -> None:
        iid = self.by_connection.pop(connection_id, None)
        if iid is not None:
            self.by_id.pop(iid, None)

    def for_connection(self, connection_id: int) -> Instance | None:
        iid = self.by_connection.get(connection_id)
        return None if iid is None else self.by_id.get(iid)

    # --- the two requests -----------------------------------------------------------------

    def get_subscriptions(self, requested: uuid.UUID | None,
                          attributes: Callable[[uuid.UUID], dict[str, str | None]],
                          connection_id: int) -> Subscription:
        now = self.clock_ms()
        iid = requested
        if iid is None or iid.int == 0:
            iid = uuid.uuid4()
            while iid in self.by_id:
                iid = uuid.uuid4()
        fixed = iid
        inst = self._instance(fixed, lambda: attributes(fixed), connection_id, now)
        if not inst.may_get(now) and inst.last_error not in (
                ErrorCode.unknown_subscription_id, ErrorCode.unsupported_compression_type):
            return Subscription(ErrorCode.throttling_quota_exceeded)
        inst.last_error = NO_ERROR
        return Subscription(NO_ERROR, iid, inst.subscription_id, inst.interval_ms,
                            tuple(inst.metrics))

    def push(self, iid: uuid.UUID | None, subscription: int, terminating: bool,
             compression: int, payload: bytes | None,
             attributes: Callable[[uuid.UUID], dict[str, str | None]],
             connection_id: int) -> ErrorCode:
        if iid is None or iid.int in _RESERVED:
            return ErrorCode.invalid_request
        now = self.clock_ms()
        fixed = iid
        inst = self._instance(fixed, lambda: attributes(fixed), connection_id, now)
        error = self._check_push(inst, subscription, terminating, compression, payload, now)
        inst.terminating = terminating
        if error is not NO_ERROR:
            inst.last_error = error
            return error
        if payload:
            try:
                points = decode(compression, payload, self.max_bytes())
            except TooLarge:
                inst.last_error = ErrorCode.telemetry_too_large
                return inst.last_error
            except BadPayload:
                inst.last_error = ErrorCode.invalid_record
                return inst.last_error
            inst.record(points, now)
        inst.last_error = NO_ERROR
        return NO_ERROR

    def _check_push(self, inst: Instance, subscription: int, terminating: bool,
                    compression: int, payload: bytes | None, now: int) -> ErrorCode:
        """Kafka's ``validatePushRequest``, in its order."""
        if inst.terminating:
            return ErrorCode.invalid_request
        if not inst.may_push(now) and not terminating:
            return ErrorCode.throttling_quota_exceeded
        if subscription != inst.subscription_id:
            return ErrorCode.unknown_subscription_id
        if compression not in KNOWN_COMPRESSION:
            return ErrorCode.unsupported_compression_type
        if payload is not None and len(payload) > self.max_bytes():
            return ErrorCode.telemetry_too_large
        return NO_ERROR


def match_attributes(iid: uuid.UUID, client_id: str | None, software: Mapping[str, str | None],
                     host: str, port: int) -> dict[str, str | None]:
    """Kafka's ``ClientMetricsInstanceMetadata``: what ``match`` patterns test."""
    return {"client_instance_id": kafka_uuid(iid), "client_id": client_id,
            "client_software_name": software.get("name"),
            "client_software_version": software.get("version"),
            "client_source_address": host, "client_source_port": str(port)}
