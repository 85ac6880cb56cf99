"""One table from (api_key, api_version) to request/response codecs and flexibility.

Codecs come from ``kio`` (generated from Kafka's own message schemas) and, for the
versions newer than kio's, from ``protocol.generated`` (generated from the same schemas of
the pinned Kafka release by scripts/generate_codecs.py, in kio's form). Entries are built
lazily and cached, so importing this module does not import every schema.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer

from .api_keys import ApiKey
from .errors import ProtocolError, UnsupportedApi
from .generated import API_NAMES as GENERATED_NAMES
from .generated import VERSIONS as GENERATED
from .guard import request_guard

API_VERSIONS_KEY = ApiKey.API_VERSIONS

#: Api key -> snake_case name, as kio (and Kafka's JSON schemas) name them.
API_NAMES: dict[int, str] = {**api_key_map, **GENERATED_NAMES}


@dataclass(frozen=True, slots=True)
class ApiCodec:
    api_key: int
    api_version: int
    request_type: type[Any]
    response_type: type[Any]
    request_flexible: bool
    #: Response header v1 when True, v0 otherwise (ApiVersions always uses v0).
    response_header_flexible: bool
    read_request: Callable[[Any, int], tuple[Any, int]]
    _write_response: Callable[[io.BytesIO, Any], None]
    #: Bounds check run before kio's native reader (see protocol.guard); None: not needed.
    guard: Callable[[bytes, int, int], int] | None = None

    def decode_request(self, frame: bytes, offset: int) -> Any:
        try:
            if self.guard is not None:
                self.guard(frame, offset, len(frame))
            request, _size = self.read_request(frame, offset)
        except Exception as e:  # kio raises assorted errors on bad bytes
            raise ProtocolError(f"malformed {API_NAMES.get(self.api_key)} request: {e}") from e
        return request

    def encode_response(self, response: Any) -> bytes:
        buf = io.BytesIO()
        self._write_response(buf, response)
        return buf.getvalue()


_cache: dict[tuple[int, int], ApiCodec] = {}


def kio_versions(api_key: int) -> tuple[int, int] | None:
    """Min and max versions kio has codecs for, or None."""
    name = API_NAMES.get(api_key)
    if name is None:
        return None
    versions = sorted({*schema_name_map.get(name, ()),
                       *(v for k, v in GENERATED if k == api_key)})
    return versions[0], versions[-1]


def _load(api_key: int, api_version: int) -> tuple[type[Any], type[Any]]:
    """The request and response entity types, kio's or generated."""
    generated = GENERATED.get((api_key, api_version))
    if generated is not None:
        module, req_name, resp_name = generated
        return (getattr(import_module(f"{module}.request"), req_name),
                getattr(import_module(f"{module}.response"), resp_name))
    return load_request_schema(api_key, api_version), load_response_schema(api_key, api_version)


def codec(api_key: int, api_version: int) -> ApiCodec:
    key = (api_key, api_version)
    found = _cache.get(key)
    if found is not None:
        return found
    try:
        req, resp = _load(api_key, api_version)
    except (UnknownAPIKey, UnknownEntity) as e:
        raise UnsupportedApi(api_key, api_version) from e
    header_schema = resp.__header_schema__
    c = ApiCodec(
        api_key=api_key,
        api_version=api_version,
        request_type=req,
        response_type=resp,
        request_flexible=bool(req.__flexible__),
        response_header_flexible=getattr(header_schema, "__version__", 0) >= 1,
        read_request=entity_reader(req),
        _write_response=entity_writer(resp),
        guard=request_guard(req),
    )
    _cache[key] = c
    return c


def encode_request(request: Any) -> bytes:
    """Encode a request body (used by tests and tools acting as a client)."""
    buf = io.BytesIO()
    entity_writer(type(request))(buf, request)
    return buf.getvalue()


def decode_response(api_key: int, api_version: int, frame: bytes, offset: int) -> Any:
    resp = codec(api_key, api_version).response_type
    try:
        value, _ = entity_reader(resp)(frame, offset)
    except Exception as e:
        raise ProtocolError(f"malformed response: {e}") from e
    return value


