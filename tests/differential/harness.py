"""Run one scripted scenario against a broker and record its responses as plain data.

A scenario is a function of a ``Run``: ``run.call("step", api_key, **fields)`` builds the
request from plain values (dicts for nested entities, ints in ms for durations), sends it
at the version the run chose for that API (the oldest or the newest both brokers serve),
and records the decoded response as nested dicts and lists. Names a scenario creates
(``run.topic("t")``, ``run.group("g")``) carry the scenario's name and mode, so one Kafka
serves every scenario of a session.
"""

from __future__ import annotations

import dataclasses
import datetime
import socket
import struct
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import UnionType
from typing import Any

from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.headers import encode_request_header, parse_response_header
from kafkalite.protocol.records import NewRecord, build_batch, iter_records

_LEN = struct.Struct(">i")

# --- plain values to kio entities --------------------------------------------------------

_hints: dict[type[Any], dict[str, Any]] = {}


def _type_hints(cls: type[Any]) -> dict[str, Any]:
    found = _hints.get(cls)
    if found is None:
        found = _hints[cls] = typing.get_type_hints(cls)
    return found


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _convert(args[0], value)
    if origin is tuple:
        (item, *_rest) = typing.get_args(hint)
        return tuple(_convert(item, v) for v in value)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return make(typing.cast(type[Any], hint), value)
    name = getattr(hint, "__name__", "")
    if name in ("i32Timedelta", "i64Timedelta") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if name in ("TZAware", "TZAwareMicros") and isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    if hint is uuid.UUID and isinstance(value, str):
        return uuid.UUID(value)
    return value


def make(cls: type[Any], values: dict[str, Any]) -> Any:
    """A kio entity of ``cls`` from plain ``values``; fields this version lacks are
    dropped, so one dict serves every version of a request."""
    hints = _type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in values:
            kwargs[f.name] = _convert(hints[f.name], values[f.name])
    return cls(**kwargs)


# --- kio entities to plain values --------------------------------------------------------

def records_data(raw: bytes) -> list[dict[str, Any]]:
    """The records of a fetched record set, without the batch framing a broker may lay
    out its own way (CRC, batch boundaries are compared through offsets)."""
    out = []
    for h, r in iter_records(raw):
        out.append({"offset": r.offset, "timestamp": r.timestamp, "key": r.key,
                     "value": r.value, "headers": [list(x) for x in r.headers],
                     "producer_id": h.producer_id, "producer_epoch": h.producer_epoch,
                     "transactional": h.is_transactional, "control": h.is_control})
    return out


def to_data(value: Any, name: str = "") -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name), f.name)
                for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_data(v, name) for v in value]
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        if name == "records":
            return records_data(bytes(value))
        return bytes(value).hex()
    if hasattr(value, "value") and hasattr(value, "name") and not isinstance(value, int):
        return value.value  # an enum (ErrorCode) as its number
    return value


# --- one broker --------------------------------------------------------------------------

class Closed(Exception):
    """The broker closed the connection instead of answering."""


class Wire:
    """One connection to a broker: kio requests in, plain data out."""

    def __init__(self, bootstrap: str, client_id: str = "differential") -> None:
        self.raw = RawConnection(bootstrap, client_id)
        self.raw.sock.settimeout(20)

    @property
    def versions(self) -> dict[int, tuple[int, int]]:
        return self.raw.versions

    def send_entity(self, api_key: int, version: int, fields: dict[str, Any]) -> Any:
        request = make(codec(api_key, version).request_type, fields)
        try:
            return self.raw.call(request)
        except (ConnectionError, OSError) as e:
            raise Closed(str(e)) from e

    def send_bytes(self, api_key: int, version: int, body: bytes,
                   flexible: bool | None = None) -> bytes:
        """A request whose body is given as bytes (malformed on purpose); the raw frame."""
        self.raw.corr += 1
        if flexible is None:
            flexible = codec(api_key, version).request_flexible
        header = encode_request_header(api_key, version, self.raw.corr, self.raw.client_id,
                                       flexible)
        frame = header + body
        try:
            self.raw.sock.sendall(_LEN.pack(len(frame)) + frame)
            return self.raw.recv_frame()
        except (ConnectionError, OSError) as e:
            raise Closed(str(e)) from e

    def decode(self, api_key: int, version: int, frame: bytes) -> Any:
        _corr, off = parse_response_header(frame,
                                           codec(api_key, version).response_header_flexible)
        return decode_response(api_key, version, frame, off)

    def encode(self, api_key: int, version: int, fields: dict[str, Any]) -> bytes:
        return encode_request(make(codec(api_key, version).request_type, fields))

    def close(self) -> None:
        try:
            self.raw.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.raw.close()


@dataclass
class Target:
    """A broker under test: its name, plaintext address and, where ACLs apply, the
    address of its SASL_PLAINTEXT/PLAIN listener."""

    name: str
    bootstrap: str
    sasl_bootstrap: str


@dataclass
class Run:
    """One scenario against one broker in one mode ("oldest" or "newest")."""

    scenario: str
    mode: str
    target: Target
    #: Per API the versions both brokers serve: (lowest, highest).
    common: dict[int, tuple[int, int]]
    steps: dict[str, Any] = field(default_factory=dict)
    _wires: list[Wire] = field(default_factory=list)

    def version(self, api_key: int) -> int:
        lo, hi = self.common[api_key]
        return lo if self.mode == "oldest" else hi

    def topic(self, name: str = "t") -> str:
        return f"{self.scenario}-{self.mode}-{name}"

    def group(self, name: str = "g") -> str:
        return f"{self.scenario}-{self.mode}-{name}"

    def wire(self, sasl_user: str | None = None) -> Wire:
        if sasl_user is None:
            w = Wire(self.target.bootstrap)
        else:
            w = Wire(self.target.sasl_bootstrap)
            sasl_plain(w, sasl_user, SASL_PASSWORDS[sasl_user])
        self._wires.append(w)
        return w

    @property
    def main(self) -> Wire:
        if not self._wires:
            self.wire()
        return self._wires[0]

    def call(self, step: str, api_key: int, version: int | None = None,
             wire: Wire | None = None, record: bool = True, **fields: Any) -> Any:
        """Send one request and record its response under ``step``; the decoded
        response (a kio entity) is returned for the scenario's next steps."""
        v = self.version(api_key) if version is None else version
        label = f"{step}@v{v}" if version is not None else step
        try:
            resp = (wire or self.main).send_entity(api_key, v, fields)
        except Closed:
            if record:
                self.steps[label] = {"closed": True}
            return None
        if record:
            self.steps[label] = to_data(resp)
        return resp

    def note(self, step: str, value: Any) -> None:
        """Record a value the scenario derived itself (e.g. "the connection closed")."""
        self.steps[step] = value

    def close(self) -> None:
        for w in self._wires:
            w.close()
        self._wires.clear()


SASL_PASSWORDS: dict[str, str] = {"alice": "alice-secret"}


def sasl_plain(w: Wire, user: str, password: str) -> None:
    hs = w.send_entity(17, 1, {"mechanism": "PLAIN"})
    if int(hs.error_code) != 0:
        raise RuntimeError(f"SaslHandshake failed: {hs.error_code}")
    token = b"\x00" + user.encode() + b"\x00" + password.encode()
    auth = w.send_entity(36, 2, {"auth_bytes": token})
    if int(auth.error_code) != 0:
        raise RuntimeError(f"SaslAuthenticate failed: {auth.error_code}")


def batch(*values: bytes | tuple[bytes | None, bytes | None], timestamp: int = 1_700_000_000_000,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          transactional: bool = False) -> bytes:
    """One record batch: each value a record value, or a (key, value) pair."""
    recs = [NewRecord(v[0], v[1], timestamp + i) if isinstance(v, tuple)
            else NewRecord(None, v, timestamp + i) for i, v in enumerate(values)]
    return build_batch(recs, timestamp=timestamp, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=base_sequence,
                       attributes=0x10 if transactional else 0)


Scenario = Callable[[Run], None]
