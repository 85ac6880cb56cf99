"""Broker properties Kafka 4.4 accepts are accepted, refused with Kafka's messages where
Kafka refuses them, and the per-node ones read as each node's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.broker.cluster import Cluster
from kafkalite.broker.config.per_node import node_values
from kafkalite.broker.config.properties import Config, ConfigError, rebalance_protocols

PROTOCOLS = "group.coordinator.rebalance.protocols"


@pytest.mark.parametrize("value", ["classic", "classic,consumer", "classic,consumer,share",
                                   "classic,consumer,streams", "CLASSIC, Share ,streams",
                                   "classic,consumer,share,streams"])
def test_rebalance_protocols_take_kafkas_four(value: str) -> None:
    cfg = Config.build(environ={}, overrides={PROTOCOLS: value})
    assert rebalance_protocols(cfg) == {p.strip().lower() for p in value.split(",")}


def test_rebalance_protocols_refused_as_kafka_refuses_them() -> None:
    with pytest.raises(ConfigError, match="Invalid value eager for configuration "
                                          f"{PROTOCOLS}: String must be one of: classic, "
                                          "consumer, share, streams"):
        Config.build(environ={}, overrides={PROTOCOLS: "classic,eager"})
    with pytest.raises(ConfigError, match="Disabling the 'classic' protocol"):
        Config.build(environ={}, overrides={PROTOCOLS: "consumer,share"})


@pytest.mark.parametrize("name", ["offsets.topic.replication.factor",
                                  "transaction.state.log.replication.factor",
                                  "share.coordinator.state.topic.replication.factor"])
def test_internal_replication_factors_default_to_three_and_must_be_positive(name: str) -> None:
    assert Config.build(environ={}).int(name) == 3
    assert Config.build(environ={}, overrides={name: "1"}).int(name) == 1
    with pytest.raises(ConfigError, match=f"Invalid value 0 for configuration {name}: "
                                          "Value must be at least 1"):
        Config.build(environ={}, overrides={name: "0"})


def test_one_node_reads_the_configured_values(tmp_path: Path) -> None:
    cfg = Config.build(environ={}, overrides={"broker.rack": "r1"})
    assert node_values(cfg, Cluster(1, "c", tmp_path, rack="r1")) == {}


def test_each_node_reads_its_own_id_rack_listeners_and_directory(tmp_path: Path) -> None:
    cfg = Config.build(environ={}, overrides={
        "kafkalite.nodes": "3", "node.id": "1", "broker.rack": "A,B,C",
        "listeners": "PLAINTEXT://127.0.0.1:9092,EXTRA://[::1]:0",
        "advertised.listeners": "PLAINTEXT://kafka:19092,EXTRA://[::1]:0",
        "log.dirs": str(tmp_path)})
    third = Cluster(3, "c", tmp_path / "nodes" / "3", rack="C")
    assert node_values(cfg, third) == {
        "node.id": "3", "broker.rack": "C",
        "listeners": "PLAINTEXT://127.0.0.1:9094,EXTRA://[::1]:0",
        "advertised.listeners": "PLAINTEXT://kafka:19094,EXTRA://[::1]:0",
        "log.dirs": str(tmp_path / "nodes" / "3")}


def test_properties_kafka_defines_are_typed_and_shown() -> None:
    """A property Kafka 4.4 defines that kafkalite keeps without acting on it reads with
    Kafka's type and its value; a name Kafka does not define stays a hidden custom one."""
    from kafkalite.broker.config.definitions import config_type, is_sensitive, kafka_types

    assert len(kafka_types()) > 300
    name = "controller.quorum.election.timeout.ms"  # kafkalite has no KRaft quorum
    assert (config_type(name), is_sensitive(name)) == ("INT", False)
    assert config_type("transaction.state.log.min.isr") == "INT"
    assert is_sensitive("sasl.oauthbearer.client.credentials.client.secret")  # a PASSWORD
    assert (config_type("my.own.setting"), is_sensitive("my.own.setting")) == (None, True)
