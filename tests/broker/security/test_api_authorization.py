"""Authorization on every API, as KafkaApis does it: each request is sent through the
broker's dispatch (``KafkaApis.handle``, the route's check included) as ``User:alice``
with the StandardAuthorizer holding no ACL for her, and must be refused with Kafka's
error, in Kafka's place (top level, per topic, per partition, per group); then the one
ACL Kafka asks for lets it through. Every registered API has a case (in the
``authz_cases_*`` modules, by family), so an API added without its authorization fails
``test_every_api_has_a_case``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kafkalite.broker.cluster import BoundListener
from kafkalite.broker.compose import build_broker
from kafkalite.broker.config.properties import Config
from kafkalite.protocol import apis as codecs

# The case modules register their cases in CASES when imported.
from . import (  # noqa: F401
    authz_cases_admin,
    authz_cases_data,
    authz_cases_groups,
    authz_cases_share,
    authz_cases_share_offsets,
    authz_cases_streams,
    authz_cases_tokens,
)
from .authz_harness import CASES, UNAUTHORIZED_APIS, Api


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    config = Config.build(environ={}, overrides={
        "log.dirs": str(tmp_path / "data"),
        "group.initial.rebalance.delay.ms": "0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    })
    broker = build_broker(config)
    # What Metadata and FindCoordinator advertise; nothing listens there.
    broker.cluster.listeners.append(
        BoundListener("PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092))
    await broker.open()
    broker.create_topic("t", 1)
    try:
        yield Api(broker)
    finally:
        await broker.stop()


# --- the tests -------------------------------------------------------------------------------

def test_every_api_has_a_case(tmp_path: Path) -> None:
    config = Config.build(environ={}, overrides={"log.dirs": str(tmp_path)})
    registered = {key for key, _lo, _hi in build_broker(config).apis.supported()}
    missing = sorted(codecs.API_NAMES.get(k, str(k))
                     for k in registered - set(UNAUTHORIZED_APIS) - set(CASES))
    assert not missing, f"no authorization case for {missing}: add one in an authz_cases_* module"
    assert set(CASES) <= registered


@pytest.mark.parametrize("api_key", sorted(CASES), ids=lambda k: codecs.API_NAMES.get(k, k))
async def test_api_authorization(api: Api, api_key: int) -> None:
    await CASES[api_key](api)


async def test_unauthorized_apis_are_served(api: Api) -> None:
    resp = await api.call(18, 3, client_software_name="x", client_software_version="1")
    assert resp.error_code == 0
    # On a listener without SASL, Kafka answers both SASL APIs ILLEGAL_SASL_STATE.
    assert (await api.call(17, 1, mechanism="PLAIN")).error_code == 34
    assert (await api.call(36, 2, auth_bytes=b"")).error_code == 34
