"""Authorization: one check on (principal, operation, resource) before every handler.

With no authorizer configured everything is allowed, as in Kafka. An ACL authorizer
plugs in by implementing ``Authorizer``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from kafkalite.protocol.errors import ErrorCode


class Operation(enum.Enum):
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"
    CREATE_TOKENS = "CreateTokens"
    DESCRIBE_TOKENS = "DescribeTokens"


class ResourceType(enum.Enum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"
    USER = "User"


DENIED_ERROR: dict[ResourceType, ErrorCode] = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
    ResourceType.DELEGATION_TOKEN: ErrorCode.delegation_token_authorization_failed,
    ResourceType.USER: ErrorCode.cluster_authorization_failed,
}

CLUSTER_NAME = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class Action:
    operation: Operation
    resource_type: ResourceType
    name: str


class Authorizer(Protocol):
    def authorize(self, principal: str, action: Action, host: str = "") -> bool: ...


class AllowAll:
    """The default when ``authorizer.class.name`` is empty: Kafka allows everything."""

    def authorize(self, principal: str, action: Action, host: str = "") -> bool:
        return True


#: Kafka's AclOperation codes, and the operations each resource type supports.
ACL_OPERATION_CODES = {
    Operation.READ: 3, Operation.WRITE: 4, Operation.CREATE: 5, Operation.DELETE: 6,
    Operation.ALTER: 7, Operation.DESCRIBE: 8, Operation.CLUSTER_ACTION: 9,
    Operation.DESCRIBE_CONFIGS: 10, Operation.ALTER_CONFIGS: 11, Operation.IDEMPOTENT_WRITE: 12,
}
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DESCRIBE,
                         Operation.DELETE, Operation.ALTER, Operation.DESCRIBE_CONFIGS,
                         Operation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                           Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE, Operation.ALTER,
                           Operation.DESCRIBE),
    # Kafka 4.x adds the group configs of KIP-848 (AclEntry.supportedOperations).
    ResourceType.GROUP: (Operation.DELETE, Operation.DESCRIBE, Operation.READ,
                         Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS),
}


class Requester(Protocol):
    """Who asks: a request context's principal and client address."""

    @property
    def principal(self) -> str: ...

    @property
    def client_host(self) -> str: ...


class Access:
    """The broker's authorizer, shared by request dispatch (one check per request) and the
    handlers that, as Kafka, authorize per resource inside the request."""

    __slots__ = ("_authorizer", "open")

    def __init__(self, authorizer: Authorizer | None = None) -> None:
        self.authorizer = authorizer or AllowAll()

    @property
    def authorizer(self) -> Authorizer:
        return self._authorizer

    @authorizer.setter
    def authorizer(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer
        #: True when everything is allowed (no authorizer configured): the per-resource
        #: checks of the commit and fetch paths then cost one attribute read.
        self.open = type(authorizer) is AllowAll

    def allowed(self, principal: str, op: Operation, rtype: ResourceType, name: str,
                host: str = "") -> bool:
        return self.open or self._authorizer.authorize(principal, Action(op, rtype, name), host)

    def permits(self, who: Requester, op: Operation, rtype: ResourceType, name: str) -> bool:
        """``allowed`` for the principal and client address of a request."""
        return self.open or self._authorizer.authorize(
            who.principal, Action(op, rtype, name), who.client_host)

    def operations(self, principal: str, rtype: ResourceType, name: str, host: str = "") -> int:
        """The bit field of operations ``principal`` may perform on a resource."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[rtype]:
            if self.authorizer.authorize(principal, Action(op, rtype, name), host):
                bits |= 1 << ACL_OPERATION_CODES[op]
        return bits

    def operations_for(self, who: Requester, rtype: ResourceType, name: str) -> int:
        return self.operations(who.principal, rtype, name, who.client_host)

    def cluster_operations_for(self, who: Requester) -> int:
        """The cluster's authorized operations as Metadata and DescribeCluster answer
        them: 0 without Describe on the cluster (Kafka's AuthHelper)."""
        if not self.permits(who, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return 0
        return self.operations_for(who, ResourceType.CLUSTER, CLUSTER_NAME)
