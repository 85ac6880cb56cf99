"""Regular-expression subscriptions (``SubscribedTopicRegex``) with RE2 semantics.

Kafka compiles a member's regex with RE2/J and subscribes it to every topic whose whole
name matches (``Pattern.matcher(name).matches()``); the resolution is stored per regex in
a ConsumerGroupRegularExpression record with the metadata version it was computed
against. The ``google-re2`` package gives the same syntax here (linear time, no
backreferences or lookaround, ASCII ``\\d``/``\\w``/``\\b``, ``\\z`` but no ``\\Z``),
unlike Python's ``re``. The only visible difference from Kafka is the wording of the
syntax error inside INVALID_REGULAR_EXPRESSION's message (RE2's, not RE2/J's).

:class:`TopicRegexResolver` caches compiled patterns and their matches per topic-set
version: the caller bumps the version whenever a topic is created or deleted, and a
regex is matched again only when asked about a newer version.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import re2

_OPTIONS = re2.Options()
# Errors are returned to the caller; RE2 would also print them on stderr.
_OPTIONS.log_errors = False


class InvalidRegularExpression(Exception):
    """A SubscribedTopicRegex RE2 refuses (Kafka's INVALID_REGULAR_EXPRESSION)."""


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """Kafka's ``ResolvedRegularExpression``: the matching topics and when they were found."""

    topics: frozenset[str]
    #: The topic-set (metadata) version the expression was resolved against.
    version: int
    timestamp: int


def compile_regex(regex: str) -> Any:
    """The compiled RE2 pattern, or :class:`InvalidRegularExpression` with Kafka's message."""
    try:
        return re2.compile(regex, _OPTIONS)
    except re2.error as e:
        detail = e.args[0] if e.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise InvalidRegularExpression(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {detail}."
        ) from None


def matching_topics(regex: str, topics: Iterable[str]) -> frozenset[str]:
    """The names among ``topics`` that ``regex`` matches entirely."""
    pattern = compile_regex(regex)
    return frozenset(t for t in topics if pattern.fullmatch(t) is not None)


class TopicRegexResolver:
    """Resolves regexes against the topic set, remembering compiled patterns (LRU, at most
    ``max_patterns``) and the last resolution of each."""

    def __init__(self, max_patterns: int = 1024) -> None:
        self.max_patterns = max_patterns
        self._compiled: OrderedDict[str, Any] = OrderedDict()
        self._resolved: dict[str, ResolvedRegularExpression] = {}

    def _pattern(self, regex: str) -> Any:
        pattern = self._compiled.get(regex)
        if pattern is not None:
            self._compiled.move_to_end(regex)
            return pattern
        pattern = compile_regex(regex)
        self._compiled[regex] = pattern
        if len(self._compiled) > self.max_patterns:
            old, _ = self._compiled.popitem(last=False)
            self._resolved.pop(old, None)
        return pattern

    def validate(self, regex: str) -> None:
        """Raise :class:`InvalidRegularExpression` if RE2 refuses ``regex``."""
        self._pattern(regex)

    def resolve(self, regex: str, topics: Collection[str], version: int,
                now_ms: int) -> ResolvedRegularExpression:
        """``regex`` against ``topics`` (the whole topic set at ``version``); the cached
        answer when this version was resolved before."""
        cached = self._resolved.get(regex)
        if cached is not None and cached.version == version:
            return cached
        pattern = self._pattern(regex)
        resolved = ResolvedRegularExpression(
            frozenset(t for t in topics if pattern.fullmatch(t) is not None), version, now_ms)
        self._resolved[regex] = resolved
        return resolved

    def resolve_all(self, regexes: Iterable[str], topics: Collection[str], version: int,
                    now_ms: int) -> dict[str, ResolvedRegularExpression]:
        """Several regexes at once, as Kafka refreshes a group's expressions together.
        A regex RE2 refuses resolves to no topic (Kafka logs and ignores it)."""
        out: dict[str, ResolvedRegularExpression] = {}
        for regex in regexes:
            try:
                out[regex] = self.resolve(regex, topics, version, now_ms)
            except InvalidRegularExpression:
                out[regex] = ResolvedRegularExpression(frozenset(), version, now_ms)
        return out
