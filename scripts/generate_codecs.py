"""Generate codecs for the API versions kio lacks from Kafka's own message definitions.

Kafka publishes its protocol as JSON message specs (``common/message/*.json``, shipped in
the kafka-clients jar). kio's entities are generated from the same specs, for the releases
it follows; the versions newer than kio's are generated here, in kio's form (frozen
dataclasses with ``kafka_type`` and ``tag`` metadata), so kio's own readers and writers
encode and decode them. The output, ``protocol/generated/``, is committed; run this again
after moving the pinned Kafka release (jvm/pom.xml) or adding to ``WANTED``:

    python scripts/generate_codecs.py            # jars from scripts/kafka-jars.sh
    python scripts/generate_codecs.py --check    # fails if the committed output differs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "protocol" / "generated"

#: Spec names (without Request/Response) whose versions kio lacks are generated.
WANTED = ("ApiVersions", "TxnOffsetCommit", "DeleteGroups", "UnregisterController",
          "StreamsGroupHeartbeat", "StreamsGroupDescribe", "StreamsGroupTopologyDescriptionUpdate")
#: APIs answering error codes newer than kio's ``ErrorCode`` enum (UnregisterController's
#: CONTROLLER_ID_NOT_REGISTERED, 136): their error codes are plain int16s, so that both
#: ends of the wire can carry every code the API answers.
PLAIN_ERROR_CODES = ("UnregisterController",)

_PRIMITIVES = {
    "int8": ("i8", "int8"), "int16": ("i16", "int16"), "int32": ("i32", "int32"),
    "int64": ("i64", "int64"), "uint16": ("u16", "uint16"), "float64": ("f64", "float64"),
    "bool": ("bool", "bool"), "string": ("str", "string"), "bytes": ("bytes", "bytes"),
    "records": ("Records", "records"), "uuid": ("uuid.UUID", "uuid"),
}
_INTS = ("i8", "i16", "i32", "i64", "u16")
TRIPLE = '"' * 3


def versions_in(spec: str | None, version: int) -> bool:
    """Whether ``version`` is in a spec range: "3+", "0-4", "5", "none" or absent."""
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo) <= version <= int(hi)
    return version == int(spec)


def valid_versions(spec: str) -> range:
    if "-" in spec:
        lo, hi = spec.split("-")
        return range(int(lo), int(hi) + 1)
    return range(int(spec), int(spec) + 1)


def strip_comments(text: str) -> str:
    """Kafka's specs are JSON with // comments (outside strings)."""
    out = []
    for line in text.splitlines():
        in_string = False
        for i, ch in enumerate(line):
            if ch == '"' and (i == 0 or line[i - 1] != "\\"):
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


class Imports:
    """module -> names imported from it ("" holds the modules imported whole)."""

    def __init__(self) -> None:
        self.by_module: dict[str, set[str]] = {}

    def add(self, module: str, name: str) -> None:
        self.by_module.setdefault(module, set()).add(name)

    def lines(self) -> list[str]:
        """isort's layout (ruff's defaults): the standard library, then kio."""
        std = [m for m in self.by_module if m and not m.startswith("kio")]
        kio = [m for m in self.by_module if m.startswith("kio")]
        whole = [f"import {m}" for m in sorted(self.by_module.get("", ()))]
        return [*whole, *self._from(std), "", *self._from(kio)]

    def _from(self, modules: list[str]) -> list[str]:
        out = []
        for m in sorted(modules):
            # Constants, then classes, then the rest (isort's order-by-type).
            # Numbers in names in numeric order (i8 before i16), as isort's natural sort.
            names = sorted(self.by_module[m], key=lambda n: (
                0 if n.isupper() else 1 if n[0].isupper() else 2,
                [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", n)]))
            line = f"from {m} import {', '.join(names)}"
            if len(line) > 100:
                line = "\n".join([f"from {m} import (", *(f"    {n}," for n in names), ")"])
            out.append(line)
        return out


class Generator:
    """One module: the request or response of one API version, its structs first."""

    def __init__(self, spec: dict[str, Any], version: int) -> None:
        self.spec = spec
        self.version = version
        self.flexible = versions_in(spec.get("flexibleVersions"), version)
        self.kind = spec["type"]  # request or response
        self.plain_errors = spec["name"].removesuffix("Request").removesuffix(
            "Response") in PLAIN_ERROR_CODES
        self.common = {s["name"]: s for s in spec.get("commonStructs", ())}
        self.classes: list[str] = []
        self.imports = Imports()
        for module, name in (("dataclasses", "dataclass"), ("dataclasses", "field"),
                             ("typing", "ClassVar"), ("kio.static.constants", "EntityType"),
                             ("kio.static.primitive", "i16")):
            self.imports.add(module, name)
        self.done: set[str] = set()

    def header(self) -> tuple[str, str]:
        """(module, class name) of the header schema, as kio pairs them."""
        if self.kind == "request":
            v = 2 if self.flexible else 1
            return f"kio.schema.request_header.v{v}.header", "RequestHeader"
        # ApiVersions answers with header v0 at every version (clients parse it first).
        v = 1 if self.flexible and self.spec["apiKey"] != 18 else 0
        return f"kio.schema.response_header.v{v}.header", "ResponseHeader"

    def module(self) -> str:
        self.imports.add(*self.header())
        self.struct(self.spec["name"], self.spec["fields"], top=True)
        head = [f"{TRIPLE}Generated by scripts/generate_codecs.py from Kafka's",
                f"``common/message/{self.spec['name']}.json``, version {self.version}: "
                f"do not edit.{TRIPLE}", "", *self.imports.lines(), "", "", ""]
        return "\n".join(head) + "\n\n\n".join(self.classes) + "\n"

    def struct(self, name: str, fields: list[dict[str, Any]], *, top: bool) -> None:
        if name in self.done:
            return
        self.done.add(name)
        body = []
        for f in fields:
            if versions_in(f["versions"], self.version):
                body.extend(self.field(f))
        header = self.header()[1]
        self.classes.append("\n".join([
            "@dataclass(frozen=True, slots=True, kw_only=True)",
            f"class {name}:",
            f"    __type__: ClassVar = EntityType.{self.kind if top else 'nested'}",
            f"    __version__: ClassVar[i16] = i16({self.version})",
            f"    __flexible__: ClassVar[bool] = {self.flexible}",
            f"    __api_key__: ClassVar[i16] = i16({self.spec['apiKey']})",
            f"    __header_schema__: ClassVar[type[{header}]] = {header}",
            *body,
        ]))

    def field(self, f: dict[str, Any]) -> list[str]:
        v = self.version
        name = snake(f["name"])
        typ: str = f["type"]
        nullable = versions_in(f.get("nullableVersions"), v)
        tagged = versions_in(f.get("taggedVersions"), v)
        array = typ.startswith("[]")
        inner = typ[2:] if array else typ
        kafka_type: str | None
        if inner in _PRIMITIVES:
            ann, kafka_type = _PRIMITIVES[inner]
            # kio's conventions: durations in ms as timedeltas, named without the unit.
            if inner == "int32" and f["name"].endswith("Ms"):
                ann, kafka_type, name = "i32Timedelta", "timedelta_i32", name[:-3]
            elif inner == "int64" and f["name"].endswith("Ms"):
                raise SystemExit(f"{f['name']}: an int64 duration or time; no rule for it yet")
            if inner == "int16" and f["name"] == "ErrorCode" and not self.plain_errors:
                ann, kafka_type = "ErrorCode", "error_code"
                self.imports.add("kio.schema.errors", "ErrorCode")
            elif ann == "uuid.UUID":
                self.imports.add("", "uuid")
                nullable = True  # None stands for the zero UUID, as in kio
            elif ann not in ("bool", "str", "bytes"):
                self.imports.add("kio.static.primitive", ann)
        else:
            # A struct: defined inline, or one of the spec's common structs.
            self.struct(inner, f.get("fields") or self.common[inner]["fields"], top=False)
            ann, kafka_type = inner, None
        if array:
            ann = f"tuple[{ann}, ...]"
        if nullable:
            ann = f"{ann} | None"
        meta: dict[str, Any] = {}
        if kafka_type is not None:
            meta["kafka_type"] = kafka_type
        if tagged:
            meta["tag"] = f["tag"]
        args = [f"metadata={json.dumps(meta)}"] if meta else []
        default = self.default(f, ann, array, nullable, tagged)
        if default is not None:
            args.append(f"default={default}")
        line = f"    {name}: {ann}" + (f" = field({', '.join(args)})" if args else "")
        out = [line] if len(line) <= 100 else [
            f"    {name}: {ann} = field(", *(f"        {a}," for a in args), "    )"]
        if f.get("about"):
            out.extend(docstring(f["about"]))
        return out

    def default(self, f: dict[str, Any], ann: str, array: bool, nullable: bool,
                tagged: bool) -> str | None:
        """The spec's default, and for a tagged field (which may be absent) the type's
        zero value when the spec gives none."""
        given = f.get("default")
        if given is None and not tagged:
            return None
        if array:
            return "None" if given == "null" else "()"
        if given == "null" or (given is None and nullable):
            return "None"
        base = ann.removesuffix(" | None")
        if base == "bool":
            return "True" if str(given).lower() == "true" else "False"
        if base == "str":
            return json.dumps(given or "")
        if base in _INTS or base == "ErrorCode":
            return f"{base}({int(str(given or 0), 0)})"
        if base == "i32Timedelta":
            self.imports.add("", "datetime")
            ms = int(str(given or 0), 0)
            return f"i32Timedelta.parse(datetime.timedelta(milliseconds={ms}))"
        raise SystemExit(f"{f['name']}: no default rule for {ann}")


def docstring(text: str) -> list[str]:
    """A field's description from the spec, wrapped to the line length."""
    text = text.replace(TRIPLE, "'''").replace("\\", "\\\\")
    lines = textwrap.wrap(text, 92)
    lines[0] = TRIPLE + lines[0]
    lines[-1] += TRIPLE
    return [f"    {line}" for line in lines]


def kio_versions(api_name: str) -> set[int]:
    from kio.schema.index import schema_name_map

    return set(schema_name_map.get(api_name, {}))


def load_specs(jar: Path) -> dict[str, dict[str, Any]]:
    specs = {}
    with zipfile.ZipFile(jar) as z:
        for entry in z.namelist():
            if entry.startswith("common/message/") and entry.endswith(".json"):
                spec = json.loads(strip_comments(z.read(entry).decode()))
                specs[spec["name"]] = spec
    return specs


def render(specs: dict[str, dict[str, Any]]) -> dict[Path, str]:
    """Every generated file, by path under ``OUT``."""
    files: dict[Path, str] = {}
    index: list[tuple[int, int, str, str]] = []
    for api in WANTED:
        req, resp = specs[f"{api}Request"], specs[f"{api}Response"]
        name = snake(api)
        have = kio_versions(name)
        for v in valid_versions(req["validVersions"]):
            if v in have:
                continue
            for spec, kind in ((req, "request"), (resp, "response")):
                files[Path(name) / f"v{v}" / f"{kind}.py"] = Generator(spec, v).module()
            files[Path(name) / f"v{v}" / "__init__.py"] = ""
            files[Path(name) / "__init__.py"] = ""
            index.append((req["apiKey"], v, name, api))
    rows = "\n".join(
        f'    ({key}, {v}): ("kafkalite.protocol.generated.{name}.v{v}",\n'
        + (f'              "{api}Request", "{api}Response"),'
           if len(api) * 2 + 36 <= 100 else
           f'              "{api}Request",\n              "{api}Response"),')
        for key, v, name, api in sorted(index))
    names = "\n".join(f'    {key}: "{name}",'
                      for key, name in sorted({(r[0], r[2]) for r in index}))
    files[Path("__init__.py")] = (
        f"{TRIPLE}Codecs of the API versions kio lacks, generated from Kafka's message specs "
        "by\nscripts/generate_codecs.py (do not edit): (api key, version) -> (module, "
        f"request class,\nresponse class), and the names of those APIs.{TRIPLE}\n\n"
        f"VERSIONS: dict[tuple[int, int], tuple[str, str, str]] = {{\n{rows}\n}}\n\n"
        f"API_NAMES: dict[int, str] = {{\n{names}\n}}\n")
    return files


def kafka_clients_jar() -> Path:
    jars = os.environ.get("KAFKALITE_KAFKA_JARS_DIR") or subprocess.run(
        ["bash", str(REPO / "scripts" / "kafka-jars.sh")], check=True, capture_output=True,
        text=True).stdout.strip()
    found = sorted(Path(jars).glob("kafka-clients-*.jar"))
    if not found:
        raise SystemExit(f"no kafka-clients jar in {jars}")
    return found[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed output instead of writing")
    args = parser.parse_args()
    files = render(load_specs(kafka_clients_jar()))
    if args.check:
        stale = [p for p, text in files.items()
                 if not (OUT / p).exists() or (OUT / p).read_text() != text]
        for p in stale:
            print(f"stale: protocol/generated/{p}", file=sys.stderr)
        return 1 if stale else 0
    for p, text in files.items():
        (OUT / p).parent.mkdir(parents=True, exist_ok=True)
        (OUT / p).write_text(text)
    print(f"wrote {len(files)} files under {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
