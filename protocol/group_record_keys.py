"""The keys of the KIP-848-style group records (share and streams groups): a record type,
the group id and, for a member's records, the member id. One codec serves each kind."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from .errors import ProtocolError
from .schema_io import Reader, Writer

K = TypeVar("K")


class GroupKeyCodec(Generic[K]):
    """Encodes and decodes the keys of one kind of group ("share group", "streams group")."""

    def __init__(self, kind: str, key_classes: tuple[type[K], ...],
                 member_key_classes: tuple[type[K], ...]) -> None:
        self.kind = kind
        self.member_key_classes = member_key_classes
        self.by_type: dict[int, type[K]] = {
            k.record_type: k for k in key_classes}  # type: ignore[attr-defined]

    def encode(self, key: K) -> bytes:
        w = Writer()
        w.i16(key.record_type)  # type: ignore[attr-defined]
        w.string(key.group)  # type: ignore[attr-defined]
        if isinstance(key, self.member_key_classes):
            w.string(key.member_id)  # type: ignore[attr-defined]
        return bytes(w.buf)

    def decode_fields(self, record_type: int, r: Reader) -> K:
        """The key of ``record_type``, read after its type."""
        cls: Any = self.by_type.get(record_type)
        if cls is None:
            raise ProtocolError(f"not a {self.kind} record type: {record_type}")
        group = r.req_string()
        if cls in self.member_key_classes:
            return cls(group, r.req_string())  # type: ignore[no-any-return]
        return cls(group)  # type: ignore[no-any-return]
