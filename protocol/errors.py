"""Kafka's error codes and the protocol layer's own exception type."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["NO_ERROR", "ErrorCode", "FrameTooLarge", "ProtocolError", "UnsupportedApi"]

#: ``ErrorCode.none`` bound once, for the request paths: on Python 3.11 reading a member
#: off an enum class goes through ``EnumType.__getattr__``'s hook, four times the cost of
#: a plain class attribute, and a commit reads it half a dozen times.
NO_ERROR = ErrorCode.none


class ProtocolError(Exception):
    """Raised for any malformed input on the wire; the connection that sent it is closed."""


class FrameTooLarge(ProtocolError):
    """A frame declared a size above ``socket.request.max.bytes`` (or a negative one)."""


class UnsupportedApi(ProtocolError):
    """An api key or version this broker does not implement."""

    def __init__(self, api_key: int, api_version: int) -> None:
        super().__init__(f"unsupported api key {api_key} version {api_version}")
        self.api_key = api_key
        self.api_version = api_version
