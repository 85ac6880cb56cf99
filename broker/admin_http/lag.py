"""Lag rows written by ``kafkalite pipeline watch --admin URL``: the latest row per
(group, topic, partition), kept in memory for ``GET /api/v1/lag``.

The stream writes only the rows that changed at each trigger, so the board is the stream's
view as of its last trigger. It is not persisted: a restarted broker shows what the stream
writes after the restart.
"""

from __future__ import annotations

from typing import Any

from .views import BadRequest

#: At most this many (group, topic, partition) rows are kept; a post that would go past
#: it is refused whole.
MAX_ROWS = 100_000
#: At most this many rows per post (the stream sends one post per micro-batch).
MAX_POST = 5_000

_INTS = ("partition", "committed_offset", "log_end_offset", "lag")
_STRS = ("group", "topic", "as_of")

Row = dict[str, Any]


def _row(i: int, raw: Any) -> Row:
    if not isinstance(raw, dict):
        raise BadRequest(f"rows[{i}] must be a JSON object")
    row: Row = {}
    for name in _STRS:
        v = raw.get(name)
        if not isinstance(v, str) or not v:
            raise BadRequest(f"rows[{i}].{name} must be a non-empty string, got {v!r}")
        row[name] = v
    for name in _INTS:
        v = raw.get(name)
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadRequest(f"rows[{i}].{name} must be an integer, got {v!r}")
        row[name] = v
    if row["partition"] < 0:
        raise BadRequest(f"rows[{i}].partition must be 0 or more, got {row['partition']}")
    return row


class LagBoard:
    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: dict[tuple[str, str, int], Row] = {}

    def post(self, body: Any) -> int:
        """Validate every row of ``{"rows": [...]}`` then keep them all, or none."""
        if not isinstance(body, dict) or not isinstance(body.get("rows"), list):
            raise BadRequest('the body must be a JSON object {"rows": [...]}')
        raw = body["rows"]
        if len(raw) > MAX_POST:
            raise BadRequest(f"at most {MAX_POST} rows per post, got {len(raw)}")
        rows = [_row(i, r) for i, r in enumerate(raw)]
        keys = {(r["group"], r["topic"], r["partition"]) for r in rows}
        if len(self._rows) + len(keys - self._rows.keys()) > self.max_rows:
            raise BadRequest(f"the board keeps at most {self.max_rows} partitions' lag")
        for r in rows:
            self._rows[r["group"], r["topic"], r["partition"]] = r
        return len(rows)

    def rows(self, group: str | None = None) -> list[Row]:
        """The rows, by group, topic and partition; only ``group``'s when given."""
        return [self._rows[k] for k in sorted(self._rows)
                if group is None or k[0] == group]
