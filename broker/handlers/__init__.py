"""Request handlers, one module per area. Each module's ``install(broker)`` registers its
handlers with ``broker.apis`` and its components' start/stop hooks with the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server import Broker


def install_all(broker: Broker) -> None:
    # Order matters: storage before the coordinator that writes through it.
    from . import (
        api_versions,
        cluster_admin,
        configs,
        fetch,
        group_admin,
        groups,
        list_offsets,
        metadata,
        offsets,
        produce,
        producer_ids,
        storage,
        topics,
    )

    for module in (storage, metadata, topics, configs, cluster_admin, produce, fetch,
                   list_offsets, producer_ids, api_versions, groups, offsets, group_admin):
        module.install(broker)
