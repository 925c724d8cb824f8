"""The batch format, shared by log segments and snapshot files (STORAGE.md, "The batch format"):
a header with a CRC over everything after it, then each frame preceded by its length (LOG-2's
varint). Frames are opaque here: this layer never looks inside one."""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO, NamedTuple


BATCH_MAGIC = b"KSB1"
BATCH_HEADER = struct.Struct(">4sIqii")
"""magic, CRC-32 of every byte after the CRC field (the rest of the header and the payload),
base offset, record count, payload length; big-endian, 24 bytes."""
MAX_INT32 = 2**31 - 1
MAX_VARINT_BYTES = 5  # enough for any length up to MAX_INT32

_SHORT_VARINTS = [bytes([n]) for n in range(0x80)]


class LogBatch(NamedTuple):
    """One batch as read back: the offset of its first record and its frames, in order."""

    base_offset: int
    frames: list[bytes]


class BadBatch(Exception):
    """Internal to the storage layer: the bytes at a position are not a valid batch; ``reason``
    says why, starting with ``torn`` (the file ends inside it) or ``corrupt`` (its bytes are wrong)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def encode_varint(value: int) -> bytes:
    """An unsigned LEB128 varint: seven bits per byte, low group first, high bit on all but the last."""
    if value < 0:
        raise ValueError(f"a varint is unsigned, got {value}")
    if value < 0x80:
        return _SHORT_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def frame_bytes(frame: object, index: int) -> bytes:
    """``frame`` as bytes; a frame must be bytes-like (the codec's output)."""
    if type(frame) is bytes:
        return frame
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return bytes(frame)
    raise TypeError(f"frame {index} is a {type(frame).__name__}, not bytes")


def encode_batch(base_offset: int, frames: list[bytes]) -> bytes:
    """The bytes of one batch: header, then each frame as its length (varint) and its bytes."""
    if not 0 <= base_offset < 2**63:
        raise ValueError(f"base offset {base_offset} is not a non-negative int64")
    if not 0 < len(frames) <= MAX_INT32:
        raise ValueError(f"a batch holds 1 to {MAX_INT32} records, got {len(frames)}")
    parts: list[bytes] = []
    for frame in frames:
        size = len(frame)
        parts.append(_SHORT_VARINTS[size] if size < 0x80 else encode_varint(size))
        parts.append(frame)
    payload = b"".join(parts)
    if len(payload) > MAX_INT32:
        raise ValueError(f"a batch payload is at most {MAX_INT32} bytes, got {len(payload)}")
    covered = BATCH_HEADER.pack(BATCH_MAGIC, 0, base_offset, len(frames), len(payload))[8:]
    crc = zlib.crc32(payload, zlib.crc32(covered))
    return BATCH_MAGIC + crc.to_bytes(4, "big") + covered + payload


def _decode_varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` in ``data`` and the position after it."""
    value = shift = 0
    for index in range(position, min(position + MAX_VARINT_BYTES, len(data))):
        byte = data[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    if position + MAX_VARINT_BYTES <= len(data):
        raise BadBatch(f"corrupt: a record length longer than {MAX_VARINT_BYTES} bytes")
    raise BadBatch("corrupt: a record length runs past the end of the payload")


def _split_records(payload: bytes, count: int, keep: bool) -> list[bytes] | None:
    """Walk the ``count`` length-prefixed frames that must fill ``payload`` exactly; return them
    if ``keep``."""
    frames: list[bytes] | None = [] if keep else None
    position, end = 0, len(payload)
    for index in range(count):
        if position >= end:
            raise BadBatch(f"corrupt: the payload ends after {index} of {count} records")
        size = payload[position]
        if size < 0x80:
            position += 1
        else:
            size, position = _decode_varint(payload, position)
        stop = position + size
        if stop > end:
            raise BadBatch(f"corrupt: record {index} runs {stop - end} bytes past the payload")
        if frames is not None:
            frames.append(payload[position:stop])
        position = stop
    if position != end:
        raise BadBatch(f"corrupt: {end - position} bytes follow the last of the {count} records")
    return frames


def read_batch(
    f: BinaryIO, position: int, limit: int, expected_base: int, keep: bool
) -> tuple[int, list[bytes] | None, int] | None:
    """Read and validate the batch at ``position`` (where ``f`` stands), which must end by byte
    ``limit``: ``(record count, frames if keep, size in bytes)``, or None when ``position`` is
    ``limit`` (a clean end). Raises :class:`BadBatch`."""
    remaining = limit - position
    if remaining == 0:
        return None
    if remaining < BATCH_HEADER.size:
        raise BadBatch(f"torn: {remaining} bytes remain, fewer than a {BATCH_HEADER.size}-byte batch header")
    header = f.read(BATCH_HEADER.size)
    if len(header) < BATCH_HEADER.size:
        raise BadBatch(f"torn: the file ends {len(header)} bytes into a batch header")
    magic, crc, base_offset, count, length = BATCH_HEADER.unpack(header)
    if magic != BATCH_MAGIC:
        raise BadBatch(f"corrupt: bad magic {magic!r}, expected {BATCH_MAGIC!r}")
    if length < 0 or length > remaining - BATCH_HEADER.size:
        if length >= 0:
            available = remaining - BATCH_HEADER.size
            raise BadBatch(f"torn: the batch claims a {length}-byte payload but {available} bytes remain")
        raise BadBatch(f"corrupt: negative payload length {length}")
    payload = f.read(length)
    if len(payload) < length:
        raise BadBatch(f"torn: the file ends {len(payload)} bytes into a {length}-byte payload")
    actual = zlib.crc32(payload, zlib.crc32(header[8:]))
    if actual != crc:
        raise BadBatch(f"corrupt: CRC mismatch (stored {crc:#010x}, computed {actual:#010x})")
    if base_offset != expected_base:
        raise BadBatch(f"corrupt: base offset {base_offset}, expected {expected_base}")
    if count < 1:
        raise BadBatch(f"corrupt: record count {count}")
    frames = _split_records(payload, count, keep)
    return count, frames, BATCH_HEADER.size + length
