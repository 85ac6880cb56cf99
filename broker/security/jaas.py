"""Kafka's JAAS syntax for ``sasl.jaas.config``: ``<LoginModule> <flag> key="value" ...;``.

Only what a broker reads from it: the login module's class name and its options (for
PLAIN, ``user_<name>="<password>"`` entries are the users).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..config.properties import ConfigError

_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))')
_FLAGS = {"required", "requisite", "sufficient", "optional"}


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def parse_jaas(text: str) -> list[JaasEntry]:
    """Parse one or more ``Module flag k=v ...;`` entries (Kafka allows exactly one)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ConfigError(f"sasl.jaas.config: cannot parse at {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("str", re.sub(r"\\(.)", r"\1", m.group(1))))
        elif m.group(2) is not None:
            tokens.append(("word", m.group(2)))
        elif m.group(3):
            tokens.append(("=", "="))
        else:
            tokens.append((";", ";"))
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "word":
            raise ConfigError("sasl.jaas.config: expected '<LoginModule> <flag>'")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise ConfigError(f"sasl.jaas.config: bad control flag {flag!r}")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if (i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "="
                    or tokens[i + 2][0] not in ("str", "word")):
                raise ConfigError("sasl.jaas.config: expected key=\"value\"")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError("sasl.jaas.config: missing ';' after the login module options")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise ConfigError("sasl.jaas.config is empty")
    return entries


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """``user_alice="secret"`` options -> {"alice": "secret"}."""
    return {k[5:]: v for k, v in options.items() if k.startswith("user_") and len(k) > 5}
