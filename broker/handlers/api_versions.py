"""ApiVersions v0-v4: advertises exactly the registered handlers' version ranges (already
clipped to the emulated Kafka release's) and, from v3, the feature levels of
``protocol.features`` as that release finalizes them."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol import features
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import nested
from kafkalite.protocol.errors import NO_ERROR
from kafkalite.protocol.names import NO_THROTTLE

from ..apis import KafkaApis
from ..context import RequestContext

API_VERSIONS = ApiKey.API_VERSIONS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    API_VERSIONS: (0, 4),
}


def api_versions(apis: KafkaApis, cache: dict[int, bytes], ctx: RequestContext,
                 req: Any) -> bytes:
    """The encoded body, cached per version: the table is complete before serving starts."""
    version = ctx.api_version
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
