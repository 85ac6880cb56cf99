"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.protocol.headers import RequestHeader


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    principal: str
    client_host: str
    client_port: int
    listener: str
    connection_id: int

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""
