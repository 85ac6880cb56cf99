"""Consumer lag now: committed offsets and log end offsets, from a live broker or a log dir.

A :class:`Snapshot` is what the live lag stream (:mod:`.watch`) uses as its offset: a
micro-batch runs when a commit or a log end offset changed since the last one.

- From a broker (``--bootstrap``): ListGroups, OffsetFetch for every group (all its
  partitions) and ListOffsets (latest) for the partitions they commit, over one connection
  to one broker (kafkalite, or a single-broker Kafka; a partition led elsewhere reports
  its error code as a log end offset of -1).
- From a log directory: the ``__consumer_offsets`` records read incrementally (each call
  decodes only what was appended since the last) and each partition's log end offset from
  its segments' batch headers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.timekeeping.clock import wall_ms

from . import segments as sg
from .fs import LogFs, open_log_fs

LATEST = -1


@dataclass
class Snapshot:
    """Committed offsets per (group, topic, partition) and log end offsets per partition."""

    commits: dict[tuple[str, str, int], int] = field(default_factory=dict)
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    at_ms: int = 0

    def to_offset(self) -> dict[str, Any]:
        return {
            "commits": sorted([g, t, p, o] for (g, t, p), o in self.commits.items()),
            "ends": sorted([t, p, o] for (t, p), o in self.ends.items()),
            "at": self.at_ms,
        }

    @classmethod
    def from_offset(cls, d: dict[str, Any] | None) -> Snapshot:
        if not d:
            return cls()
        return cls({(g, t, int(p)): int(o) for g, t, p, o in d.get("commits", [])},
                   {(t, int(p)): int(o) for t, p, o in d.get("ends", [])}, int(d.get("at", 0)))

    def same_as(self, other: Snapshot) -> bool:
        return self.commits == other.commits and self.ends == other.ends

    def rows(self, since: Snapshot | None = None) -> list[tuple[Any, ...]]:
        """(group, topic, partition, committed, log end, lag, at) of what changed since."""
        out = []
        for (g, t, p), committed in sorted(self.commits.items()):
            end = self.ends.get((t, p))
            if since is not None and since.commits.get((g, t, p)) == committed \
                    and since.ends.get((t, p)) == end:
                continue
            lag = None if end is None or end < 0 else max(end - committed, 0)
            out.append((g, t, p, committed, end, lag, self.at_ms))
        return out


class BrokerLag:
    """Snapshots over the Kafka protocol (a new connection each time: brokers restart)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def snapshot(self) -> Snapshot:
        from kafkalite.client.kafka import RawConnection

        conn = RawConnection(self.bootstrap, client_id="kafkalite-lag")
        try:
            groups = self._groups(conn)
            commits = self._commits(conn, groups)
            ends = self._ends(conn, {(t, p) for _g, t, p in commits})
        finally:
            conn.close()
        return Snapshot(commits, ends, wall_ms())

    @staticmethod
    def _groups(conn: Any) -> list[str]:
        from kafkalite.client.kafka import request

        v = conn.version(ApiKey.LIST_GROUPS, 4)
        resp = conn.call(request(ApiKey.LIST_GROUPS, v, states_filter=()))
        if int(resp.error_code):
            raise RuntimeError(f"ListGroups failed with error {int(resp.error_code)}")
        return sorted(g.group_id for g in resp.groups)

    @staticmethod
    def _commits(conn: Any, groups: list[str]) -> dict[tuple[str, str, int], int]:
        from kafkalite.client.kafka import request, request_class
        from kafkalite.protocol.build import build

        out: dict[tuple[str, str, int], int] = {}
        if not groups:
            return out
        v = conn.version(ApiKey.OFFSET_FETCH, 8)
        if v >= 8:
            group_t = request_class(ApiKey.OFFSET_FETCH, v, "OffsetFetchRequestGroup")
            resp = conn.call(request(ApiKey.OFFSET_FETCH, v, require_stable=False, groups=tuple(
                build(group_t, group_id=g, member_id=None, member_epoch=-1, topics=None)
                for g in groups)))
            answers = [(g.group_id, g.topics) for g in resp.groups]
        else:
            answers = []
            for g in groups:
                resp = conn.call(request(ApiKey.OFFSET_FETCH, v, group_id=g, topics=None,
                                         require_stable=False))
                answers.append((g, resp.topics))
        for g, topics in answers:
            for t in topics:
                for p in t.partitions:
                    if int(p.error_code) == 0 and int(p.committed_offset) >= 0:
                        out[g, t.name, int(p.partition_index)] = int(p.committed_offset)
        return out

    @staticmethod
    def _ends(conn: Any, tps: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from kafkalite.client.kafka import request, request_class

        if not tps:
            return {}
        v = conn.version(ApiKey.LIST_OFFSETS, 6)
        topic_t = request_class(ApiKey.LIST_OFFSETS, v, "ListOffsetsTopic")
        part_t = request_class(ApiKey.LIST_OFFSETS, v, "ListOffsetsPartition")
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(tps):
            by_topic.setdefault(t, []).append(p)
        resp = conn.call(request(
            ApiKey.LIST_OFFSETS, v, replica_id=-1, isolation_level=0,
            topics=tuple(topic_t(name=t, partitions=tuple(
                part_t(partition_index=p, current_leader_epoch=-1, timestamp=LATEST)
                for p in ps)) for t, ps in by_topic.items())))
        out: dict[tuple[str, int], int] = {}
        for t in resp.topics:
            for p in t.partitions:
                out[t.name, int(p.partition_index)] = \
                    int(p.offset) if int(p.error_code) == 0 else -1
        return out


class LogDirLag:
    """Snapshots of a log directory, decoding only the ``__consumer_offsets`` tail each time."""

    def __init__(self, log_dir: str, fs_options: dict[str, str] | None = None) -> None:
        self.lfs: LogFs = open_log_fs(log_dir, fs_options)
        self.read_to: dict[int, int] = {}  # __consumer_offsets partition -> next offset
        self.commits: dict[tuple[str, str, int], int] = {}

    def _apply(self, keys: Iterable[bytes | None], values: Iterable[bytes | None]) -> None:
        for k, v in zip(keys, values, strict=True):
            if k is None:
                continue
            try:
                key = co.decode_key(k)
            except (ProtocolError, UnicodeDecodeError):
                continue
            if not isinstance(key, co.OffsetCommitKey):
                continue
            tp = (key.group, key.topic, key.partition)
            if v is None:
                self.commits.pop(tp, None)
            else:
                self.commits[tp] = co.decode_offset_value(v).offset

    def snapshot(self) -> Snapshot:
        for pdir in sg.list_partitions(self.lfs, [OFFSETS_TOPIC]):
            start = self.read_to.get(pdir.partition, 0)
            last = start
            for seg in sg.list_segments(pdir):
                for b in sg.read_segment(seg, start):
                    self._apply(b.column("key").to_pylist(), b.column("value").to_pylist())
                    last = max(last, int(b.column("offset")[-1].as_py()) + 1)
            self.read_to[pdir.partition] = last
        topics = {t for _g, t, _p in self.commits}
        ends = {(p.topic, p.partition): sg.next_offset(p)
                for p in sg.list_partitions(self.lfs, topics)} if topics else {}
        return Snapshot(dict(self.commits), ends, wall_ms())
