"""Readers of message bodies compiled from the schemas of messages.py, one per (fields, version).

The interpreter this replaced asked every field of every struct whether the version carries it and
dispatched on its type at each value: an OffsetFetch answer for 2,000 groups of 100 partitions (one
Admin poll of a 10,000-group fleet) took 9.7 s of the poller's CPU to read, about 45 us a partition.
Here the questions are answered once: for each struct, version and flexibility the Python source of
one straight-line function is written and compiled (the idea of collectors/codec/compiler.py, kept
simpler: these messages have no tagged fields we read). The same answer reads in about a tenth of
the time.

A reader is `(buf: bytes, pos: int) -> (dict, new_pos)`. Values are what the interpreter gave: dicts
keyed by snake_case names, a field the version does not carry absent, strings decoded with
"replace", topic ids as Kafka's Uuid strings. Every length is checked against the bytes left
before anything is allocated, and any short or malformed body raises ProtocolDecodeError naming the
field, so arbitrary bytes never crash the poller.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from collectors.kafka_protocol.errors import ProtocolDecodeError
from collectors.kafka_protocol.messages import Field

Reader = Callable[[bytes, int], tuple[dict[str, Any], int]]

_FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "int64": ">q", "bool": ">?"}
_SIZE = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "bool": 1}
_STRUCTS = {t: struct.Struct(f) for t, f in _FIXED.items()}


class Short(Exception):
    """Raised by generated code with the field it was reading; turned into ProtocolDecodeError."""


def read_uvarint(buf: bytes, pos: int, what: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise Short(f"{what}: 1 bytes needed at offset {pos}, 0 left")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise Short(f"{what}: unsigned varint longer than 5 bytes")


def skip_tags(buf: bytes, pos: int, what: str) -> int:
    count, pos = read_uvarint(buf, pos, what)
    for _ in range(count):
        _, pos = read_uvarint(buf, pos, what)
        size, pos = read_uvarint(buf, pos, what)
        if size > len(buf) - pos:
            raise Short(f"{what}: {size} bytes needed at offset {pos}, {len(buf) - pos} left")
        pos += size
    return pos


def _uuid(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


class _Writer:
    """Python source of the readers of one top-level struct (and the structs inside it)."""

    def __init__(self) -> None:
        self.functions: list[str] = []
        self.names: dict[tuple[int, int, bool], str] = {}
        self.env: dict[str, Any] = {
            "read_uvarint": read_uvarint,
            "skip_tags": skip_tags,
            "_uuid": _uuid,
            "Short": Short,
            **{f"_S_{t}": s for t, s in _STRUCTS.items()},
        }

    def struct_reader(self, fields: tuple[Field, ...], version: int, flexible: bool, name: str) -> str:
        key = (id(fields), version, flexible)
        if key in self.names:
            return self.names[key]
        fn = f"_read_{len(self.names)}"
        self.names[key] = fn
        lines = [f"def {fn}(buf, pos):", "    end = len(buf)", "    out = {}"]
        present = [f for f in fields if f.present_in(version)]
        i = 0
        while i < len(present):
            run = 1
            while i + run < len(present) and present[i].type in _FIXED and present[i + run].type in _FIXED:
                run += 1
            if run > 1:
                lines += self._fixed_run(present[i : i + run], "    ")
            else:
                lines += self._value(present[i], version, flexible, f"out[{present[i].key!r}]", "    ")
            i += run
        if flexible:
            lines += self._tags(f"{name} tagged fields", "    ")
        lines.append("    return out, pos")
        self.functions.append("\n".join(lines))
        return fn

    def _fixed_run(self, run: list[Field], ind: str) -> list[str]:
        """Consecutive fixed-width fields read with one struct and one bounds check (an OffsetFetch
        answer's partition is three of them: read one by one, a million partitions took 4 s)."""
        codec = struct.Struct(">" + "".join(_FIXED[f.type][1:] for f in run))
        name = f"_R_{len(self.env)}"
        self.env[name] = codec
        what = f"{run[0].name}..{run[-1].name}"
        targets = ", ".join(f"out[{f.key!r}]" for f in run)
        return [
            *self._need(str(codec.size), what, ind),
            f"{ind}{targets} = {name}.unpack_from(buf, pos)",
            f"{ind}pos += {codec.size}",
        ]

    @staticmethod
    def _need(n: str, what: str, ind: str) -> list[str]:
        return [
            f"{ind}if {n} > end - pos:",
            f"{ind}    raise Short(f'{what}: {{{n}}} bytes needed at offset {{pos}}, {{end - pos}} left')",
        ]

    def _tags(self, what: str, ind: str) -> list[str]:
        return [
            f"{ind}if pos < end and buf[pos] == 0:",
            f"{ind}    pos += 1",
            f"{ind}else:",
            f"{ind}    pos = skip_tags(buf, pos, {what!r})",
        ]

    def _length(self, f: Field, version: int, flexible: bool, ind: str, var: str) -> list[str]:
        """`var` = the length or count (None for null), checked against nullability."""
        what = f.name
        if flexible:
            lines = [
                f"{ind}if pos < end and buf[pos] < 0x80:",
                f"{ind}    {var} = buf[pos] - 1",
                f"{ind}    pos += 1",
                f"{ind}else:",
                f"{ind}    {var}, pos = read_uvarint(buf, pos, {what!r})",
                f"{ind}    {var} -= 1",
            ]
        else:
            s = "int16" if f.type == "string" else "int32"
            lines = [
                *self._need(str(_SIZE[s]), what, ind),
                f"{ind}{var} = _S_{s}.unpack_from(buf, pos)[0]",
                f"{ind}pos += {_SIZE[s]}",
            ]
        null_ok = f.nullable_in(version)
        lines += [f"{ind}if {var} < 0:"]
        if null_ok:
            lines += [f"{ind}    {var} = None"]
        else:
            lines += [f"{ind}    raise Short('{what}: null in a field that is not nullable in v{version}')"]
        return lines

    def _value(self, f: Field, version: int, flexible: bool, target: str, ind: str) -> list[str]:
        t, what = f.type, f.name
        if t in _FIXED:
            return [
                *self._need(str(_SIZE[t]), what, ind),
                f"{ind}{target} = _S_{t}.unpack_from(buf, pos)[0]",
                f"{ind}pos += {_SIZE[t]}",
            ]
        if t == "uuid":
            return [
                *self._need("16", what, ind),
                f"{ind}{target} = _uuid(buf[pos:pos + 16])",
                f"{ind}pos += 16",
            ]
        n = f"n{len(ind)}"
        lines = self._length(f, version, flexible, ind, n)
        lines += [f"{ind}if {n} is None:", f"{ind}    {target} = None", f"{ind}else:"]
        inner = ind + "    "
        if t in ("string", "bytes"):
            lines += self._need(n, what, inner)
            take = f"buf[pos:pos + {n}]"
            value = f"{take}.decode('utf-8', 'replace')" if t == "string" else f"bytes({take})"
            lines += [f"{inner}{target} = {value}", f"{inner}pos += {n}"]
            return lines
        if t.startswith("[]"):
            # every element takes at least one byte: refuse absurd counts before looping
            lines += [
                f"{inner}if {n} > end - pos:",
                f"{inner}    raise Short(f'{what}: {{{n}}} elements announced, {{end - pos}} bytes left')",
            ]
            item = f.item
            items = f"items{len(ind)}"
            lines += [f"{inner}{items} = []", f"{inner}for _ in range({n}):"]
            body = inner + "    "
            if item.fields:
                fn = self.struct_reader(item.fields, version, flexible, item.name)
                lines += [f"{body}x, pos = {fn}(buf, pos)", f"{body}{items}.append(x)"]
            else:
                lines += [*self._value(item, version, flexible, "x", body), f"{body}{items}.append(x)"]
            lines += [f"{inner}{target} = {items}"]
            return lines
        if f.fields:  # a struct (the lengths above are for strings, bytes, arrays: not read here)
            fn = self.struct_reader(f.fields, version, flexible, f.name)
            if not f.nullable_in(version):
                return [f"{ind}{target}, pos = {fn}(buf, pos)"]
            # a nullable struct is preceded by an int8: -1 null, 1 present (Kafka's generated code)
            return [
                *self._need("1", what, ind),
                f"{ind}if _S_int8.unpack_from(buf, pos)[0] < 0:",
                f"{ind}    {target} = None",
                f"{ind}    pos += 1",
                f"{ind}else:",
                f"{ind}    {target}, pos = {fn}(buf, pos + 1)",
            ]
        raise ProtocolDecodeError(f"{f.name}: unknown type {t}")


_CACHE: dict[tuple[int, int, bool], tuple[Reader, tuple[Field, ...]]] = {}


def source(fields: tuple[Field, ...], version: int, flexible: bool, name: str = "body") -> str:
    """The generated Python source (for reading and debugging)."""
    w = _Writer()
    w.struct_reader(fields, version, flexible, name)
    return "\n\n".join(w.functions)


def reader(fields: tuple[Field, ...], version: int, flexible: bool, name: str = "body") -> Reader:
    """The compiled reader of `fields` at `version` (made once, then cached)."""
    key = (id(fields), version, flexible)
    hit = _CACHE.get(key)
    if hit is not None and hit[1] is fields:
        return hit[0]
    w = _Writer()
    top = w.struct_reader(fields, version, flexible, name)
    env = dict(w.env)
    exec(compile("\n\n".join(w.functions), f"<kafka_protocol reader {name} v{version}>", "exec"), env)
    compiled = env[top]

    def read(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
        try:
            return compiled(buf, pos)
        except Short as e:
            raise ProtocolDecodeError(str(e)) from None
        except (struct.error, IndexError) as e:  # defensive: every read above is bounds-checked
            raise ProtocolDecodeError(f"{name} v{version}: {e}") from None

    _CACHE[key] = (read, fields)  # the fields are kept: their id stays theirs
    return read
