"""An ACL authorizer with Kafka's semantics, selected by ``authorizer.class.name``.

- ``super.users`` (``User:alice;User:bob``) may do anything.
- An ACL applies when its resource type matches and its pattern does: LITERAL by equal
  name, LITERAL ``*`` for every name, PREFIXED by prefix; its principal is the request's
  or ``User:*``; its host is the client's address (as Java prints it) or ``*``.
- Any matching DENY wins. An ALLOW on the operation, or on ``ALL``, allows; an ALLOW on
  Read, Write, Delete or Alter also allows Describe, an ALLOW on AlterConfigs allows
  DescribeConfigs (DENY implies nothing).
- No ALLOW: when the resource has no ACL at all (for anyone), ``allow.everyone.if.no.acl.found``
  decides; one ACL for someone else already denies. Both class names behave so
  (StandardAuthorizer since Kafka 3.5, KAFKA-14435; AclAuthorizer always).

Decisions are cached per (principal, host, operation, resource) until the ACLs change,
and the last decision per Action is kept beside it, checked by identity, which keeps the
heartbeat path (one connection sending the same group's Action) one dictionary lookup
and three identity checks however many ACLs exist.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ..auth import Action, Operation, ResourceType
from .acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from .acl_store import AclStore

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
LEGACY = "kafka.security.authorizer.AclAuthorizer"
LEGACY_OLD = "kafka.security.auth.SimpleAclAuthorizer"
CLASS_NAMES = (STANDARD, LEGACY, LEGACY_OLD)

_IMPLIES: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ,
                                      AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS,
                                              AclOperation.ALTER_CONFIGS}),
}

OP_CODES: dict[Operation, AclOperation] = {op: AclOperation[op.name] for op in Operation}
TYPE_CODES: dict[ResourceType, AclResourceType] = {
    rt: AclResourceType[rt.name] for rt in ResourceType}
_CACHE_LIMIT = 100_000


def java_host(host: str) -> str:
    """A client address as Java's InetAddress.getHostAddress() prints it, the string
    Kafka compares an ACL's host with: IPv6 uncompressed (``0:0:0:0:0:0:0:1``), an
    IPv4-mapped IPv6 address as IPv4."""
    if ":" not in host:
        return host
    addr, pct, scope = host.partition("%")
    try:
        ip = ipaddress.IPv6Address(addr)
    except ValueError:
        return host
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    groups = ip.packed
    text = ":".join(f"{int.from_bytes(groups[i:i + 2]):x}" for i in range(0, 16, 2))
    return text + pct + scope


def parse_super_users(raw: str) -> frozenset[str]:
    return frozenset(s.strip() for s in raw.split(";") if s.strip())


class _TypeIndex:
    """The ACLs of one resource type, by how their pattern can match a name."""

    __slots__ = ("literal", "prefix_lengths", "prefixed", "wildcard")

    def __init__(self) -> None:
        self.literal: dict[str, list[AclBinding]] = {}
        self.wildcard: list[AclBinding] = []
        self.prefixed: dict[str, list[AclBinding]] = {}
        self.prefix_lengths: list[int] = []

    def matching(self, name: str) -> list[AclBinding]:
        out = list(self.literal.get(name, ()))
        out.extend(self.wildcard)
        for n in self.prefix_lengths:
            if n > len(name):
                break
            found = self.prefixed.get(name[:n])
            if found:
                out.extend(found)
        return out


class AclAuthorizer:
    def __init__(self, store: AclStore, super_users: Iterable[str] = (),
                 allow_if_no_acl: bool = False, class_name: str = STANDARD) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.class_name = class_name
        self._stale = True
        self._index: dict[AclResourceType, _TypeIndex] = {}
        self._cache: dict[tuple[str, str, int], tuple[Action, bool]] = {}
        #: id(action) -> (action, principal, host, decision) of the last request.
        self._last: dict[int, tuple[Action, str, str, bool]] = {}
        store.listeners.append(self._invalidate)

    def _invalidate(self) -> None:
        self._stale = True
        self._cache.clear()
        self._last.clear()

    def _rebuild(self) -> None:
        index: dict[AclResourceType, _TypeIndex] = {}
        for b in self.store.all():
            ti = index.setdefault(b.resource_type, _TypeIndex())
            if b.pattern_type == PatternType.PREFIXED:
                ti.prefixed.setdefault(b.name, []).append(b)
            elif b.name == WILDCARD:
                ti.wildcard.append(b)
            else:
                ti.literal.setdefault(b.name, []).append(b)
        for ti in index.values():
            ti.prefix_lengths = sorted({len(p) for p in ti.prefixed})
        self._index = index
        self._cache.clear()
        self._last.clear()
        self._stale = False

    def authorize(self, principal: str, action: Action, host: str = "") -> bool:
        # Keyed by the Action's identity (handlers reuse them: the group ACL tuple of the
        # heartbeat path), as hashing its enum fields costs more than the whole lookup;
        # entries hold the Action, so its id cannot be reused while cached. A connection
        # passes the same principal and host objects every time: identity suffices.
        last = self._last.get(id(action))
        if last is not None and last[0] is action and last[1] is principal \
                and last[2] is host:
            return last[3]
        return self._lookup(principal, action, host)

    def _lookup(self, principal: str, action: Action, host: str) -> bool:
        if self._stale:
            self._rebuild()
        key = (principal, host, id(action))
        found = self._cache.get(key)
        if found is not None and found[0] is action:
            allowed = found[1]
        else:
            allowed = self._decide(principal, host, OP_CODES[action.operation],
                                   TYPE_CODES[action.resource_type], action.name)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = (action, allowed)
        if len(self._last) >= _CACHE_LIMIT:
            self._last.clear()
        self._last[id(action)] = (action, principal, host, allowed)
        return allowed

    def authorize_any(self, principal: str, host: str, operation: Operation,
                      resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows the operation: Kafka's
        ``Authorizer.authorizeByResourceType`` (InitProducerId of an idempotent producer
        asks it for Write on any topic). First the operation on a resource named
        ``hardcode`` (super users, ``*`` ACLs and the no-ACL default pass there), then
        an ALLOW pattern no DENY dominates: a LITERAL ALLOW fails on a LITERAL DENY of
        the same name, any ALLOW on a PREFIXED DENY that is a prefix of its name."""
        op, rtype = OP_CODES[operation], TYPE_CODES[resource_type]
        if self._stale:
            self._rebuild()
        if self._decide(principal, host, op, rtype, "hardcode"):
            return True
        host = java_host(host)
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                             PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(),
                                              PatternType.PREFIXED: set()}
        for b in self.store.all():
            if (b.resource_type != rtype or b.host not in (WILDCARD, host)
                    or b.principal not in (principal, WILDCARD_PRINCIPAL)
                    or b.operation not in (op, AclOperation.ALL)
                    or b.pattern_type not in deny):
                continue
            if b.permission == AclPermission.DENY:
                if b.pattern_type == PatternType.LITERAL and b.name == WILDCARD:
                    return False
                deny[b.pattern_type].add(b.name)
            elif b.permission == AclPermission.ALLOW:
                if b.pattern_type == PatternType.LITERAL and b.name == WILDCARD:
                    return True
                allow[b.pattern_type].add(b.name)
        denied_prefixes = deny[PatternType.PREFIXED]
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:n] in denied_prefixes for n in range(1, len(name) + 1)):
                    return True
        return False

    def _decide(self, principal: str, host: str, op: AclOperation, rtype: AclResourceType,
                name: str) -> bool:
        if principal in self.super_users:
            return True
        host = java_host(host)
        ti = self._index.get(rtype)
        acls = ti.matching(name) if ti is not None else []
        allowed = False
        implied = _IMPLIES.get(op)
        for acl in acls:
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.permission == AclPermission.DENY:
                if acl.operation == op or acl.operation == AclOperation.ALL:
                    return False
                continue
            if (acl.operation == AclOperation.ALL or acl.operation == op
                    or (implied is not None and acl.operation in implied)):
                allowed = True
        if allowed:
            return True
        # Any ACL on the resource, whoever it names, takes the no-ACL default away.
        return self.allow_if_no_acl and not acls
