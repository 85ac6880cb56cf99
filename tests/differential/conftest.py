"""The two brokers of the differential suite: the session's real Kafka
(tests/kafka_reference.py) and one kafkalite configured the same way (a PLAINTEXT listener
whose principal is a super user, and a SASL_PLAINTEXT/PLAIN listener where ACLs apply)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

import pytest

from kafkalite.broker.testing import BrokerThread
from kafkalite.client.kafka import RawConnection

from ..kafka_reference import SASL_USERS, TEST_SETTINGS, KafkaAddress
from .harness import Target

#: kafkalite takes the same settings as the reference Kafka where it knows them.
KAFKALITE_SETTINGS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items()) + ";"),
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
    "group.initial.rebalance.delay.ms": TEST_SETTINGS["group.initial.rebalance.delay.ms"],
    "group.min.session.timeout.ms": TEST_SETTINGS["group.min.session.timeout.ms"],
    "group.consumer.min.session.timeout.ms":
        TEST_SETTINGS["group.consumer.min.session.timeout.ms"],
    "group.consumer.min.heartbeat.interval.ms":
        TEST_SETTINGS["group.consumer.min.heartbeat.interval.ms"],
    "offsets.topic.num.partitions": TEST_SETTINGS["offsets.topic.num.partitions"],
    "transaction.state.log.num.partitions":
        TEST_SETTINGS["transaction.state.log.num.partitions"],
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    # The reference runs Kafka's default (kafkalite's own is 200 ms).
    "group.streams.initial.rebalance.delay.ms": "3000",
}


def warm_up(bootstrap: str, timeout: float = 60.0) -> None:
    """Kafka creates __consumer_offsets and __transaction_state on the first
    FindCoordinator and answers COORDINATOR_NOT_AVAILABLE until they are loaded: ask
    until both coordinators are known, so no scenario sees a start-up transient."""
    from kafkalite.client.kafka import request

    conn = RawConnection(bootstrap, "differential-warm-up")
    deadline = time.monotonic() + timeout
    try:
        for key_type in (0, 1):
            while True:
                resp = conn.call(request(10, 4, key_type=key_type,
                                         coordinator_keys=("warm-up",)))
                if int(resp.coordinators[0].error_code) == 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"coordinator {key_type} not available: {resp}")
                time.sleep(0.2)
        # InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS until the producer id
        # block is allocated.
        while True:
            resp = conn.call(request(22, 4, transactional_id=None,
                                     transaction_timeout=datetime.timedelta(seconds=60),
                                     producer_id=-1, producer_epoch=-1))
            if int(resp.error_code) == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"producer ids not available: {resp}")
            time.sleep(0.2)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def kafka_target(kafka_reference: KafkaAddress) -> Target:
    warm_up(kafka_reference.bootstrap)
    return Target("kafka", kafka_reference.bootstrap, kafka_reference.sasl_bootstrap)


@pytest.fixture(scope="module")
def kafkalite_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    b = BrokerThread(tmp_path_factory.mktemp("kafkalite-differential"),
                     KAFKALITE_SETTINGS).start()
    ports = {lst.name: lst.port for lst in b.inner.listeners}
    try:
        warm_up(f"127.0.0.1:{ports['PLAINTEXT']}")
        yield Target("kafkalite", f"127.0.0.1:{ports['PLAINTEXT']}",
                     f"127.0.0.1:{ports['SASL_PLAINTEXT']}")
    finally:
        b.stop()


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    conn = RawConnection(bootstrap, "differential")
    try:
        return conn.versions
    finally:
        conn.close()


@pytest.fixture(scope="module")
def common_versions(kafka_target: Target,
                    kafkalite_target: Target) -> dict[int, tuple[int, int]]:
    """Per API both brokers serve: the lowest and highest version both serve."""
    k, lite = advertised(kafka_target.bootstrap), advertised(kafkalite_target.bootstrap)
    out = {}
    for key in k.keys() & lite.keys():
        lo, hi = max(k[key][0], lite[key][0]), min(k[key][1], lite[key][1])
        if lo <= hi:
            out[key] = (lo, hi)
    return out
