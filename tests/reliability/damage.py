"""Damage to a partition's files for the crash loop, and what recovery must do about it.

One file of a topic's partitions is cut or overwritten at a random byte: the active
segment (twice as often as the others), an index, a time index or a producer snapshot.
For a segment, :func:`expected_cut` works out from the bytes before and after which batch
recovery must cut the segment at (the first one the damage breaks), so that the crash
loop can check the ``log.recovery_truncated`` line recovery writes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from kafkalite.protocol.records import iter_batch_headers

#: Header bytes no recovery check covers: the base offset (checked only for going
#: backwards) and the partition leader epoch. Everything else of a batch is its length,
#: magic and CRC, or covered by the CRC.
_BASE_OFFSET = range(0, 8)
_LEADER_EPOCH = range(12, 16)


@dataclass
class Damage:
    #: partition -> last offset surely kept (a damaged segment).
    kept: dict[int, int]
    #: What was done ("<partition dir>/<file> cut at byte N"), None if nothing was.
    done: str | None
    #: (partition directory, segment name, valid bytes) recovery must log, if any.
    truncation: tuple[str, str, int] | None = None
    #: (partition, offset): a batch from this offset on had its base offset moved forward.
    moved: tuple[int, int] | None = None


def expected_cut(before: bytes, after: bytes, at: int, segment_base: int
                 ) -> tuple[int, int, int]:
    """(last offset kept, valid bytes, moved) when recovery reads ``after``, damaged from
    ``at``: the batches before the first one the damage breaks (or the pre-existing torn
    tail). ``moved`` is the original base offset of a batch whose base offset field alone
    was changed to a higher value (-1 if none): recovery cannot see that (the CRC does not
    cover the field, and offsets only have to increase), so it and what follows are kept
    at other offsets, and valid bytes are not predicted (-1)."""
    last, valid = segment_base - 1, 0
    for pos, h in iter_batch_headers(before):
        end = pos + h.size
        if end > len(after):
            break  # cut
        changed = [i - pos for i in range(max(pos, at), end) if before[i] != after[i]]
        if changed:
            in_base = [i for i in changed if i in _BASE_OFFSET]
            broken = [i for i in changed if i not in _BASE_OFFSET and i not in _LEADER_EPOCH]
            if broken:
                break
            if in_base:
                new_base = int.from_bytes(after[pos : pos + 8], "big", signed=True)
                if new_base <= last:
                    break  # goes backwards: recovery stops here
                return last, -1, h.base_offset
        last, valid = h.last_offset, end
    return last, valid, -1


def damage(data_dir: Path, topic: str, partitions: int, rng: random.Random) -> Damage:
    """Damage one file of the topic; say what recovery must keep and log."""
    files = []
    for p in range(partitions):
        d = data_dir / f"{topic}-{p}"
        logs = sorted(d.glob("*.log"))
        if not logs:
            continue
        files.append((p, logs[-1]))
        files += [(p, f) for f in d.glob("*.index")]
        files += [(p, f) for f in d.glob("*.timeindex")]
        files += [(p, f) for f in d.glob("*.snapshot")]
    files = [(p, f) for p, f in files if f.stat().st_size > 0]
    if not files:
        return Damage({}, None)
    # Segments twice as often as the other files: they hold the data.
    weighted = files + [(p, f) for p, f in files if f.suffix == ".log"]
    p, path = rng.choice(weighted)
    data = path.read_bytes()
    at = rng.randrange(len(data))
    if rng.random() < 0.5:
        damaged = data[:at]
        what = "cut"
    else:
        n = rng.randint(1, 8)
        damaged = data[:at] + bytes(rng.randrange(256) for _ in range(n)) + data[at + n:]
        what = "overwritten"
    path.write_bytes(damaged)
    done = f"{path.parent.name}/{path.name} {what} at byte {at}"
    if path.suffix != ".log":
        return Damage({}, done)
    last, valid, moved = expected_cut(data, damaged, at, int(path.stem))
    truncation = None
    if 0 <= valid < len(damaged):
        truncation = (path.parent.name, path.name, valid)
    return Damage({p: last}, done, truncation, (p, moved) if moved >= 0 else None)


def logged_truncations(log_path: Path, topic: str) -> list[tuple[str, str, int]]:
    """(partition directory, segment, valid bytes) of each ``log.recovery_truncated``."""
    out = []
    for line in log_path.read_text(errors="replace").splitlines():
        if "log.recovery_truncated" not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("topic") == topic:
            out.append((f"{topic}-{e['partition']}", e["segment"], int(e["valid_bytes"])))
    return out
