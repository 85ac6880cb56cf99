"""What the broker's composition root calls when ``schema.registry.listener`` is set: the
registry's server (with basic auth when the broker's listeners use SASL), the produce
path's schema validation and the registry's counters in ``/metrics``."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from kafkalite.broker.config.properties import Config, ConfigError
from kafkalite.broker.security.scram import ScramStore

from .auth import broker_users
from .server import RegistryServer
from .validation import SchemaCheck

#: The libraries the formats parse with (the ``registry`` extra).
NEEDED = ("avro", "jsonschema", "proto_schema_parser", "google.protobuf")


def build_registry(config: Config, host: str, port: int, storage: Any,
                   now_ms: Callable[[], int], scram: ScramStore, metrics: Any, view: Any
                   ) -> RegistryServer:
    """The server; the produce path's schema check on ``storage``; the registry's
    counters on ``metrics`` (``/metrics``) and its subjects on the console's ``view``."""
    missing = [m for m in NEEDED if _absent(m)]
    if missing:
        raise ConfigError(f"schema.registry.listener needs {', '.join(missing)}: "
                          "pip install 'kafkalite[registry]'")
    server = RegistryServer(host, port, storage, now_ms, broker_users(config, scram))
    counts = server.registry.counts
    storage.schema_check = SchemaCheck(server.state, storage.topic_configs, counts)
    metrics.schema_registry = lambda: counts
    view.schemas = server.registry.listing
    return server


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True
