"""Apache Kafka and kafkalite answer the same scripted requests the same way.

Every scenario (scenarios_*.py) runs against the real Kafka and against kafkalite, at the
oldest and at the newest version of each API both serve; the responses are normalised
(normalise.py) and compared field by field. A difference fails the test unless
allowlist.toml lists it with its reason, and an allow-list entry for the scenario that
no longer matches any difference fails it too (it would hide a regression).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from kafkalite.client.kafka import RawConnection, request
from kafkalite.protocol import releases

from ..kafka_reference import KAFKA_RELEASE
from . import (  # noqa: F401  (registers the scenarios)
    scenarios_admin,
    scenarios_data,
    scenarios_groups,
    scenarios_meta,
    scenarios_quotas,
    scenarios_share,
    scenarios_share_fetch,
    scenarios_streams,
    scenarios_txn,
)
from .allowlist import load
from .harness import Run, Target
from .normalise import Normaliser, flatten
from .registry import SCENARIOS

ALLOWED = load()
TELEMETRY = (71, 72)
MISSING = "<absent>"
MODES = ("oldest", "newest")
#: "scenario[mode]" -> the paths that differed, for the stale-entry check.
SEEN: dict[str, list[str]] = {}


def run_on(name: str, mode: str, target: Target,
           common: dict[int, tuple[int, int]]) -> dict[str, Any]:
    run = Run(name, mode, target, common)
    try:
        SCENARIOS[name](run)
    finally:
        run.close()
    return flatten(Normaliser().walk(run.steps))


def differences(kafka: dict[str, Any], lite: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    out = []
    for path in sorted(kafka.keys() | lite.keys()):
        a, b = kafka.get(path, MISSING), lite.get(path, MISSING)
        if a != b:
            out.append((path, a, b))
    return out


def test_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 30


def test_release_table_matches_kafka(kafka_target: Target) -> None:
    """protocol/kafka_releases.json's row for the release the reference Kafka runs is what
    that Kafka's ApiVersions really advertises: every API and range, and the finalized
    level of each feature in the row."""
    conn = RawConnection(kafka_target.bootstrap, "differential")
    try:
        resp = conn.call(request(18, 3, client_software_name="differential",
                                 client_software_version="1"))
    finally:
        conn.close()
    row = releases.release(KAFKA_RELEASE)
    # GetTelemetrySubscriptions and PushTelemetry (71, 72) are in the release's table but
    # a broker advertises them only with a client-telemetry metrics reporter configured.
    assert {int(k.api_key): (int(k.min_version), int(k.max_version))
            for k in resp.api_keys} == {k: v for k, v in row.apis.items()
                                        if k not in TELEMETRY}
    finalized = {f.name: int(f.max_version_level) for f in resp.finalized_features}
    assert {name: finalized.get(name, 0) for name in row.features} == row.features


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str, mode: str, kafka_target: Target, kafkalite_target: Target,
                  common_versions: dict[int, tuple[int, int]]) -> None:
    kafka = run_on(name, mode, kafka_target, common_versions)
    lite = run_on(name, mode, kafkalite_target, common_versions)
    where = f"{name}[{mode}]"
    found = differences(kafka, lite)
    unlisted = [d for d in found if not any(a.covers(where, d[0]) for a in ALLOWED)]
    SEEN[where] = [d[0] for d in found]
    dump = os.environ.get("DIFFERENTIAL_DUMP")
    if dump and unlisted:  # for triage: every unlisted difference as a JSON line
        with open(dump, "a") as f:
            for path, a, b in unlisted:
                f.write(json.dumps([where, path, a, b], default=repr) + "\n")
    assert not unlisted, f"{where}: differences not in allowlist.toml:\n" + "\n".join(
        f"  {path}: kafka={a!r} kafkalite={b!r}" for path, a, b in unlisted)


def test_allowlist_has_no_stale_entries() -> None:
    """Every allow-list pattern matches a difference of some scenario that ran in this
    process (runs after test_scenario): a stale entry would hide a regression of behaviour
    that was fixed. An entry is judged only when every scenario it applies to ran here
    (not with ``-k`` or xdist leaving some out)."""
    if not SEEN:
        pytest.skip("no scenario ran in this process")
    every = [f"{name}[{mode}]" for name in SCENARIOS for mode in MODES]
    stale = []
    for a in ALLOWED:
        ran = [where for where in every if a.applies_to(where)]
        if not ran and all(where in SEEN for where in every):  # names no scenario
            stale += [(a.scenario, p) for p in a.paths]
        elif ran and all(where in SEEN for where in ran):
            unused = set(a.paths)
            for where in ran:
                unused &= set(a.unused(where, SEEN[where]))
            stale += [(a.scenario, p) for p in a.paths if p in unused]
    assert not stale, "allowlist.toml entries that match no difference:\n" + "\n".join(
        f"  scenario={s!r} path={p!r}" for s, p in stale)
