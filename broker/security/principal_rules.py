"""``ssl.principal.mapping.rules``: from a certificate's distinguished name to a user name.

Kafka's syntax: comma-separated ``RULE:pattern/replacement/[LU]`` entries and ``DEFAULT``
(the DN unchanged). The first rule whose pattern matches the whole DN wins; when none
does, the client is refused. Java's ``$1`` back references are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..config.properties import ConfigError

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACKREF = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        groups = self.pattern.groups

        def ref(m: re.Match[str]) -> str:
            n = int(m.group(1))
            return f"\\g<{n}>" if 1 <= n <= groups else m.group(0).replace("\\", "\\\\")

        template = _BACKREF.sub(ref, self.replacement.replace("\\/", "/"))
        out = self.pattern.sub(template, dn)
        if self.case == "L":
            return out.lower()
        if self.case == "U":
            return out.upper()
        return out


class PrincipalMapper:
    def __init__(self, rules: str | None) -> None:
        self.rules: list[Rule] = []
        text = "DEFAULT" if rules is None or not rules.strip() else rules.strip()
        for m in _SPLITTER.finditer(text):
            raw = m.group(1)
            if not raw:
                continue
            p = _PARSER.fullmatch(raw)
            if p is None or (p.group(1) is None and p.group(2) is None):
                raise ConfigError(f"ssl.principal.mapping.rules: invalid rule {raw!r}")
            if p.group(1) is not None:
                self.rules.append(Rule(None))
                continue
            try:
                pattern = re.compile(p.group(2))
            except re.error as e:
                raise ConfigError(f"ssl.principal.mapping.rules: bad pattern in {raw!r}: {e}") \
                    from e
            self.rules.append(Rule(pattern, p.group(4), p.group(6) or ""))
        if not self.rules:
            raise ConfigError(f"ssl.principal.mapping.rules: no rules in {rules!r}")

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise NoMatchingRule(f"No rules apply to {dn}")
