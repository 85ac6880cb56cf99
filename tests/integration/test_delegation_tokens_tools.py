"""Kafka 4.4's kafka-delegation-tokens tool against kafkalite's SASL_PLAINTEXT SCRAM
listener: create, describe, renew and expire a token; kafka-topics authenticating with
the token (SCRAM ``tokenauth=true``) as the token's owner; the token kept across a
restart; and the tool refused over the token itself and on a PLAINTEXT listener."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from structlog.testing import capture_logs

from kafkalite.broker.security.fixture import JAAS_SCRAM, SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config
from .test_security_clients import write_properties

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
SETUP = SecuritySetup("SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",),
                      users={"alice": "alice-secret", "bob": "bob-secret"})
#: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED as the Java client reports it.
NOT_ALLOWED = "UnsupportedByAuthenticationException"
SECRET = {"delegation.token.secret.key": "the-secret-key"}


def _token_rows(out: str) -> list[list[str]]:
    """The tool's table rows (TOKENID HMAC OWNER REQUESTER RENEWERS ...), header dropped."""
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if ln and ln[0] == "TOKENID")
    return lines[start + 1:]


def test_delegation_token_tool_and_token_login(tmp_path: Path) -> None:
    log = tools_log_config(tmp_path)
    b = BrokerThread(tmp_path / "broker", overrides=SECRET, security=SETUP).start()
    try:
        alice = write_properties(tmp_path / "alice.properties",
                                 b.client("alice", "SCRAM-SHA-256").java())

        def tool(*args: str, config: Path = alice, check: bool = True) -> str:
            out = run_tool(TOKENS, "--bootstrap-server", b.bootstrap, "--command-config",
                           str(config), *args, log_config=log, check=check)
            return out.stdout + out.stderr

        created = tool("--create", "--max-life-time-period", "-1",
                       "--renewer-principal", "User:bob")
        [[token_id, hmac, owner, requester, renewers, *_]] = _token_rows(created)
        assert (owner, requester, renewers) == ("User:alice", "User:alice", "[User:bob]")
        # The tool without --owner-principal sends an empty owner list, which Kafka
        # answers with no tokens.
        assert _token_rows(tool("--describe")) == []
        desc_out = tool("--describe", "--owner-principal", "User:alice")
        described = _token_rows(desc_out)
        assert [r[:3] for r in described] == [[token_id, hmac, "User:alice"]], desc_out
        renewed = tool("--renew", "--hmac", hmac, "--renew-time-period", "-1")
        assert "Completed renew operation" in renewed, renewed

        # A client logging in with the token is alice, and may not ask for tokens.
        token_props = {**b.client("alice", "SCRAM-SHA-256").java(), "sasl.jaas.config": (
            f'{JAAS_SCRAM} required username="{token_id}" password="{hmac}" '
            'tokenauth="true";')}
        over_token = write_properties(tmp_path / "token.properties", token_props)
        with capture_logs() as logs:
            listed = run_tool(TOPICS, "--bootstrap-server", b.bootstrap, "--command-config",
                              str(over_token), "--list", log_config=log)
        assert listed.returncode == 0
        assert any(e.get("event") == "sasl.authenticated" and e.get("principal") ==
                   "User:alice" for e in logs), logs
        refused = tool("--describe", "--owner-principal", "User:alice", config=over_token,
                       check=False)
        assert NOT_ALLOWED in refused, refused
        wrong = write_properties(tmp_path / "wrong.properties", {
            **token_props, "sasl.jaas.config": (f'{JAAS_SCRAM} required username="{token_id}" '
                                                'password="nope" tokenauth="true";')})
        bad = run_tool(TOPICS, "--bootstrap-server", b.bootstrap, "--command-config",
                       str(wrong), "--list", log_config=log, check=False)
        assert bad.returncode != 0
    finally:
        b.stop()

    # Kept in the data directory across a restart; then expired at once.
    b = BrokerThread(tmp_path / "broker", overrides=SECRET, security=SETUP).start()
    try:
        alice = write_properties(tmp_path / "alice2.properties",
                                 b.client("alice", "SCRAM-SHA-256").java())
        assert [r[0] for r in _token_rows(tool("--describe", "--owner-principal",
                                                "User:alice", config=alice))] == [token_id]
        expired = tool("--expire", "--hmac", hmac, "--expiry-time-period", "-1", config=alice)
        assert "Completed expire operation" in expired, expired
        assert _token_rows(tool("--describe", "--owner-principal", "User:alice",
                                config=alice)) == []
    finally:
        b.stop()


def test_plaintext_listener_refuses_token_requests(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    b = make_broker(overrides=SECRET)
    plain = write_properties(tmp_path / "plain.properties", {"security.protocol": "PLAINTEXT"})
    out = run_tool(TOKENS, "--bootstrap-server", b.bootstrap, "--command-config", str(plain),
                   "--create", "--max-life-time-period", "-1",
                   log_config=tools_log_config(tmp_path), check=False)
    assert out.returncode != 0
    assert NOT_ALLOWED in out.stdout + out.stderr, out.stdout + out.stderr
