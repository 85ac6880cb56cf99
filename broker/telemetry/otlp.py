"""Pushed metrics: the PushTelemetry payload decompressed (Kafka's record codecs) and
decoded as OpenTelemetry ``MetricsData`` with the ``opentelemetry-proto`` package.

Each data point becomes one ``Point``: a gauge's or sum's value, a histogram's or
summary's count and sum (as ``<name>.count`` and ``<name>.sum``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import decompress

#: The compression types a client may push with, in Kafka's order of preference.
ACCEPTED_COMPRESSION = (4, 3, 1, 2)  # zstd, lz4, gzip, snappy
KNOWN_COMPRESSION = frozenset({0, 1, 2, 3, 4})


class BadPayload(ValueError):
    """Not a MetricsData the codec named could have produced."""


class TooLarge(ValueError):
    """Decompressed past ``telemetry.max.bytes``."""


@dataclass(frozen=True, slots=True)
class Point:
    name: str
    value: float
    unit: str
    #: The data point's attributes, as text.
    attributes: tuple[tuple[str, str], ...]


def _text(value: Any) -> str:
    kind = value.WhichOneof("value")
    if kind is None:
        return ""
    v = getattr(value, kind)
    if kind == "bool_value":
        return "true" if v else "false"
    if kind == "bytes_value":
        return bytes(v).hex()
    if kind in ("array_value", "kvlist_value"):
        return str(v).replace("\n", " ").strip()
    return str(v)


def _attributes(kvs: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((kv.key, _text(kv.value)) for kv in kvs))


def _number(point: Any) -> float:
    return float(point.as_int if point.WhichOneof("value") == "as_int" else point.as_double)


def decode(compression: int, payload: bytes, max_bytes: int) -> list[Point]:
    """Every data point of a pushed payload; raises ``BadPayload`` or ``TooLarge``."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    try:
        raw = decompress(compression, payload)
    except ProtocolError as e:
        raise BadPayload(str(e)) from None
    if len(raw) > max_bytes:
        raise TooLarge(f"{len(raw)} bytes decompressed, telemetry.max.bytes is {max_bytes}")
    data = MetricsData()
    try:
        data.ParseFromString(raw)
    except DecodeError as e:
        raise BadPayload(f"not an OTLP MetricsData: {e}") from None
    return list(_points(data))


def _points(data: Any) -> Iterator[Point]:
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                name, unit = metric.name, metric.unit
                if kind in ("gauge", "sum"):
                    for p in getattr(metric, kind).data_points:
                        yield Point(name, _number(p), unit, _attributes(p.attributes))
                elif kind in ("histogram", "exponential_histogram", "summary"):
                    for p in getattr(metric, kind).data_points:
                        attrs = _attributes(p.attributes)
                        yield Point(f"{name}.count", float(p.count), "", attrs)
                        yield Point(f"{name}.sum", float(p.sum), unit, attrs)
