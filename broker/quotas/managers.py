"""Client quotas enforced, as Kafka's quota managers enforce them.

- ``ClientQuotaManager`` (one per quota key: ``producer_byte_rate``,
  ``consumer_byte_rate``, ``request_percentage``, ``controller_mutation_rate``) finds the
  quota of a (user, client id) in Kafka's order of the eight entity combinations
  (user+client, user+default client, user, default user+client, default user+default
  client, default user, client, default client), keeps one sensor per the entity the quota
  was found at (so clients sharing a user quota share its rate) and answers the throttle
  time of each request.
- ``ControllerMutationQuota``: the per-request view of ``controller_mutation_rate``,
  strict (THROTTLING_QUOTA_EXCEEDED) or permissive by request version, as Kafka's.
- ``IpConnectionRates``: ``connection_creation_rate`` per IP (its own, else the default).

The store (``quotas.py``) tells ``QuotaManagers`` of every change. ``enabled`` stays False
until a quota is set, so a broker without quotas pays one attribute test per request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.protocol.errors import ErrorCode

from .rates import Avg, MutationSensor, RateSensor, Window
from .store import CLIENT_ID, IP, USER, ClientQuotaStore, Entity

PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_percentage"
MUTATION = "controller_mutation_rate"
CONNECTION_RATE = "connection_creation_rate"

_LONG_MAX = float(2**63 - 1)
_INT_MAX = 2**31 - 1
#: Kafka's QuotaTypes bits: which entity shapes have ever had a quota of this key.
_CLIENT, _USER, _USER_CLIENT = 1, 2, 4
#: An entity part: None (absent), DEFAULT, or "=" + the name.
DEFAULT = "*"
Part = str | None
Tags = tuple[str, str]


def _part(names: Mapping[str, str | None], etype: str) -> Part:
    if etype not in names:
        return None
    name = names[etype]
    return DEFAULT if name is None else "=" + name


#: Kafka drops a quota sensor unused for an hour (InactiveSensorExpirationTimeSeconds);
#: here the check runs when a sensor is added past every multiple of this many.
_EXPIRE_MS = 3_600_000
_EXPIRE_EVERY = 1024


def expire(sensors: dict[Any, Any], now: int,
           throttles: dict[Any, Any] | None = None) -> None:
    """Drop the sensors unused for an hour, once in ``_EXPIRE_EVERY`` additions."""
    if not sensors or len(sensors) % _EXPIRE_EVERY:
        return
    for key in [k for k, s in sensors.items() if now - s.last_ms >= _EXPIRE_MS]:
        del sensors[key]
    if throttles is not None:
        for key in [k for k in throttles if k not in sensors]:
            del throttles[key]


def user_of(principal: str) -> str:
    """The user a quota names: the principal's name without its type."""
    return principal.partition(":")[2] or principal


class ClientQuotaManager:
    """One quota key's overrides and sensors (Kafka's ClientQuotaManager with its
    DefaultQuotaCallback)."""

    def __init__(self, key: str, window_ms: int, samples: int,
                 max_throttle_ms: int | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        self.key = key
        #: The broker clock (ms), for the topic handlers' mutation quotas.
        self.now: Callable[[], int] = clock or (lambda: 0)
        self.window_ms = window_ms
        self.samples = samples
        self.max_throttle_ms = max_throttle_ms
        self.overrides: dict[tuple[Part, Part], float] = {}
        self.types = 0
        self.sensors: dict[Tags, RateSensor | MutationSensor] = {}
        #: Throttle times given for this quota, by the sensor's tags (Kafka's
        #: throttle-time metric), over the quota's windows.
        self.throttle_times: dict[Tags, Avg] = {}

    @property
    def enabled(self) -> bool:
        return self.types != 0

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take this key's quotas from the store's (all of them, after any change)."""
        overrides: dict[tuple[Part, Part], float] = {}
        for entity, values in quotas.items():
            value = values.get(self.key)
            if value is None:
                continue
            names = dict(entity)
            if IP in names:
                continue
            user, client = _part(names, USER), _part(names, CLIENT_ID)
            overrides[(user, client)] = value
            # Sticky, as Kafka's: a removed quota keeps its shape's tags.
            self.types |= (_USER_CLIENT if client is not None else _USER) \
                if user is not None else _CLIENT
        self.overrides = overrides
        for tags, sensor in self.sensors.items():
            sensor.window = self._window(tags)

    # --- Kafka's DefaultQuotaCallback ---------------------------------------------------

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """The (user, client-id) tags of the sensor this client's usage is counted in."""
        types = self.types
        if types in (0, _CLIENT):
            return "", client_id
        if types == _USER:
            return user, ""
        if types == _USER_CLIENT:
            return user, client_id
        o = self.overrides
        u, c = "=" + user, "=" + client_id
        if (u, c) in o or (u, DEFAULT) in o:
            return user, client_id
        if (u, None) in o:
            return user, ""
        if (DEFAULT, c) in o or (DEFAULT, DEFAULT) in o:
            return user, client_id
        if (DEFAULT, None) in o:
            return user, ""
        return "", client_id

    def limit(self, tags: Tags) -> float | None:
        user, client_id = tags
        o = self.overrides
        keys: tuple[tuple[Part, Part], ...] = ()
        if user and client_id:
            u, c = "=" + user, "=" + client_id
            keys = ((u, c), (u, DEFAULT), (DEFAULT, c), (DEFAULT, DEFAULT))
        elif user:
            keys = (("=" + user, None), (DEFAULT, None))
        elif client_id:
            keys = ((None, "=" + client_id), (None, DEFAULT))
        for k in keys:
            if k in o:
                return o[k]
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        return self.limit(self.metric_tags(user, client_id))

    # --- recording ----------------------------------------------------------------------

    def _window(self, tags: Tags) -> Window:
        bound = self.limit(tags)
        return Window(self.window_ms, self.samples, _LONG_MAX if bound is None else bound)

    def sensor(self, user: str, client_id: str, now: int) -> RateSensor:
        tags = self.metric_tags(user, client_id)
        s = self.sensors.get(tags)
        if s is None:
            expire(self.sensors, now, self.throttle_times)
            s = self.sensors[tags] = RateSensor(self._window(tags), self.max_throttle_ms, now)
        assert isinstance(s, RateSensor)
        return s

    def record(self, user: str, client_id: str, value: float, now: int) -> int:
        """Record ``value`` for this client; the throttle time in ms (0: within quota)."""
        if not self.types:
            return 0
        return self.sensor(user, client_id, now).record(value, now)

    def throttled(self, user: str, client_id: str, ms: int, now: int) -> None:
        """This quota set the request's throttle time (Kafka's ``throttle``, called for
        the quota that gave the longest)."""
        tags = self.metric_tags(user, client_id)
        avg = self.throttle_times.get(tags)
        if avg is None:
            if tags not in self.sensors:
                return  # expired meanwhile
            avg = self.throttle_times[tags] = Avg()
        avg.record(Window(self.window_ms, self.samples, _LONG_MAX), float(ms), now)

    def unrecord(self, user: str, client_id: str, value: float, now: int) -> None:
        self.sensor(user, client_id, now).record(-value, now, check=False)

    def max_window_value(self, user: str, client_id: str) -> float:
        """The most a client may take in one window without being throttled
        (getMaxValueInQuotaWindow): fetches are capped to it."""
        if not self.types:
            return _LONG_MAX
        bound = self.quota(user, client_id)
        if bound is None:
            return _LONG_MAX
        return bound * (self.samples - 1) * (self.window_ms / 1000.0)


class ThrottlingQuotaExceeded(Exception):
    def __init__(self, throttle_ms: int) -> None:
        super().__init__("The throttling quota has been exceeded.")
        self.throttle_ms = throttle_ms
        self.code = ErrorCode.throttling_quota_exceeded


class ControllerMutationQuota:
    """One request's controller-mutation quota (Kafka's Strict/Permissive/Unbounded
    ControllerMutationQuota): ``record`` the partitions a topic change mutates."""

    __slots__ = ("_last_ms", "_now", "_sensor", "_strict", "_throttle_ms")

    def __init__(self, sensor: MutationSensor | None, strict: bool, now: int) -> None:
        self._sensor = sensor
        self._strict = strict
        self._now = now
        self._throttle_ms = 0
        self._last_ms = now

    def record(self, permits: float, now: int | None = None) -> None:
        """Raises ThrottlingQuotaExceeded (strict only) when the bucket is in debt."""
        sensor = self._sensor
        if sensor is None:
            return
        at = self._now if now is None else now
        if self._strict:
            ms = sensor.check(at)
            if ms > 0:
                self._throttle_ms, self._last_ms = ms, at
                raise ThrottlingQuotaExceeded(ms)
            sensor.record(permits, at, check=False)
        else:
            ms = sensor.record(permits, at, check=True)
            if ms > 0:
                self._throttle_ms, self._last_ms = ms, at

    def throttle_time(self, now: int) -> int:
        return max(0, self._throttle_ms - (now - self._last_ms))


class MutationQuotaManager(ClientQuotaManager):
    """``controller_mutation_rate``: a token bucket per entity (KIP-599)."""

    def mutation_sensor(self, user: str, client_id: str, now: int) -> MutationSensor:
        tags = self.metric_tags(user, client_id)
        s = self.sensors.get(tags)
        if s is None:
            expire(self.sensors, now, self.throttle_times)
            s = self.sensors[tags] = MutationSensor(self._window(tags), now)
        assert isinstance(s, MutationSensor)
        return s

    def quota_for(self, user: str, client_id: str, strict: bool, now: int
                  ) -> ControllerMutationQuota:
        sensor = self.mutation_sensor(user, client_id, now) if self.types else None
        return ControllerMutationQuota(sensor, strict, now)


class IpConnectionRates:
    """``connection_creation_rate`` by IP (Kafka's ConnectionQuotas): an IP's own quota,
    else the default IP quota; an IP over it has its new connections throttled."""

    def __init__(self, window_ms: int, samples: int) -> None:
        self.window_ms = window_ms
        self.samples = samples
        self.per_ip: dict[str, int] = {}
        self.default = _INT_MAX
        self.sensors: dict[str, RateSensor] = {}

    @property
    def enabled(self) -> bool:
        return bool(self.per_ip) or self.default != _INT_MAX

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        per_ip: dict[str, int] = {}
        default = _INT_MAX
        for entity, values in quotas.items():
            names = dict(entity)
            value = values.get(CONNECTION_RATE)
            if IP not in names or value is None:
                continue
            ip = names[IP]
            if ip is None:
                default = int(value)
            else:
                per_ip[ip] = int(value)
        self.per_ip, self.default = per_ip, default
        for ip, sensor in self.sensors.items():
            sensor.window = Window(self.window_ms, self.samples, self.rate_for(ip))

    def rate_for(self, ip: str) -> int:
        return self.per_ip.get(ip, self.default)

    def admit(self, ip: str, now: int) -> int:
        """Count a new connection from ``ip``; the ms to hold it before closing it when
        the IP is over its rate (it is then not counted), else 0."""
        rate = self.rate_for(ip)
        if rate == _INT_MAX:
            return 0
        sensor = self.sensors.get(ip)
        if sensor is None:
            expire(self.sensors, now)
            sensor = self.sensors[ip] = RateSensor(
                Window(self.window_ms, self.samples, rate), self.window_ms, now)
        ms = sensor.record(1.0, now)
        if ms > 0:
            sensor.record(-1.0, now, check=False)
        return ms


class QuotaManagers:
    """Every quota manager of the broker, fed by the quota store."""

    def __init__(self, store: ClientQuotaStore | None = None, window_num: int = 11,
                 window_s: int = 1, controller_window_num: int = 11,
                 controller_window_s: int = 1, clock: Callable[[], int] | None = None) -> None:
        w = window_s * 1000
        self.produce = ClientQuotaManager(PRODUCE, w, window_num)
        self.fetch = ClientQuotaManager(FETCH, w, window_num)
        self.request = ClientQuotaManager(REQUEST, w, window_num, max_throttle_ms=w)
        self.mutation = MutationQuotaManager(MUTATION, controller_window_s * 1000,
                                             controller_window_num, clock=clock)
        self.connections = IpConnectionRates(w, window_num)
        #: Any client quota set (ever, as Kafka's managers): requests go the quota path.
        self.enabled = False
        self.store = store
        if store is not None:
            store.listeners.append(self.update)
            self.update(store.quotas)

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        for m in (self.produce, self.fetch, self.request, self.mutation):
            m.update(quotas)
        self.connections.update(quotas)
        self.enabled = any(m.enabled for m in (self.produce, self.fetch, self.request,
                                               self.mutation))
