"""Kafka releases kafkalite can present itself as (``kafkalite.as.version``,
``kafkalite serve --as-version X``): per release, the APIs and version ranges its broker
advertises and the feature levels a new cluster of it finalizes.

The table (kafka_releases.json beside this module) is read from each release's own jars
by scripts/kafka-release-tables.sh. A broker emulating release X serves each API at the
versions both X and kafkalite serve, and no API X lacks; ApiVersions reports X's finalized
levels of the features kafkalite implements.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: The newest release kafkalite follows: the default of ``kafkalite.as.version``.
DEFAULT_RELEASE = "4.4"


@dataclass(frozen=True)
class Release:
    name: str
    #: The full version the table was read from (e.g. "4.4.0").
    full: str
    #: api_key -> (oldest, newest) version the release's broker advertises.
    apis: dict[int, tuple[int, int]]
    #: feature name -> the level a new cluster of the release finalizes.
    features: dict[str, int]

    def clip(self, api_key: int, lo: int, hi: int) -> tuple[int, int] | None:
        """The versions of ``api_key`` both this release and [lo, hi] serve, or None."""
        theirs = self.apis.get(api_key)
        if theirs is None:
            return None
        lo, hi = max(lo, theirs[0]), min(hi, theirs[1])
        return (lo, hi) if lo <= hi else None


@cache
def releases() -> dict[str, Release]:
    raw = json.loads(Path(__file__).with_name("kafka_releases.json").read_text())
    out = {}
    for name, row in raw.items():
        if name.startswith("_"):
            continue
        out[name] = Release(name, row["release"],
                            {int(k): (int(lo), int(hi)) for k, lo, hi in row["apis"]},
                            {str(f): int(v) for f, v in row["features"].items()})
    return out


def release(name: str) -> Release:
    """The release ``name`` ("3.9", "4.4"; a patch suffix such as "3.9.1" is accepted);
    ValueError naming the known ones otherwise."""
    table = releases()
    key = name.strip()
    if key not in table:
        key = ".".join(key.split(".")[:2])
    if key not in table:
        raise ValueError(f"unknown Kafka release {name!r}: one of {', '.join(table)}")
    return table[key]
