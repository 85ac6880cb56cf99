"""ApiVersions v0-v5: advertises exactly the registered handlers' version ranges (already
clipped to the emulated Kafka release's) and, from v3, the feature levels of
``protocol.features`` as that release finalizes them; a valid v3+ request's software name
and version are kept for the clients view.

As KafkaApis, a request ``ApiVersionsRequest.isValid`` refuses is answered INVALID_REQUEST
(from v3, a client software name or version outside Kafka's pattern; from v5, a cluster id
without a node id or the other way round), and from v5 a client that names a cluster id
and node id other than this broker's is told REBOOTSTRAP_REQUIRED (KIP-1242): it reached
the wrong broker. Both errors come with no API list."""

from __future__ import annotations

import re
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol import features
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...apis import KafkaApis
from ...cluster import Cluster
from ...context import RequestContext
from ...telemetry.clients import ClientRegistry

API_VERSIONS = ApiKey.API_VERSIONS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    API_VERSIONS: (0, 5),
}

#: Kafka's ``ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN``.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_NO_NODE = -1


#: Software names and versions already checked (every connection of a client sends the
#: same pair; bounded, as a client could send many).
_checked: dict[tuple[str, str], bool] = {}


def _valid_software(name: str, version: str) -> bool:
    kind = (name, version)
    ok = _checked.get(kind)
    if ok is None:
        ok = bool(_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version))
        if len(_checked) < 256:
            _checked[kind] = ok
    return ok


def request_error(cluster: Cluster, version: int, req: Any) -> ErrorCode | None:
    """The error KafkaApis answers ``req`` with, or None."""
    if version >= 5:
        cluster_id, node_id = req.cluster_id, req.node_id
        if (cluster_id is None) != (node_id == _NO_NODE):
            return ErrorCode.invalid_request
    if version >= 3 and not _valid_software(req.client_software_name,
                                            req.client_software_version):
        return ErrorCode.invalid_request
    if version >= 5 and cluster_id is not None and (cluster_id != cluster.cluster_id
                                                    or node_id != cluster.node_id):
        return ErrorCode.rebootstrap_required
    return None


def api_versions(apis: KafkaApis, cache: dict[int, bytes], cluster: Cluster,
                 clients: ClientRegistry | None, ctx: RequestContext, req: Any) -> Any:
    """The encoded body, cached per version: the table is complete before serving starts.
    From v3 the client names its software, which ``clients`` keeps for its connection."""
    version = ctx.api_version
    if version >= 3:
        err = request_error(cluster, version, req)
        if err is not None:
            resp_t = codecs.codec(codecs.API_VERSIONS_KEY, version).response_type
            return resp_t(error_code=err, api_keys=(), throttle_time=NO_THROTTLE)
        if clients is not None:
            clients.named(ctx.connection_id, req.client_software_name,
                          req.client_software_version)
    cached = cache.get(version)
    if cached is not None:
        return cached
    c = codecs.codec(codecs.API_VERSIONS_KEY, version)
    resp_t = c.response_type
    version_t = nested(resp_t, "ApiVersion")
    entries = tuple(
        version_t(api_key=k, min_version=lo, max_version=hi)
        for k, lo, hi in apis.supported()
    )
    kwargs: dict[str, Any] = {"error_code": NO_ERROR, "api_keys": entries}
    if version >= 1:
        kwargs["throttle_time"] = NO_THROTTLE
    if version >= 3:
        emulated = features.for_release(apis.release.features)
        supported_t = nested(resp_t, "SupportedFeatureKey")
        finalized_t = nested(resp_t, "FinalizedFeatureKey")
        # Below v4 a minimum of 0 breaks older clients' parsers (KAFKA-17492).
        kwargs["supported_features"] = tuple(
            supported_t(name=f.name, min_version=f.supported[0], max_version=f.supported[1])
            for f in emulated if version >= 4 or f.supported[0] > 0)
        kwargs["finalized_features_epoch"] = features.FINALIZED_EPOCH
        kwargs["finalized_features"] = tuple(
            finalized_t(name=f.name, max_version_level=f.level, min_version_level=f.level)
            for f in emulated if f.level != 0)
    body = c.encode_response(resp_t(**kwargs))
    cache[version] = body
    return body
