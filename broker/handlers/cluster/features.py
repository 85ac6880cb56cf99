"""UpdateFeatures v0-v2 (KIP-584, KIP-778), checked as Kafka's FeatureControlManager checks
it against the finalized levels ApiVersions reports: ``protocol.features`` as the emulated
Kafka release finalizes them (``features.for_release``). Each feature supports only the level in
force, so an update to that level succeeds (and changes nothing) and any other is
INVALID_UPDATE_VERSION with Kafka's message. The request is all or nothing: the first
refused update answers for the whole request. Authorization (Alter on the cluster) is
checked before the handler.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol import features
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...cluster import Cluster
from ...context import RequestContext

UPDATE_FEATURES = ApiKey.UPDATE_FEATURES

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    UPDATE_FEATURES: (0, 2),
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _check(levels: dict[str, features.Feature], node_id: int, name: str, level: int,
           upgrade_type: int) -> str | None:
    """Why ``name`` cannot go to ``level``, in Kafka's words; None if it can."""
    def invalid(why: str) -> str:
        return f"Invalid update version {level} for feature {name}. {why}"

    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return invalid("The controller does not support the given upgrade type.")
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    feature = levels.get(name)
    lo, hi = feature.supported if feature is not None else (0, 0)
    if not lo <= level <= hi:
        if hi == 0:
            return invalid(f"Local controller {node_id} does not support this feature.")
        versions = str(lo) if lo == hi else f"{lo}-{hi}"
        return invalid(f"Local controller {node_id} only supports versions {versions}")
    current = feature.level if feature is not None else 0
    if level < current and upgrade_type == UPGRADE:
        return invalid("Can't downgrade the version of this feature without setting the "
                       "upgrade type to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    if feature is None:
        return invalid(f"Feature {name} not found.")
    return None


def update_features(cluster: Cluster, levels: tuple[features.Feature, ...],
                    ctx: RequestContext, req: Any) -> Any:
    """``levels``: the features as ApiVersions reports them."""
    by_name = {f.name: f for f in levels}
    resp_t = codecs.codec(UPDATE_FEATURES, ctx.api_version).response_type
    # Later updates of a feature replace earlier ones, as Kafka reads them into a map.
    updates: dict[str, tuple[int, int]] = {}
    for u in req.feature_updates:
        upgrade_type = getattr(u, "upgrade_type", None)
        if upgrade_type is None:  # v0: a flag
            upgrade_type = SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE
        updates[u.feature] = (int(u.max_version_level), int(upgrade_type))
    for name, (level, upgrade_type) in updates.items():
        why = _check(by_name, cluster.node_id, name, level, upgrade_type)
        if why is not None:
            return build(resp_t, throttle_time=NO_THROTTLE,
                         error_code=ErrorCode.invalid_update_version,
                         error_message="The update failed for all features since the "
                         f"following feature had an error: {why}", results=())
    # Every level asked for is the one in force: nothing changes.
    result_t = nested(resp_t, "UpdatableFeatureResult") if ctx.api_version < 2 else None
    results = tuple(build(result_t, feature=u.feature, error_code=NO_ERROR,
                          error_message="NONE")
                    for u in req.feature_updates) if result_t is not None else ()
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, results=results)
