"""Regex subscriptions: RE2 semantics (not Python's ``re``), full matches, caching."""

from __future__ import annotations

import re

import pytest

from kafkalite.coordinator.consumer.topic_regex import (
    InvalidRegularExpression,
    ResolvedRegularExpression,
    TopicRegexResolver,
    compile_regex,
    matching_topics,
)

TOPICS = ["orders", "orders-eu", "orders-us", "payments", "orders.v2", "t7", "t\u0663"]


def test_whole_name_must_match() -> None:
    assert matching_topics("orders", TOPICS) == {"orders"}
    assert matching_topics("orders.*", TOPICS) == {"orders", "orders-eu", "orders-us",
                                                    "orders.v2"}
    assert matching_topics("orders-(eu|us)", TOPICS) == {"orders-eu", "orders-us"}
    assert matching_topics("pay", TOPICS) == set()


@pytest.mark.parametrize("regex", [r"(a)\1", r"orders(?=-eu)", r"(?<!x)orders", r"(?>a)"])
def test_python_features_re2_refuses(regex: str) -> None:
    re.compile(regex)  # Python's re accepts them...
    with pytest.raises(InvalidRegularExpression) as e:  # ...RE2, as Kafka's RE2/J, does not.
        compile_regex(regex)
    assert str(e.value).startswith(f"SubscribedTopicRegex `{regex}` is not a valid regular "
                                   "expression: ")


def test_re2_syntax_python_refuses() -> None:
    with pytest.raises(re.error):
        re.compile(r"orders\z")
    assert matching_topics(r"orders\z", TOPICS) == {"orders"}
    with pytest.raises(re.error):
        re.compile(r"\pN+")
    assert matching_topics(r"t\pN", TOPICS) == {"t7", "t\u0663"}


def test_perl_classes_are_ascii_in_re2() -> None:
    # Python's \d matches any Unicode digit; RE2's only 0-9.
    assert re.fullmatch(r"t\d", "t\u0663") is not None
    assert matching_topics(r"t\d", TOPICS) == {"t7"}
    assert re.fullmatch(r"\w+", "t\u0663") is not None
    assert matching_topics(r"\w+", TOPICS) == {"orders", "payments", "t7"}


def test_resolver_caches_per_topic_set_version() -> None:
    r = TopicRegexResolver()
    first = r.resolve("orders-.*", TOPICS, version=1, now_ms=100)
    assert first == ResolvedRegularExpression(frozenset({"orders-eu", "orders-us"}), 1, 100)
    # Same version: the cached answer, even if the caller's list changed meanwhile.
    assert r.resolve("orders-.*", [*TOPICS, "orders-apac"], version=1, now_ms=200) is first
    # A topic was created: a newer version is matched again.
    second = r.resolve("orders-.*", [*TOPICS, "orders-apac"], version=2, now_ms=300)
    assert second == ResolvedRegularExpression(
        frozenset({"orders-eu", "orders-us", "orders-apac"}), 2, 300)
    # And a deleted topic drops out.
    third = r.resolve("orders-.*", ["orders-eu"], version=3, now_ms=400)
    assert third.topics == {"orders-eu"}


def test_resolve_all_and_bounded_cache() -> None:
    r = TopicRegexResolver(max_patterns=2)
    out = r.resolve_all(["orders", "pay.*", r"(a)\1"], TOPICS, version=5, now_ms=9)
    assert out == {
        "orders": ResolvedRegularExpression(frozenset({"orders"}), 5, 9),
        "pay.*": ResolvedRegularExpression(frozenset({"payments"}), 5, 9),
        r"(a)\1": ResolvedRegularExpression(frozenset(), 5, 9),
    }
    assert len(r._compiled) <= 2
    with pytest.raises(InvalidRegularExpression):
        r.validate("(")
    r.validate("ok.*")
