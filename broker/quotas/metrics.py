"""The quotas on ``/metrics``, named as Kafka's JMX exporter names Kafka's quota metrics:
``kafka.server:type=Produce,user=U,client-id=C`` ``byte-rate`` and ``throttle-time``
become ``kafka_server_produce_byte_rate{user="U",client_id="C"}`` and
``kafka_server_produce_throttle_time{...}`` (likewise Fetch, Request's ``request-time``
and ControllerMutation's ``mutation-rate``), and the socket server's
``connection-accept-throttle-time`` per listener. As in Kafka, a client has these only
once a quota of that kind is set (its sensors exist then); a throttle time is the mean
of those given in the quota's windows, NaN when there were none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .accept_rate import INT_MAX, AcceptRates
from .managers import ClientQuotaManager, QuotaManagers
from .rates import Window

if TYPE_CHECKING:
    from prometheus_client.core import Metric

#: (JMX type lower-cased, its rate attribute, what the rate counts).
_KINDS = (("produce", "byte_rate", "bytes a second produced"),
          ("fetch", "byte_rate", "bytes a second fetched"),
          ("request", "request_time", "request handling time, percent of one second"),
          ("controllermutation", "mutation_rate", "partition mutations a second"))


def quota_families(managers: QuotaManagers, accepts: AcceptRates | None,
                   now: Callable[[], int]) -> Iterator[Metric]:
    from prometheus_client.core import GaugeMetricFamily

    at = now()
    for manager, (kind, rate_name, what) in zip(
            (managers.produce, managers.fetch, managers.request, managers.mutation), _KINDS,
            strict=True):
        if not manager.sensors:
            continue
        rate = GaugeMetricFamily(
            f"kafka_server_{kind}_{rate_name}",
            f"Per user and client id under a quota: {what} (Kafka: {kind} {rate_name})",
            labels=["user", "client_id"])
        throttle = GaugeMetricFamily(
            f"kafka_server_{kind}_throttle_time",
            f"Per user and client id: mean throttle time given for this quota, ms "
            f"(Kafka: {kind} throttle-time)", labels=["user", "client_id"])
        for tags, sensor in sorted(manager.sensors.items()):
            rate.add_metric(list(tags), sensor.rate.measure(sensor.window, at))
            throttle.add_metric(list(tags), _throttle(manager, tags, at))
        yield rate
        yield throttle
    if accepts is not None and accepts.throttle_times:
        accept = GaugeMetricFamily(
            "kafka_network_socket_server_metrics_connection_accept_throttle_time",
            "Mean time a listener's acceptor waited under max.connection.creation.rate, "
            "ms (Kafka: socket-server-metrics connection-accept-throttle-time)",
            labels=["listener", "node"])
        window = Window(accepts.window_ms, accepts.samples, INT_MAX)
        for (node, listener), avg in sorted(accepts.throttle_times.items()):
            accept.add_metric([listener, str(node)], avg.measure(window, at))
        yield accept


def _throttle(manager: ClientQuotaManager, tags: tuple[str, str], at: int) -> float:
    avg = manager.throttle_times.get(tags)
    if avg is None:
        return math.nan
    return avg.measure(Window(manager.window_ms, manager.samples, math.inf), at)
