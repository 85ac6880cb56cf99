"""Kafka's ACL model: bindings, filters, validation, with Kafka's wire codes."""

from __future__ import annotations

import enum
from dataclasses import dataclass

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class AclResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _enum(cls: type[enum.IntEnum], code: int) -> enum.IntEnum:
    try:
        return cls(code)
    except ValueError:
        return cls(0)  # UNKNOWN, as Kafka's fromCode does


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: AclResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    @classmethod
    def of(cls, resource_type: int, name: str, pattern_type: int, principal: str, host: str,
           operation: int, permission: int) -> AclBinding:
        return cls(_enum(AclResourceType, resource_type), name,  # type: ignore[arg-type]
                   _enum(PatternType, pattern_type), principal, host,  # type: ignore[arg-type]
                   _enum(AclOperation, operation), _enum(AclPermission, permission))  # type: ignore[arg-type]

    def to_json(self) -> list[object]:
        return [self.resource_type.name, self.name, self.pattern_type.name, self.principal,
                self.host, self.operation.name, self.permission.name]

    @classmethod
    def from_json(cls, row: list[object]) -> AclBinding:
        rt, name, pt, principal, host, op, perm = row
        return cls(AclResourceType[str(rt)], str(name), PatternType[str(pt)], str(principal),
                   str(host), AclOperation[str(op)], AclPermission[str(perm)])


def validate_new(b: AclBinding) -> str | None:
    """Kafka's checks on CreateAcls; the message of an INVALID_REQUEST, or None."""
    if b.resource_type in (AclResourceType.UNKNOWN, AclResourceType.ANY):
        return f"Invalid resourceType {b.resource_type.name}"
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {b.pattern_type.name}"
    if b.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {b.operation.name}"
    if b.permission not in (AclPermission.DENY, AclPermission.ALLOW):
        return f"Invalid permissionType {b.permission.name}"
    if not b.name:
        return "Resource name should not be empty"
    if ":" not in b.principal:
        return (f"Could not parse principal from `{b.principal}` (no colon is present "
                "separating the principal type from the principal name)")
    if b.resource_type == AclResourceType.CLUSTER and b.name != "kafka-cluster":
        return "The only valid name for the CLUSTER resource is kafka-cluster"
    return None


@dataclass(frozen=True, slots=True)
class AclFilter:
    resource_type: AclResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermission

    @classmethod
    def of(cls, resource_type: int, name: str | None, pattern_type: int,
           principal: str | None, host: str | None, operation: int, permission: int
           ) -> AclFilter:
        return cls(_enum(AclResourceType, resource_type), name,  # type: ignore[arg-type]
                   _enum(PatternType, pattern_type), principal, host,  # type: ignore[arg-type]
                   _enum(AclOperation, operation), _enum(AclPermission, permission))  # type: ignore[arg-type]

    def unknown(self) -> bool:
        return (self.resource_type == AclResourceType.UNKNOWN
                or self.pattern_type == PatternType.UNKNOWN
                or self.operation == AclOperation.UNKNOWN
                or self.permission == AclPermission.UNKNOWN)

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != AclResourceType.ANY and self.resource_type != b.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != b.pattern_type:
            return False
        if self.name is not None:
            if pt in (PatternType.ANY, b.pattern_type):
                if self.name != b.name:
                    return False
            elif b.pattern_type == PatternType.LITERAL:
                if self.name != b.name and b.name != WILDCARD:
                    return False
            elif not self.name.startswith(b.name):
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != b.operation:
            return False
        return self.permission == AclPermission.ANY or self.permission == b.permission
