"""Client quotas (KIP-546): quota values per entity (user, client id, their defaults, or
an IP), altered and described with the rules of Kafka's ``ClientQuotaControlManager`` and
``ClientQuotasImage``, kept in ``<data dir>/__client_quotas.json``.

They are enforced by ``managers.py``, told of every change through ``listeners``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.storage.fsutil import atomic_write

log = structlog.get_logger("kafkalite.quotas")

USER, CLIENT_ID, IP = "user", "client-id", "ip"
#: DescribeClientQuotas match types.
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
FILENAME = "__client_quotas.json"

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
#: Quota keys by the entities they apply to, with their types (QuotaConfig).
_USER_CLIENT_KEYS = {"producer_byte_rate": "long", "consumer_byte_rate": "long",
                     "request_percentage": "double", "controller_mutation_rate": "double"}
_IP_KEYS = {"connection_creation_rate": "int"}

#: An entity: its (type, name) pairs sorted by type; a None name is that type's default.
Entity = tuple[tuple[str, str | None], ...]


class QuotaRequestError(Exception):
    """A request Kafka refuses as a whole: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Alteration:
    entity: Mapping[str, str | None]
    #: (key, value) pairs; a None value removes the key.
    ops: tuple[tuple[str, float | None], ...]


def entity_key(entity: Mapping[str, str | None]) -> Entity:
    return tuple(sorted(entity.items()))


def entity_text(entity: Mapping[str, str | None]) -> str:
    """Java's ClientQuotaEntity.toString, as Kafka's messages show it."""
    inner = ", ".join(f"{k}={'null' if v is None else v}" for k, v in entity.items())
    return f"ClientQuotaEntity(entries={{{inner}}})"


class ClientQuotaStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILENAME
        self.quotas: dict[Entity, dict[str, float]] = {}
        #: Told the quotas after every change (the quota managers).
        self.listeners: list[Callable[[Mapping[Entity, Mapping[str, float]]], None]] = []
        if self.path.exists():
            for row in json.loads(self.path.read_text())["quotas"]:
                entity = entity_key({e["type"]: e["name"] for e in row["entity"]})
                self.quotas[entity] = {k: float(v) for k, v in row["values"].items()}

    def _save(self) -> None:
        doc = {"quotas": [
            {"entity": [{"type": t, "name": n} for t, n in entity], "values": values}
            for entity, values in sorted(self.quotas.items(), key=lambda kv: str(kv[0]))]}
        atomic_write(self.path, json.dumps(doc, indent=1, sort_keys=True).encode())

    # --- AlterClientQuotas ---------------------------------------------------------------

    def alter(self, alterations: Iterable[Alteration], validate_only: bool
              ) -> list[tuple[Mapping[str, str | None], ErrorCode, str | None]]:
        """Apply each entity's changes or refuse them; one result per distinct entity."""
        results: dict[Entity, tuple[Mapping[str, str | None], ErrorCode, str | None]] = {}
        changes: list[tuple[Entity, dict[str, float | None]]] = []
        for alt in alterations:
            key = entity_key(alt.entity)
            ops: dict[str, float | None] = {}
            for k, v in alt.ops:
                if k in ops:
                    results[key] = (alt.entity, ErrorCode.invalid_request,
                                    f"Duplicate quota key {k} not updating quota for this "
                                    f"entity {entity_text(alt.entity)}")
                else:
                    ops[k] = v
            if key in results:
                results[key] = (alt.entity, ErrorCode.invalid_request,
                                f"Ignoring duplicate entity {entity_text(alt.entity)}")
                continue
            why = _validate(alt.entity, ops)
            if why is not None:
                results[key] = (alt.entity, ErrorCode.invalid_request, why)
                continue
            results[key] = (alt.entity, NO_ERROR, None)
            changes.append((key, ops))
        if not validate_only and self._apply(changes):
            self._save()
            for listener in self.listeners:
                listener(self.quotas)
        return list(results.values())

    def _apply(self, changes: list[tuple[Entity, dict[str, float | None]]]) -> bool:
        any_changed = False
        for key, ops in changes:
            current = self.quotas.setdefault(key, {})
            changed = False
            for k, v in ops.items():
                if v is None:
                    changed |= current.pop(k, None) is not None
                elif current.get(k) != v:
                    current[k] = v
                    changed = True
            if not current:
                del self.quotas[key]
            if changed:
                log.info("quotas.altered", entity=dict(key), values=current)
            any_changed |= changed
        return any_changed

    # --- DescribeClientQuotas ------------------------------------------------------------

    def describe(self, components: Iterable[tuple[str, int, str | None]], strict: bool
                 ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities matching a filter of (entity type, match type, match) components.
        Raises QuotaRequestError for a filter Kafka refuses."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for etype, match_type, match in components:
            if not etype:
                raise QuotaRequestError(ErrorCode.invalid_request, "Invalid empty entity type.")
            if etype in exact or etype in typed:
                raise QuotaRequestError(ErrorCode.invalid_request, f"Entity type {etype} "
                                        "cannot appear more than once in the filter.")
            if etype not in (IP, USER, CLIENT_ID):
                raise QuotaRequestError(ErrorCode.unsupported_version,
                                        f"Unsupported entity type {etype}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaRequestError(ErrorCode.invalid_request, "Request specified "
                                            "MATCH_TYPE_EXACT, but set match string to null.")
                exact[etype] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.invalid_request, "Request specified "
                                            "MATCH_TYPE_DEFAULT, but also specified a match "
                                            "string.")
                exact[etype] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaRequestError(ErrorCode.invalid_request, "Request specified "
                                            "MATCH_TYPE_SPECIFIED, but also specified a match "
                                            "string.")
                typed.add(etype)
            else:
                raise QuotaRequestError(ErrorCode.invalid_request,
                                        f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and (exact.keys() | typed) & {USER, CLIENT_ID}:
            raise QuotaRequestError(ErrorCode.invalid_request, "Invalid entity filter "
                                    "component combination. IP filter component should not "
                                    "be used with user or clientId filter component.")
        out = []
        for entity, values in sorted(self.quotas.items(), key=lambda kv: str(kv[0])):
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if all(t in names and names[t] == m for t, m in exact.items()) \
                    and all(t in names for t in typed):
                out.append((entity, dict(values)))
        return out


def _validate(entity: Mapping[str, str | None], ops: Mapping[str, float | None]) -> str | None:
    """Why Kafka would refuse these changes to ``entity``; None if it accepts them."""
    if not entity:
        return "Invalid empty client quota entity"
    for etype, name in entity.items():
        if etype not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {etype}"
        if name is not None and not name:
            return f"Empty {etype} not supported"
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return ("Invalid quota entity combination, IP entity shouldnot be combined with "
                    "User or ClientId")
        ip = entity[IP]
        if ip is not None and not _is_ip(ip):
            return f"{ip} is not a valid IP or resolvable host."
        keys = _IP_KEYS
    else:
        keys = _USER_CLIENT_KEYS
    for k, v in ops.items():
        if v is None:
            continue
        kind = keys.get(k)
        if kind is None:
            return f"Invalid configuration key {k}"
        if v <= 0.0:
            return f"Quota {k} must be greater than 0"
        if kind == "long" and v > _LONG_MAX:
            return f"Proposed value for {k} is too large for a LONG."
        if kind == "int" and v > _INT_MAX:
            return f"Proposed value for {k} is too large for an INT."
        if kind != "double" and abs(v % 1.0) > 1e-6:
            return f"{k} cannot be a fractional value."
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
