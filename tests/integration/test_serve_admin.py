"""``kafkalite serve`` with the admin listener, end to end: the start line a terminal
shows, ``kafkalite ctl fault`` against the served broker with a client seeing the fault,
and a bad ``admin.listener`` refused as a configuration error."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerProcess
from kafkalite.client.kafka import RawConnection, request
from kafkalite.protocol.errors import ErrorCode

HEARTBEAT = 12


def test_start_line_on_a_terminal(tmp_path: Path) -> None:
    data = tmp_path / "data"
    master, slave = pty.openpty()
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(data),
         "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"],
        stdout=slave, stderr=log, stdin=subprocess.DEVNULL)
    os.close(slave)
    log.close()
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"\n" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                seen += os.read(master, 4096)
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
        line = seen.decode().strip()
        m = re.fullmatch(r"kafkalite \S+ ready: bootstrap 127\.0\.0\.1:(\d+), data (\S+), "
                         r"console (http://127\.0\.0\.1:\d+/)", line)
        assert m is not None, line
        assert Path(m.group(2)) == data.resolve()
        with urllib.request.urlopen(m.group(3), timeout=10) as resp:
            assert b"kafkalite console" in resp.read()
        conn = RawConnection(f"127.0.0.1:{m.group(1)}")
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        os.close(master)


def ctl(admin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite", "ctl", "--admin", admin, *args],
                          capture_output=True, text=True, timeout=60)


def test_ctl_fault_reaches_a_served_broker(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", {"admin.listener": "127.0.0.1:0"}) as b:
        assert b.admin_url is not None
        added = ctl(b.admin_url, "fault", "add", "--api", "Heartbeat", "--error",
                    "REBALANCE_IN_PROGRESS", "--count", "3")
        assert added.returncode == 0, added.stderr
        rule_id = added.stdout.split()[2].rstrip(":")
        conn = RawConnection(b.bootstrap)
        hb = request(HEARTBEAT, conn.version(HEARTBEAT, 4), group_id="g", generation_id=1,
                     member_id="m", group_instance_id=None)
        got = [ErrorCode(conn.call(hb).error_code) for _ in range(4)]
        assert got[:3] == [ErrorCode.rebalance_in_progress] * 3
        assert got[3] is not ErrorCode.rebalance_in_progress
        assert ctl(b.admin_url, "fault", "list").stdout.strip() == "no fault rules"
        removed = ctl(b.admin_url, "fault", "remove", rule_id)
        assert removed.returncode == 1 and f"no fault rule with id {rule_id}" in removed.stderr
        ctl(b.admin_url, "fault", "add", "--api", "Heartbeat", "--action", "close_before",
            "--client-id", "doomed")
        listed = ctl(b.admin_url, "fault", "list").stdout
        assert "Heartbeat close_before client_id=doomed" in listed, listed
        assert ctl(b.admin_url, "fault", "clear").stdout.strip() == "removed 1 rule"
        # The broker carried on throughout.
        assert ErrorCode(conn.call(hb).error_code) is got[3]
        conn.close()


def test_bad_admin_listener_is_a_configuration_error(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "kafkalite", "serve", "--data-dir",
                          str(tmp_path / "d"), "--listen", "127.0.0.1:0", "--admin", "nowhere"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "configuration error: admin.listener must be HOST:PORT" in out.stderr


def test_ctl_clock_and_scenario_on_a_manual_clock_broker(tmp_path: Path) -> None:
    overrides = {"admin.listener": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"}
    with BrokerProcess(tmp_path / "data", overrides, ["--manual-clock"]) as b:
        assert b.admin_url is not None
        shown = ctl(b.admin_url, "clock", "show")
        assert shown.returncode == 0 and shown.stdout.startswith("manual clock at ")
        start = int(shown.stdout.split()[3])
        advanced = ctl(b.admin_url, "clock", "advance", "45s")
        assert advanced.returncode == 0, advanced.stderr
        assert int(advanced.stdout.split()[3]) == start + 45_000
        missing = ctl(b.admin_url, "scenario", "rebalance", "--group", "nobody")
        assert missing.returncode == 0 and '"GROUP_ID_NOT_FOUND"' in missing.stdout
        held = ctl(b.admin_url, "scenario", "partition-loading", "--group", "g", "--for", "1s")
        assert held.returncode == 0 and "COORDINATOR_LOAD_IN_PROGRESS" in held.stdout
        conn = RawConnection(b.bootstrap)
        hb = request(HEARTBEAT, conn.version(HEARTBEAT, 4), group_id="g", generation_id=1,
                     member_id="m", group_instance_id=None)
        assert ErrorCode(conn.call(hb).error_code) is ErrorCode.coordinator_load_in_progress
        assert ctl(b.admin_url, "clock", "advance", "1s").returncode == 0
        assert ErrorCode(conn.call(hb).error_code) is ErrorCode.unknown_member_id
        conn.close()


def test_ctl_broker_list_shows_every_node(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", {"admin.listener": "127.0.0.1:0",
                                           "broker.rack": "a,b,c"},
                       extra_args=["--nodes", "3"]) as b:
        assert b.admin_url is not None
        listed = ctl(b.admin_url, "broker", "list")
        assert listed.returncode == 0, listed.stderr
        rows = [line.split("\t") for line in listed.stdout.splitlines()]
        assert [(r[0], r[1], r[2]) for r in rows] == [
            (str(i + 1), address, f"rack {rack}")
            for i, (address, rack) in enumerate(zip(b.bootstraps, "abc", strict=True))]
        assert rows[0][-1] == "controller" and len(rows[1]) == len(rows[2]) == 5
        assert [r[3] for r in rows] == ["running"] * 3
