"""The checked-in list of known differences (allowlist.toml): each entry names the
scenarios and the response paths it covers (patterns where ``*`` matches anything and
every other character itself) and the reason, which docs/compatibility.md gives too."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

PATH = Path(__file__).with_name("allowlist.toml")


def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")))


@dataclass(frozen=True)
class Allowed:
    scenario: str
    paths: tuple[str, ...]
    reason: str
    #: The difference comes and goes with the reference Kafka's timing: not judged stale.
    sometimes: bool = False

    def applies_to(self, scenario: str) -> bool:
        return _pattern(self.scenario).fullmatch(scenario) is not None

    def covers(self, scenario: str, path: str) -> bool:
        return self.applies_to(scenario) and any(
            _pattern(p).fullmatch(path) is not None for p in self.paths)

    def unused(self, scenario: str, paths: list[str]) -> list[str]:
        """This entry's path patterns that match none of ``paths`` (the scenario's
        differences): an entry that no longer matches would hide a regression."""
        if self.sometimes or not self.applies_to(scenario):
            return []
        return [p for p in self.paths
                if not any(_pattern(p).fullmatch(d) is not None for d in paths)]


def load(path: Path = PATH) -> list[Allowed]:
    data = tomllib.loads(path.read_text())
    out = []
    for entry in data.get("difference", []):
        if not entry.get("reason"):
            raise ValueError(f"allowlist entry without a reason: {entry}")
        paths = entry["path"]
        out.append(Allowed(entry["scenario"], tuple([paths] if isinstance(paths, str)
                                                    else paths), entry["reason"],
                           bool(entry.get("sometimes", False))))
    return out
