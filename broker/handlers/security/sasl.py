"""SaslHandshake and SaslAuthenticate where no SASL is spoken.

On SASL listeners the connection's authenticator answers both before any handler sees
them; these registrations list them in ApiVersions and answer, as Kafka's KafkaApis
does, ILLEGAL_SASL_STATE on other listeners.
"""

from __future__ import annotations

import datetime
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import ErrorCode

from ...context import RequestContext

SASL_HANDSHAKE = ApiKey.SASL_HANDSHAKE
SASL_AUTHENTICATE = ApiKey.SASL_AUTHENTICATE

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    SASL_HANDSHAKE: (0, 1),
    SASL_AUTHENTICATE: (0, 2),
}


def sasl_handshake(ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(SASL_HANDSHAKE, ctx.api_version).response_type
    return build(resp_t, error_code=ErrorCode.illegal_sasl_state, mechanisms=())


def sasl_authenticate(ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(SASL_AUTHENTICATE, ctx.api_version).response_type
    return build(resp_t, error_code=ErrorCode.illegal_sasl_state,
                 error_message="SaslAuthenticate request received after successful "
                 "authentication", auth_bytes=b"", session_lifetime=datetime.timedelta(0))
