"""ApiVersions v0-v4: advertises exactly the registered handlers' version ranges."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ..context import RequestContext

if TYPE_CHECKING:
    from ..server import Broker


def install(broker: Broker) -> None:
    apis = broker.apis
    cache: dict[int, bytes] = {}

    def handle(ctx: RequestContext, request: Any) -> Any:
        version = ctx.api_version
        cached = cache.get(version)
        if cached is not None:
            return cached
        c = codecs.codec(codecs.API_VERSIONS_KEY, version)
        resp_t = c.response_type
        mod = __import__(resp_t.__module__, fromlist=["ApiVersion"])
        entries = tuple(
            mod.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in apis.supported()
        )
        kwargs: dict[str, Any] = {"error_code": ErrorCode.none, "api_keys": entries}
        if version >= 1:

            kwargs["throttle_time"] = NO_THROTTLE
        body = c.encode_response(resp_t(**kwargs))
        cache[version] = body
        return body

    apis.register(codecs.API_VERSIONS_KEY, handle, min_version=0, max_version=4)
