"""Message search for the console: records of a topic from an offset or a time, matched by
key or by a substring of the value (its text, or its decoded form when the Schema Registry
is served). A search reads at most ``MAX_SCAN_RECORDS`` records and ``MAX_SCAN_BYTES``
bytes of batches, says when it stopped on a bound, and where to resume."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.records import decode_batch, iter_batch_headers

from .views import MAX_MESSAGES, BadRequest, NotFound, message_json

if TYPE_CHECKING:
    from .views import BrokerView

#: The bounds of one search, over all the partitions it reads.
MAX_SCAN_RECORDS = 100_000
MAX_SCAN_BYTES = 64 * 1024 * 1024


@dataclass(slots=True)
class Query:
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None
    key: str | None = None
    value: str | None = None
    limit: int = 50


def _matches_value(needle: str, raw: bytes | None, decoded: dict[str, Any] | None) -> bool:
    if raw is None:
        return False
    if decoded is not None and "value" in decoded:
        if needle in json.dumps(decoded["value"], ensure_ascii=False, default=str):
            return True
    return needle.encode() in raw


def search(view: BrokerView, topic: str, q: Query) -> dict[str, Any]:
    info = view.storage.catalog.get(topic)
    if info is None:
        raise NotFound(f"unknown topic {topic!r}")
    if q.partition is not None and not 0 <= q.partition < info.partitions:
        raise NotFound(f"topic {topic!r} has partitions 0..{info.partitions - 1}, "
                       f"not {q.partition}")
    if not 1 <= q.limit <= MAX_MESSAGES:
        raise BadRequest(f"limit must be within 1..{MAX_MESSAGES}")
    decoder = view.decoder
    key = q.key.encode() if q.key is not None else None
    parts = [q.partition] if q.partition is not None else list(range(info.partitions))
    found: list[dict[str, Any]] = []
    records = nbytes = 0
    bounded = False
    resume: dict[int, int] = {}
    for p in parts:
        plog = view.storage.logs.get(topic, p)
        if plog is None:
            continue
        start = plog.log_start_offset
        end = plog.high_watermark
        if q.offset is not None:
            start = max(start, q.offset)
        if q.timestamp is not None:
            at = plog.offset_for_timestamp(q.timestamp)
            start = max(start, at[0] if at is not None else end)
        nxt = start
        for batch in plog.iter_batches(start):
            if records >= MAX_SCAN_RECORDS or nbytes >= MAX_SCAN_BYTES:
                bounded = True
                break
            if len(found) >= q.limit:
                break
            nbytes += len(batch)
            for pos, h in iter_batch_headers(batch):
                if h.last_offset < start or h.base_offset >= end:
                    continue
                if h.is_control:
                    nxt = max(nxt, min(h.last_offset + 1, end))
                    continue
                _h, recs = decode_batch(batch, pos)
                for r in recs:
                    if not start <= r.offset < end:
                        continue
                    if len(found) >= q.limit:
                        break
                    records += 1
                    nxt = r.offset + 1
                    if q.timestamp is not None and r.timestamp < q.timestamp:
                        continue
                    if key is not None and r.key != key:
                        continue
                    decoded = decoder.decode(r.value) if decoder is not None else None
                    if q.value is not None and not _matches_value(q.value, r.value, decoded):
                        continue
                    found.append({"partition": p, **message_json(r, decoded)})
        resume[p] = nxt
    found.sort(key=lambda m: (m["timestamp"], m["partition"], m["offset"]))
    return {"topic": topic, "matches": found[:q.limit], "scanned_records": records,
            "scanned_bytes": nbytes, "bounded": bounded,
            "limits": {"records": MAX_SCAN_RECORDS, "bytes": MAX_SCAN_BYTES},
            "resume_offsets": [{"partition": p, "offset": o} for p, o in sorted(resume.items())],
            "schema_registry": decoder is not None}
