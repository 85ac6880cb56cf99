"""kafkalite.as.version / --as-version: ApiVersions advertises the APIs, versions and
feature levels of the Kafka release named, intersected with what kafkalite serves; a
request at a version that release lacks is refused as that release would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta

import pytest

from kafkalite.broker.config.properties import Config, ConfigError
from kafkalite.broker.testing import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol import releases

METADATA, UPDATE_FEATURES, SHARE_GROUP_HEARTBEAT, SHARE_FETCH = 3, 57, 76, 78


def advertised(b: BrokerThread) -> tuple[dict[int, tuple[int, int]], dict[str, int]]:
    conn = RawConnection(b.bootstrap)
    try:
        resp = conn.call(request(18, 3, client_software_name="t",
                                 client_software_version="1"))
        return ({int(k.api_key): (int(k.min_version), int(k.max_version))
                 for k in resp.api_keys},
                {f.name: int(f.max_version_level) for f in resp.finalized_features})
    finally:
        conn.close()


def test_as_3_9_advertises_metadata_12_and_no_share_group_api(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    apis, features = advertised(kafkalite_factory(as_version="3.9"))
    assert apis[METADATA] == (0, 12)
    assert SHARE_GROUP_HEARTBEAT not in apis and SHARE_FETCH not in apis
    # 3.9's new cluster: metadata.version 3.9-IV0 (21), transaction.version 0.
    assert features == {"metadata.version": 21}
    # Every API advertised is within 3.9's own range.
    table = releases.release("3.9").apis
    assert all(table[k][0] <= lo <= hi <= table[k][1] for k, (lo, hi) in apis.items())


def test_as_4_2_advertises_metadata_13(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    apis, features = advertised(kafkalite_factory(as_version="4.2"))
    assert apis[METADATA] == (0, 13)
    assert features["metadata.version"] == releases.release("4.2").features[
        "metadata.version"]
    assert features["transaction.version"] == 2 and features["group.version"] == 1


def test_update_features_checks_the_emulated_release_levels(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(as_version="3.9")
    newest = releases.release("4.4").features["metadata.version"]
    key_t = request_class(UPDATE_FEATURES, 1, "FeatureUpdateKey")
    conn = RawConnection(b.bootstrap)
    try:
        def update(level: int) -> tuple[int, str | None]:
            resp = conn.call(request(UPDATE_FEATURES, 1, timeout=timedelta(seconds=5),
                                     validate_only=False, feature_updates=(
                key_t(feature="metadata.version", max_version_level=level, upgrade_type=1),)))
            return int(resp.error_code), resp.error_message

        # 3.9's own level is the one in force; 4.4's is past what that release supports.
        assert update(21) == (0, None)
        code, message = update(newest)
        assert code == 95 and message is not None  # INVALID_UPDATE_VERSION
        assert message.endswith("only supports versions 21"), message
    finally:
        conn.close()


def test_default_is_the_newest_release(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    apis, features = advertised(kafkalite_factory())
    assert releases.DEFAULT_RELEASE == "4.4"
    assert features["metadata.version"] == releases.release("4.4").features[
        "metadata.version"]
    assert apis[METADATA] == (0, 13)


def test_as_4_3_keeps_the_versions_4_4_added(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    """ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3, StreamsGroupHeartbeat and
    StreamsGroupDescribe v1 and StreamsGroupTopologyDescriptionUpdate are 4.4's: a 4.3
    broker advertises the versions before them; 4.4 (the default) advertises them."""
    older, _ = advertised(kafkalite_factory(as_version="4.3"))
    newer, _ = advertised(kafkalite_factory())
    keys = (18, 28, 42, 88, 89)
    assert {k: older[k][1] for k in keys} == {18: 4, 28: 5, 42: 2, 88: 0, 89: 0}
    assert {k: newer[k][1] for k in keys} == {18: 5, 28: 6, 42: 3, 88: 1, 89: 1}
    assert 93 not in older and newer[93] == (0, 0)


def test_a_version_the_release_lacks_is_refused(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(as_version="3.9")
    conn = RawConnection(b.bootstrap)
    try:
        # Metadata v13 is past 3.9: the broker answers as Kafka does to an unsupported
        # version (closing the connection for a non-ApiVersions request).
        with pytest.raises((ConnectionError, OSError)):
            conn.call(request(METADATA, 13, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False))
    finally:
        conn.close()


def test_an_unknown_release_stops_the_broker_with_one_line() -> None:
    with pytest.raises(ConfigError, match=r"kafkalite.as.version: unknown Kafka release"):
        Config.build(environ={}, overrides={"kafkalite.as.version": "2.8"}).validate()


def test_serve_flag() -> None:
    out = subprocess.run([sys.executable, "-m", "kafkalite", "serve", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--as-version" in out
