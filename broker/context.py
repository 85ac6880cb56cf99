"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kafkalite.protocol.headers import RequestHeader


class Peer(Protocol):
    """What dispatch reads from, and caches on, the connection a frame came in on."""

    principal: str
    peer_host: str
    peer_port: int
    listener_name: str
    connection_id: int
    #: The last client id seen, raw and decoded: clients send the same one every time.
    client_id_raw: bytes | None
    client_id: str | None
    #: ``time.monotonic()`` when the read that brought this frame arrived.
    received_at: float


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    principal: str
    client_host: str
    client_port: int
    listener: str
    connection_id: int
    #: A throttle the handler found (a controller mutation quota), for the response.
    throttle_ms: int = 0
    #: The connection the request came in on (its listener security and SASL state).
    peer: Peer | None = None

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""
