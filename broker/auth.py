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
