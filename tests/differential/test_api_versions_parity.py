"""kafkalite's ApiVersions against the real Kafka's, API by API: the same keys at the same
newest versions, but for the APIs listed in ``NOT_SERVED`` with the reason (the same
list as docs/compatibility.md, "APIs not served") and the client-telemetry APIs kafkalite
serves without a plugin (``ONLY_KAFKALITE``). An API served later must leave the
list, or this test fails."""

from __future__ import annotations

from kafkalite.client.kafka import RawConnection, request

from .harness import Target

#: api key -> (kafkalite's newest version, None: not advertised; why).
NOT_SERVED: dict[int, tuple[int | None, str]] = {
    80: (None, "AddRaftVoter: kafkalite has no KRaft quorum to change"),
    81: (None, "RemoveRaftVoter: kafkalite has no KRaft quorum to change"),
    83: (None, "InitializeShareGroupState: share coordinator RPC between brokers; "
               "kafkalite's share coordinator is in-process"),
    84: (None, "ReadShareGroupState: share coordinator RPC between brokers"),
    85: (None, "WriteShareGroupState: share coordinator RPC between brokers"),
    86: (None, "DeleteShareGroupState: share coordinator RPC between brokers"),
    87: (None, "ReadShareGroupStateSummary: share coordinator RPC between brokers"),
}
#: api key -> (kafkalite's newest version; why): served by kafkalite, not by a Kafka
#: without a metrics-reporter plugin.
ONLY_KAFKALITE: dict[int, tuple[int, str]] = {
    71: (0, "GetTelemetrySubscriptions: kafkalite's client-telemetry receiver is built in"),
    72: (0, "PushTelemetry: kafkalite's client-telemetry receiver is built in"),
}


def newest(bootstrap: str) -> dict[int, int]:
    conn = RawConnection(bootstrap, "differential")
    try:
        resp = conn.call(request(18, 5, client_software_name="differential",
                                 client_software_version="1.0"))
    finally:
        conn.close()
    assert int(resp.error_code) == 0
    return {int(k.api_key): int(k.max_version) for k in resp.api_keys}


def test_same_apis_at_the_same_newest_versions(kafka_target: Target,
                                               kafkalite_target: Target) -> None:
    kafka, lite = newest(kafka_target.bootstrap), newest(kafkalite_target.bootstrap)
    expected = dict(kafka)
    for key, (version, _why) in NOT_SERVED.items():
        assert key in kafka, f"api {key} is no longer in Kafka's list: drop it from NOT_SERVED"
        if version is None:
            expected.pop(key)
        else:
            expected[key] = version
    for key, (version, _why) in ONLY_KAFKALITE.items():
        assert key not in kafka, f"Kafka advertises api {key}: drop it from ONLY_KAFKALITE"
        expected[key] = version
    assert {k: (lite.get(k), expected.get(k)) for k in lite.keys() | expected.keys()
            if lite.get(k) != expected.get(k)} == {}
