"""A small reader of Thrift's compact protocol, for Parquet footers and page headers.

Parquet readers skip Thrift fields they do not know, so a file can carry bytes in its
footer or page headers that no reader shows; :mod:`._file_shape` decodes every field to
hold them to an allow-list. Values: ints, floats, ``bytes``, lists, and structs as
``{field id: value}``.
"""

from __future__ import annotations

import struct
from typing import Any

_MAX_DEPTH = 32  # Parquet's deepest struct is a few levels; a deeper one is hostile
_MAX_ITEMS = 1 << 24


class ThriftError(ValueError):
    """The bytes are not a well-formed compact-protocol struct."""


def read_struct(buf: bytes, pos: int = 0, depth: int = 0) -> tuple[dict[int, Any], int]:
    """Decode the struct at ``buf[pos:]``; return it and the position after it."""
    if depth > _MAX_DEPTH:
        raise ThriftError("structs nested too deeply")
    fields: dict[int, Any] = {}
    last = 0
    while True:
        head, pos = _byte(buf, pos)
        if head == 0:  # STOP
            return fields, pos
        delta, kind = head >> 4, head & 0x0F
        if delta:
            field = last + delta
        else:
            raw, pos = _varint(buf, pos)
            field = _zigzag(raw)
        if kind in (1, 2):  # a bool field carries its value in its type
            value = kind == 1
        else:
            value, pos = _value(buf, pos, kind, depth)
        if field in fields:
            raise ThriftError(f"field {field} appears twice")
        fields[field] = value
        last = field


def _value(buf: bytes, pos: int, kind: int, depth: int) -> tuple[Any, int]:
    if kind == 3:
        return _byte(buf, pos)
    if kind in (4, 5, 6):
        raw, pos = _varint(buf, pos)
        return _zigzag(raw), pos
    if kind == 7:
        if pos + 8 > len(buf):
            raise ThriftError("truncated double")
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if kind == 8:
        size, pos = _varint(buf, pos)
        if pos + size > len(buf):
            raise ThriftError("truncated binary")
        return bytes(buf[pos:pos + size]), pos + size
    if kind in (9, 10):
        head, pos = _byte(buf, pos)
        size, element = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint(buf, pos)
        return _items(buf, pos, size, element, depth)
    if kind == 11:
        size, pos = _varint(buf, pos)
        if size == 0:
            return [], pos
        types, pos = _byte(buf, pos)
        keys, values = [], []
        for _ in range(_check_size(size)):
            k, pos = _element(buf, pos, types >> 4, depth)
            v, pos = _element(buf, pos, types & 0x0F, depth)
            keys.append(k)
            values.append(v)
        return list(zip(keys, values)), pos
    if kind == 12:
        return read_struct(buf, pos, depth + 1)
    raise ThriftError(f"unknown type {kind}")


def _items(buf: bytes, pos: int, size: int, element: int, depth: int) -> tuple[list, int]:
    out = []
    for _ in range(_check_size(size)):
        value, pos = _element(buf, pos, element, depth)
        out.append(value)
    return out, pos


def _element(buf: bytes, pos: int, kind: int, depth: int) -> tuple[Any, int]:
    if kind in (1, 2):  # a bool inside a collection takes a byte
        value, pos = _byte(buf, pos)
        return value == 1, pos
    return _value(buf, pos, kind, depth)


def _check_size(size: int) -> int:
    if size > _MAX_ITEMS:
        raise ThriftError(f"a collection of {size} items")
    return size


def _byte(buf: bytes, pos: int) -> tuple[int, int]:
    if pos >= len(buf):
        raise ThriftError("truncated")
    return buf[pos], pos + 1


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b, pos = _byte(buf, pos)
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ThriftError("varint too long")


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)
