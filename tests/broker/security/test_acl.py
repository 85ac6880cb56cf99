"""ACL model, filters, persistence and the authorizer's decisions (Kafka's semantics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.broker.auth import Action, Operation, ResourceType
from kafkalite.broker.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
    validate_new,
)
from kafkalite.broker.security.acl_store import AclStore
from kafkalite.broker.security.authorizer import LEGACY, STANDARD, AclAuthorizer, java_host

T, G, C = AclResourceType.TOPIC, AclResourceType.GROUP, AclResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermission.ALLOW, AclPermission.DENY
O = AclOperation  # noqa: E741


def acl(rt: AclResourceType, name: str, op: AclOperation, perm: AclPermission = ALLOW,
        principal: str = "User:alice", pt: PatternType = LIT, host: str = "*") -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def authz(*acls: AclBinding, **kw: object) -> AclAuthorizer:
    store = AclStore(None)
    store.add(acls)
    return AclAuthorizer(store, **kw)  # type: ignore[arg-type]


def can(a: AclAuthorizer, op: Operation, rt: ResourceType, name: str,
        principal: str = "User:alice", host: str = "10.0.0.1") -> bool:
    return a.authorize(principal, Action(op, rt, name), host)


def test_literal_prefixed_and_wildcard_patterns() -> None:
    a = authz(acl(T, "orders", O.READ), acl(T, "logs-", O.WRITE, pt=PRE),
              acl(G, "*", O.READ))
    assert can(a, Operation.READ, ResourceType.TOPIC, "orders")
    assert not can(a, Operation.READ, ResourceType.TOPIC, "orders2")
    assert can(a, Operation.WRITE, ResourceType.TOPIC, "logs-app")
    assert not can(a, Operation.WRITE, ResourceType.TOPIC, "logs")
    assert can(a, Operation.READ, ResourceType.GROUP, "anything")
    assert not can(a, Operation.READ, ResourceType.GROUP, "g", principal="User:bob")


def test_deny_wins_and_implied_operations() -> None:
    a = authz(acl(T, "t", O.ALL), acl(T, "t", O.WRITE, DENY),
              acl(T, "u", O.ALTER_CONFIGS), acl(T, "v", O.READ, DENY), acl(T, "v", O.DESCRIBE))
    assert can(a, Operation.READ, ResourceType.TOPIC, "t")
    assert not can(a, Operation.WRITE, ResourceType.TOPIC, "t")
    assert can(a, Operation.DESCRIBE, ResourceType.TOPIC, "t")
    assert can(a, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "u")
    assert not can(a, Operation.DESCRIBE, ResourceType.TOPIC, "u")
    assert can(a, Operation.DESCRIBE, ResourceType.TOPIC, "v")  # DENY Read implies nothing
    for op in (O.READ, O.WRITE, O.DELETE, O.ALTER):
        assert can(authz(acl(T, "x", op)), Operation.DESCRIBE, ResourceType.TOPIC, "x")
    assert not can(authz(acl(T, "x", O.CREATE)), Operation.DESCRIBE, ResourceType.TOPIC, "x")


def test_prefixed_deny_over_literal_allow_and_wildcard_principal() -> None:
    a = authz(acl(T, "pay", O.READ, DENY, "User:*", PRE), acl(T, "payments", O.READ))
    assert not can(a, Operation.READ, ResourceType.TOPIC, "payments")
    b = authz(acl(T, "t", O.READ, principal="User:*"))
    assert can(b, Operation.READ, ResourceType.TOPIC, "t", principal="User:zed")


def test_host_matching() -> None:
    a = authz(acl(T, "t", O.READ, host="10.0.0.1"), acl(T, "t", O.WRITE, DENY, host="10.0.0.9"),
              acl(T, "t", O.WRITE))
    assert can(a, Operation.READ, ResourceType.TOPIC, "t", host="10.0.0.1")
    assert not can(a, Operation.READ, ResourceType.TOPIC, "t", host="10.0.0.2")
    assert can(a, Operation.WRITE, ResourceType.TOPIC, "t", host="10.0.0.1")
    assert not can(a, Operation.WRITE, ResourceType.TOPIC, "t", host="10.0.0.9")


def test_super_users_and_default_rules() -> None:
    base = (acl(T, "t", O.READ, principal="User:bob"),)
    a = authz(*base, super_users={"User:root"})
    assert can(a, Operation.ALTER, ResourceType.CLUSTER, "kafka-cluster", principal="User:root")
    assert not can(a, Operation.READ, ResourceType.TOPIC, "other")
    for name in (STANDARD, LEGACY):
        a = authz(*base, acl(T, "w-", O.WRITE, principal="User:bob", pt=PRE),
                  allow_if_no_acl=True, class_name=name)
        assert can(a, Operation.READ, ResourceType.TOPIC, "other")
        # An ACL for someone else on the resource (literal or by prefix) takes the
        # default away: Kafka's StandardAuthorizer since 3.5 (KAFKA-14435) and AclAuthorizer.
        assert not can(a, Operation.READ, ResourceType.TOPIC, "t")
        assert not can(a, Operation.READ, ResourceType.TOPIC, "w-1")
        assert can(a, Operation.READ, ResourceType.GROUP, "t")


@pytest.mark.parametrize(("acls", "allow_if_no_acl", "expected"), [
    ((), False, False),
    ((), True, True),  # nothing on "hardcode": the default rule answers
    ((acl(T, "orders", O.WRITE),), False, True),
    ((acl(T, "orders", O.READ),), False, False),  # the operation itself, nothing implied
    ((acl(T, "orders", O.ALL),), False, True),
    ((acl(T, "*", O.WRITE),), False, True),
    ((acl(T, "orders", O.WRITE), acl(T, "orders", O.WRITE, DENY)), False, False),
    ((acl(T, "orders", O.WRITE), acl(T, "ord", O.WRITE, DENY, pt=PRE)), False, False),
    ((acl(T, "ord", O.WRITE, pt=PRE), acl(T, "ord", O.WRITE, DENY)), False, True),
    ((acl(T, "ord", O.WRITE, pt=PRE), acl(T, "o", O.ALL, DENY, pt=PRE)), False, False),
    ((acl(T, "orders", O.WRITE), acl(T, "*", O.WRITE, DENY)), False, False),
    ((acl(T, "orders", O.WRITE, principal="User:bob"),), False, False),
    ((acl(T, "orders", O.WRITE, host="10.0.0.2"),), False, False),
    ((acl(T, "h", O.READ, principal="User:bob", pt=PRE),), True, False),  # covers "hardcode"
    ((acl(T, "x", O.READ, principal="User:bob"),), True, True),
])
def test_authorize_by_resource_type(acls: tuple[AclBinding, ...], allow_if_no_acl: bool,
                                    expected: bool) -> None:
    """Kafka's Authorizer.authorizeByResourceType: Write on any topic, as InitProducerId
    of an idempotent producer asks it."""
    a = authz(*acls, allow_if_no_acl=allow_if_no_acl)
    got = a.authorize_any("User:alice", "10.0.0.1", Operation.WRITE, ResourceType.TOPIC)
    assert got is expected
    root = authz(*acls, acl(T, "*", O.WRITE, DENY, principal="User:root"),
                 super_users={"User:root"})
    assert root.authorize_any("User:root", "10.0.0.1", Operation.WRITE, ResourceType.TOPIC)


def test_decisions_follow_changes_to_the_store() -> None:
    store = AclStore(None)
    a = AclAuthorizer(store)
    assert not can(a, Operation.READ, ResourceType.GROUP, "g")
    store.add([acl(G, "g", O.READ)])
    assert can(a, Operation.READ, ResourceType.GROUP, "g")
    store.delete([AclFilter(G, "g", PatternType.ANY, None, None, O.ANY, AclPermission.ANY)])
    assert not can(a, Operation.READ, ResourceType.GROUP, "g")


def test_filters() -> None:
    acls = [acl(T, "orders", O.READ), acl(T, "ord", O.WRITE, pt=PRE), acl(T, "*", O.DESCRIBE),
            acl(G, "g", O.READ, principal="User:bob")]

    def match(**kw: object) -> list[AclBinding]:
        base: dict[str, object] = dict(resource_type=AclResourceType.ANY, name=None,
                                       pattern_type=PatternType.ANY, principal=None, host=None,
                                       operation=O.ANY, permission=AclPermission.ANY)
        base.update(kw)
        f = AclFilter(**base)  # type: ignore[arg-type]
        return [b for b in acls if f.matches(b)]

    assert match() == acls
    assert match(resource_type=T, name="orders") == [acls[0]]
    assert match(resource_type=T, name="orders", pattern_type=PatternType.MATCH) == acls[:3]
    assert match(pattern_type=PRE) == [acls[1]]
    assert match(principal="User:bob") == [acls[3]]
    assert match(operation=O.WRITE, permission=ALLOW) == [acls[1]]
    assert AclFilter.of(99, None, 1, None, None, 1, 1).unknown()


@pytest.mark.parametrize(("binding", "error"), [
    (acl(T, "t", O.READ), None),
    (AclBinding(AclResourceType.ANY, "t", LIT, "User:a", "*", O.READ, ALLOW), "resourceType"),
    (AclBinding(T, "t", PatternType.MATCH, "User:a", "*", O.READ, ALLOW), "patternType"),
    (AclBinding(T, "t", LIT, "User:a", "*", O.ANY, ALLOW), "operation"),
    (AclBinding(T, "t", LIT, "User:a", "*", O.READ, AclPermission.ANY), "permissionType"),
    (AclBinding(T, "", LIT, "User:a", "*", O.READ, ALLOW), "empty"),
    (AclBinding(T, "t", LIT, "alice", "*", O.READ, ALLOW), "principal"),
    (AclBinding(C, "other", LIT, "User:a", "*", O.ALTER, ALLOW), "kafka-cluster"),
])
def test_validation(binding: AclBinding, error: str | None) -> None:
    msg = validate_new(binding)
    assert (msg is None) if error is None else (msg is not None and error in msg)


def test_store_persists(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.add([acl(T, "t", O.READ), acl(G, "g-", O.READ, pt=PRE, host="1.2.3.4")])
    again = AclStore(tmp_path)
    assert again.all() == store.all()
    removed = again.delete([AclFilter(T, None, PatternType.ANY, None, None, O.ANY,
                                      AclPermission.ANY)])
    assert removed == [[acl(T, "t", O.READ)]]
    assert AclStore(tmp_path).all() == [acl(G, "g-", O.READ, pt=PRE, host="1.2.3.4")]


def test_many_acls_stay_indexed() -> None:
    acls = [acl(T, f"topic-{i}", O.READ, principal=f"User:u{i}") for i in range(1000)]
    acls += [acl(G, f"prefix-{i}-", O.READ, pt=PRE, principal=f"User:u{i}") for i in range(50)]
    a = authz(*acls)
    assert can(a, Operation.READ, ResourceType.TOPIC, "topic-7", principal="User:u7")
    assert not can(a, Operation.READ, ResourceType.TOPIC, "topic-7", principal="User:u8")
    assert can(a, Operation.READ, ResourceType.GROUP, "prefix-3-x", principal="User:u3")
    assert not can(a, Operation.READ, ResourceType.GROUP, "prefix-3", principal="User:u3")


@pytest.mark.parametrize(("peer", "java"), [
    ("10.0.0.1", "10.0.0.1"),
    ("::1", "0:0:0:0:0:0:0:1"),
    ("2001:db8::a:0", "2001:db8:0:0:0:0:a:0"),
    ("::ffff:127.0.0.1", "127.0.0.1"),  # Java turns IPv4-mapped addresses into IPv4
    ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
])
def test_hosts_match_as_java_prints_them(peer: str, java: str) -> None:
    assert java_host(peer) == java
    a = authz(acl(T, "t", O.READ, host=java))
    assert can(a, Operation.READ, ResourceType.TOPIC, "t", host=peer)
    assert not can(a, Operation.READ, ResourceType.TOPIC, "t", host="10.9.9.9")


def test_repeated_action_follows_changes_and_principals() -> None:
    """The heartbeat path's memo (same Action, principal and host objects) never outlives
    an ACL change, nor answers for another principal or host."""
    store = AclStore(None)
    a = AclAuthorizer(store)
    action = Action(Operation.READ, ResourceType.GROUP, "g")
    alice, bob, host = "User:alice", "User:bob", "10.0.0.1"
    assert not a.authorize(alice, action, host)
    store.add([acl(G, "g", O.READ)])
    assert a.authorize(alice, action, host) and a.authorize(alice, action, host)
    assert not a.authorize(bob, action, host)
    assert a.authorize(alice, action, host)
    store.add([acl(G, "g", O.READ, DENY, host="10.0.0.2")])
    assert a.authorize(alice, action, host) and not a.authorize(alice, action, "10.0.0.2")
    store.delete([AclFilter(G, "g", PatternType.ANY, None, None, O.ANY, AclPermission.ANY)])
    assert not a.authorize(alice, action, host)
