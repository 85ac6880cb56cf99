"""Size-prefixed framing: every Kafka request and response is an int32 length and a body."""

from __future__ import annotations

import struct

from .errors import FrameTooLarge, ProtocolError

_SIZE = struct.Struct(">i")


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Cuts a byte stream into frames.

    The declared size is checked before the body is buffered, so a client declaring an
    oversized frame is refused without its body ever being held in memory.
    """

    __slots__ = ("_buf", "_need", "max_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        #: Made with the first partial frame: a client that waits for each answer never
        #: needs one (thousands of idle connections each hold a decoder).
        self._buf: bytearray | None = None
        self._need = -1

    @property
    def buffered(self) -> int:
        return len(self._buf) if self._buf is not None else 0

    def feed(self, data: bytes) -> list[bytes]:
        """Add bytes; return every complete frame body now available."""
        buf = self._buf
        if not buf and len(data) >= 4 and type(data) is bytes:
            # One whole frame in one read, nothing buffered (a client waiting for each
            # answer): no copy into the buffer and out again.
            (size,) = _SIZE.unpack_from(data, 0)
            if len(data) == 4 + size and 0 <= size <= self.max_size:
                return [data[4:]]
        if buf is None:
            buf = self._buf = bytearray()
        buf += data
        out: list[bytes] = []
        pos = 0
        end = len(buf)
        while True:
            if end - pos < 4:
                break
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self.max_size:
                raise FrameTooLarge(f"frame of {size} bytes exceeds limit {self.max_size}")
            if end - pos - 4 < size:
                break
            # One copy through a memoryview (slicing the bytearray would copy twice).
            with memoryview(buf) as view:
                out.append(bytes(view[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return out


def split_frames(data: bytes, max_size: int) -> list[bytes]:
    """Decode a complete byte string into frames; trailing partial data is an error."""
    dec = FrameDecoder(max_size)
    frames = dec.feed(data)
    if dec.buffered:
        raise ProtocolError("truncated frame")
    return frames
