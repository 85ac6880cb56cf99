"""What the broker's composition root calls when ``schema.registry.listener`` is set: the
registry's server (with the basic auth check the broker passes in, if any), the produce
path's schema validation and the registry's counters in ``/metrics``. The broker wires
it; nothing here imports the broker."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from .decode import ValueDecoder
from .server import RegistryServer
from .validation import SchemaCheck

#: The libraries the formats parse with (the ``registry`` extra).
NEEDED = ("avro", "jsonschema", "proto_schema_parser", "google.protobuf")


def missing_libraries() -> list[str]:
    """The format libraries not installed (the broker refuses to start without them)."""
    return [m for m in NEEDED if _absent(m)]


def build_registry(host: str, port: int, storage: Any, now_ms: Callable[[], int],
                   users: Callable[[str, str], bool] | None, metrics: Any, view: Any
                   ) -> RegistryServer:
    """The server (``users`` checks a basic auth user and password; None: no auth); the
    produce path's schema check on ``storage``; the registry's counters on ``metrics``
    (``/metrics``) and its subjects on the console's ``view``."""
    server = RegistryServer(host, port, storage, now_ms, users)
    counts = server.registry.counts
    storage.schema_check = SchemaCheck(server.state, storage.topic_configs, counts)
    metrics.schema_registry = lambda: counts
    view.schemas = server.registry.listing
    view.decoder = ValueDecoder(server.state.schemas.get)
    return server


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True
