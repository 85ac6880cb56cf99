"""A handler that fails answers as Kafka's ``getErrorResponse`` does: the error on each
topic the request named, so a real client reports it per topic, and the broker carries on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kafkalite.broker.context import RequestContext
from kafkalite.broker.testing.fixtures import BrokerThread

CREATE_TOPICS = 19


def _failing(broker: BrokerThread, api_key: int, *, later: bool) -> None:
    """The handler of ``api_key`` raises (at once, or from the future it returns)."""
    assert broker.broker is not None
    reg = broker.broker.apis.registration(api_key)
    assert reg is not None

    def fail(_ctx: RequestContext, _req: Any) -> Any:
        if not later:
            raise RuntimeError("handler bug")

        async def failing() -> None:
            await asyncio.sleep(0)
            raise RuntimeError("handler bug")
        return failing()

    def install() -> None:
        reg.handler = fail

    broker.call(install)


@pytest.mark.parametrize("later", [False, True], ids=["raised", "from-the-future"])
def test_failed_create_topics_names_each_topic(broker: BrokerThread, later: bool) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.create_topics([NewTopic("before", 1, 1)])["before"].result(10) is None
    _failing(broker, CREATE_TOPICS, later=later)
    futures = admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 2, 1)],
                                  request_timeout=10)
    for name in ("a", "b"):
        with pytest.raises(KafkaException) as info:
            futures[name].result(10)
        err = info.value.args[0]
        assert err.code() == KafkaError.UNKNOWN, (name, err)
    # The broker carries on: other APIs answer on the same client.
    assert "before" in admin.list_topics(timeout=10).topics
