"""Turns the schema table into readers, writers and JSON renderers.

For every (struct, version, flexible) the compiler writes the Python source of three small
functions and compiles them once, at import: the same idea as Kafka's and franz-go's code
generators, done at run time. Generated code is straight-line: runs of fixed-width fields (and the
int16/int32 length prefix that follows them) are read with one precompiled `struct.Struct`,
strings are sliced and decoded in place, and every length is checked against the bytes left before
anything is allocated, so arbitrary input fails with `DecodeError` and never with a huge allocation.

- reader   `(buf: bytes, pos: int) -> (obj, new_pos)`
- writer   `(obj, out: bytearray) -> None`
- renderer `(obj) -> dict` in kafka-dump-log's JSON shape (camelCase names, bytes as base64,
  topic ids as Kafka's Uuid strings, only the fields the version carries), plus
  `"_unknownTaggedFields": [{"tag": N, "data": "<hex>"}]` when the struct holds tagged fields the
  table does not know (kafka-dump-log drops those silently; we show them)

A tagged field is read by a small function of its own from the tag's bytes. When those bytes are not
exactly one value of the field's type, or hold the field's default (which a writer leaves out), the
tag is kept raw with the unknown ones and the field keeps its default: re-encoding stays byte-exact.

`python -m collectors.codec.compiler OffsetCommitValue 3` prints the generated source.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import struct
import sys
from collections.abc import Callable
from typing import Any

from collectors.codec.errors import DecodeError, EncodeError
from collectors.codec.schema import Field, Message, Struct

_FIXED = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "uuid": "16s"}
_FIXED_SIZE = {"b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "16s": 16}

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_NULL_STRING = b"\xff\xff"
_NULL_BYTES = b"\xff\xff\xff\xff"
_INTS = [struct.Struct(f">{i}i") for i in range(257)]
_SHORTS = [struct.Struct(f">{i}h") for i in range(65)]

# Low-level failures that generated readers turn into DecodeError (struct.error: truncated fixed
# fields; IndexError: truncated varint; the others: defensive).
_LOW = (struct.error, IndexError, ValueError, TypeError, OverflowError)


def ints(count: int) -> struct.Struct:
    return _INTS[count] if count <= 256 else struct.Struct(f">{count}i")


def shorts(count: int) -> struct.Struct:
    return _SHORTS[count] if count <= 64 else struct.Struct(f">{count}h")


def unknown_tags_json(tags: tuple[tuple[int, bytes], ...]) -> list[dict[str, Any]]:
    """Tagged fields the table does not know, as the renderers print them."""
    return [{"tag": tag, "data": data.hex()} for tag, data in tags]


def read_uvarint(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """Rest of an unsigned varint whose first byte (>= 0x80) was already read. At most 5 bytes."""
    value = first & 0x7F
    shift = 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError(pos, "unsigned varint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_tags(buf: bytes, pos: int, count: int) -> tuple[list[tuple[int, bytes]], int]:
    n = len(buf)
    if count > n - pos:
        raise DecodeError(pos, f"{count} tagged fields announced but only {n - pos} bytes left")
    tags = []
    for _ in range(count):
        tag = buf[pos]
        pos += 1
        if tag > 127:
            tag, pos = read_uvarint(buf, pos, tag)
        size = buf[pos]
        pos += 1
        if size > 127:
            size, pos = read_uvarint(buf, pos, size)
        end = pos + size
        if end > n:
            raise DecodeError(pos, f"tagged field {tag} of {size} bytes exceeds the {n - pos} bytes left")
        tags.append((tag, buf[pos:end]))
        pos = end
    return tags, pos


def write_tags(out: bytearray, tags: list[tuple[int, bytes]]) -> None:
    if len(tags) > 1:
        tags.sort(key=lambda t: t[0])
    write_uvarint(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def uuid_str(raw: bytes) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_bytes(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise EncodeError(f"not a Kafka topic id: {text!r}") from exc
    if len(raw) != 16 or uuid_str(raw) != text:
        raise EncodeError(f"not a Kafka topic id: {text!r}")
    return raw


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def low_level_reason(exc: BaseException) -> str:
    if isinstance(exc, struct.error | IndexError):
        return "truncated (no bytes left for this field)"
    return f"{type(exc).__name__}: {exc}"


class _Source:
    """A tiny source builder with fresh variable names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def var(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"


class Compiler:
    """Compiles readers, writers and renderers for every struct of the table, caching by
    (struct name, version, flexible)."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "_DE": DecodeError,
            "_EE": EncodeError,
            "_LOW": _LOW,
            "_why": low_level_reason,
            "_uv": read_uvarint,
            "_wuv": write_uvarint,
            "_tags": read_tags,
            "_wtags": write_tags,
            "_ints": ints,
            "_INTS": _INTS,
            "_shorts": shorts,
            "_unk": unknown_tags_json,
            "_uuid": uuid_str,
            "_uuidb": uuid_bytes,
            "_b64": b64,
            "_struct_error": struct.error,
            "_H": _H,
            "_I": _I,
            "_new": object.__new__,
        }
        self.sources: dict[str, str] = {}
        self._structs: dict[str, struct.Struct] = {}

    # -- plumbing -------------------------------------------------------------------------------
    def _const(self, value: Any, stem: str) -> str:
        name = f"_{stem}_{id(value)}"
        self.ns[name] = value
        return name

    def _packer(self, fmt: str) -> str:
        name = "_S_" + fmt.replace("16s", "u")
        if name not in self.ns:
            self.ns[name] = struct.Struct(">" + fmt)
        return name

    def _define(self, name: str, src: _Source) -> Callable[..., Any]:
        code = "\n".join(src.lines) + "\n"
        self.sources[name] = code
        exec(compile(code, f"<codec {name}>", "exec"), self.ns)
        return self.ns[name]

    @staticmethod
    def _fname(kind: str, st: Struct, version: int, flexible: bool) -> str:
        return f"{kind}_{st.name}_v{version}{'f' if flexible else ''}"

    @staticmethod
    def _fields(st: Struct, version: int, flexible: bool) -> tuple[list[Field], list[Field]]:
        """(regular fields present in this version, tagged fields present in this version)."""
        regular, tagged = [], []
        for f in st.fields:
            if not f.present_in(version):
                continue
            if f.tag is not None:
                if flexible:
                    tagged.append(f)
            else:
                regular.append(f)
        return regular, tagged

    def _default_expr(self, f: Field) -> str:
        """An expression giving the field's default, a fresh object where it is mutable."""
        value = f.default_value()
        if isinstance(value, list):
            return "[]"
        if dataclasses.is_dataclass(value):  # an empty struct: built anew each time
            return self._const(f.default_value, "D") + "()"
        return repr(value)

    def _differs(self, f: Field, expr: str) -> str:
        """`expr` is not the field's default: when a tagged field is written and printed."""
        default = f.default_value()
        if default is None:
            return f"{expr} is not None"
        if dataclasses.is_dataclass(default):  # only compared with: one shared instance will do
            return f"{expr} != {self._const(default, 'DV')}"
        return f"{expr} != {self._default_expr(f)}"

    # -- readers --------------------------------------------------------------------------------
    def reader(self, st: Struct, version: int, flexible: bool) -> Callable[[bytes, int], tuple[Any, int]]:
        name = self._fname("read", st, version, flexible)
        if name in self.ns:
            return self.ns[name]
        src = _Source()
        src.emit(f"def {name}(b, p):")
        src.depth = 1
        src.emit("n = len(b)")
        src.emit("f = ''")
        src.emit("try:")
        src.depth = 2
        result = src.var("o")
        self._emit_struct_read(src, st, version, flexible, result, "")
        src.emit(f"return {result}, p")
        src.depth = 1
        src.emit("except _DE:")  # already precise (DecodeError is a ValueError: keep it first)
        src.emit("    raise")
        src.emit("except _LOW as e:")
        src.emit(f"    raise _DE(p, {st.name + '.'!r} + f + ': ' + _why(e)) from None")
        return self._define(name, src)

    @staticmethod
    def _inlinable(st: Struct) -> bool:
        """Small structs (no nested or tagged structs) are read inline in their array's loop: one
        function call less per element (TopicPartition lists are the bulk of member payloads)."""
        return all(f.struct is None for f in st.fields)

    def _emit_struct_read(
        self, src: _Source, st: Struct, version: int, flexible: bool, target: str, label: str
    ) -> None:
        """Code reading one `st` at `p` (advancing `p`) into the variable `target`. `label`
        prefixes field names in error messages when the struct is read inline."""
        regular, tagged = self._fields(st, version, flexible)
        # Compile nested readers first so their names exist in the namespace.
        for f in regular + tagged:
            if f.struct is not None and not (f.type.startswith("[]") and self._inlinable(f.struct)):
                self.reader(f.struct, version, flexible)
        values: dict[str, str] = {}
        pending: list[tuple[str, str, Field]] = []

        def flush() -> None:
            if not pending:
                return
            fmt = "".join(p[0] for p in pending)
            size = sum(_FIXED_SIZE[p[0]] for p in pending)
            targets = ", ".join(p[1] for p in pending)
            src.emit(f"f = {label + pending[0][2].name!r}")
            src.emit(f"{targets}{',' if len(pending) == 1 else ''} = {self._packer(fmt)}.unpack_from(b, p)")
            src.emit(f"p += {size}")
            for fmt_, var, _fld in pending:
                if fmt_ == "16s":
                    src.emit(f"{var} = _uuid({var})")
            pending.clear()

        for f in regular:
            var = src.var("v")
            values[f.attr] = var
            if f.type in _FIXED:
                pending.append((_FIXED[f.type], var, f))
                continue
            if self._is_single_struct(f):
                flush()
                self._emit_single_struct_read(src, f, version, flexible, var, label)
                continue
            length = src.var("L")
            if flexible:
                flush()
                src.emit(f"f = {label + f.name!r}")
                self._emit_uvarint(src, length)
                src.emit(f"{length} -= 1")
            else:
                first = pending[0][2] if pending else f
                pending.append(("h" if f.type == "string" else "i", length, f))
                flush()
                if first is not f:
                    src.emit(f"f = {label + f.name!r}")
            self._emit_body(src, st, f, version, flexible, length, var, label)
        flush()
        unknown = "()"
        if flexible:
            unknown = src.var("unk")
            count = src.var("T")
            src.emit(f"f = {label + '_tagged_fields'!r}")
            src.emit(f"{unknown} = ()")
            for f in tagged:
                values[f.attr] = src.var("v")
                src.emit(f"{values[f.attr]} = {self._default_expr(f)}")
            self._emit_uvarint(src, count)
            src.emit(f"if {count}:")
            src.depth += 1
            tags = src.var("tags")
            src.emit(f"{tags}, p = _tags(b, p, {count})")
            if tagged:
                rest = src.var("rest")
                src.emit(f"{rest} = []")
                src.emit(f"for t, d in {tags}:")
                src.depth += 1
                for i, f in enumerate(tagged):
                    src.emit(f"{'if' if i == 0 else 'elif'} t == {f.tag}:")
                    src.depth += 1
                    self._emit_tagged_read(src, st, f, version, values[f.attr], rest)
                    src.depth -= 1
                src.emit("else:")
                src.emit(f"    {rest}.append((t, d))")
                src.depth -= 1
                src.emit(f"{unknown} = tuple({rest})")
            else:
                src.emit(f"{unknown} = tuple({tags})")
            src.depth -= 1
        exprs = {f.attr: values.get(f.attr, self._default_expr(f)) for f in st.fields}
        if st.unknown_tags_attr is not None:
            exprs[st.unknown_tags_attr] = unknown
        if st.version_attr is not None:
            exprs[st.version_attr] = str(version)
        self._emit_construct(src, st.cls, exprs, target)

    def _emit_construct(self, src: _Source, cls: type, exprs: dict[str, str], target: str) -> None:
        """`target = cls(...)`, as cheaply as Python allows: dataclass fields in declaration order
        are passed positionally (keywords after the first field the schema does not fill). Frozen
        dataclasses (the keys) are built by setting their slots directly: their generated
        __init__ goes through object.__setattr__ per field, twice the cost of the whole read."""
        names = [f.name for f in dataclasses.fields(cls)]
        if cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            src.emit(f"{target} = _new({self._const(cls, 'C')})")
            for name in names:
                setter = self._const(getattr(cls, name).__set__, f"set_{name}")
                src.emit(f"{setter}({target}, {exprs[name]})")
            return
        defaults = {
            f.name: repr(f.default) for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
        }
        args, positional = [], True
        for name in names:
            if name not in exprs:
                positional = False
                continue
            if positional:
                args.append(exprs[name])
            elif exprs[name] != defaults.get(name):
                args.append(f"{name}={exprs[name]}")
        args += [f"{k}={v}" for k, v in exprs.items() if k not in names]
        src.emit(f"{target} = {self._const(cls, 'C')}({', '.join(args)})")

    @staticmethod
    def _is_single_struct(f: Field) -> bool:
        return f.struct is not None and not f.type.startswith("[]")

    def _emit_single_struct_read(
        self, src: _Source, f: Field, version: int, flexible: bool, var: str, label: str, tagged: bool = False
    ) -> None:
        """A struct-typed field (not an array). A nullable one starts with a marker, as Kafka's
        generated code reads it: in a tag's bytes an unsigned varint (0 null, more: a struct follows),
        elsewhere an int8 (negative null, else a struct follows; Kafka writes -1 and 1)."""
        assert f.struct is not None
        reader = self._fname("read", f.struct, version, flexible)
        src.emit(f"f = {label + f.name!r}")
        if f.nullable_in(version) and tagged:
            marker = src.var("m")
            self._emit_uvarint(src, marker)
            src.emit(f"if {marker} == 0:")
            src.emit(f"    {var} = None")
            src.emit("else:")
            src.emit(f"    {var}, p = {reader}(b, p)")
        elif f.nullable_in(version):
            src.emit("if b[p] > 127:")
            src.emit(f"    {var} = None")
            src.emit("    p += 1")
            src.emit("else:")
            src.emit(f"    {var}, p = {reader}(b, p + 1)")
        else:
            src.emit(f"{var}, p = {reader}(b, p)")

    def _emit_field_read(
        self, src: _Source, st: Struct, f: Field, version: int, flexible: bool, var: str, tagged: bool
    ) -> None:
        """Any one field at `p` into `var`, without the fixed-width batching of `_emit_struct_read`
        (tagged fields are read one at a time from their own bytes)."""
        if f.type in _FIXED:
            fmt = _FIXED[f.type]
            src.emit(f"f = {f.name!r}")
            src.emit(f"{var}, = {self._packer(fmt)}.unpack_from(b, p)")
            src.emit(f"p += {_FIXED_SIZE[fmt]}")
            if fmt == "16s":
                src.emit(f"{var} = _uuid({var})")
            return
        if self._is_single_struct(f):
            self._emit_single_struct_read(src, f, version, flexible, var, "", tagged)
            return
        length = src.var("L")
        src.emit(f"f = {f.name!r}")
        if flexible:
            self._emit_uvarint(src, length)
            src.emit(f"{length} -= 1")
        else:
            prefix = "_H" if f.type == "string" else "_I"
            src.emit(f"{length}, = {prefix}.unpack_from(b, p)")
            src.emit(f"p += {2 if f.type == 'string' else 4}")
        self._emit_body(src, st, f, version, flexible, length, var)

    def tagged_reader(self, st: Struct, f: Field, version: int) -> str:
        """Name of the function `(b, p) -> (value, new p)` reading one value of tagged field `f` (as
        the flexible encoding of its type) from a tag's bytes."""
        name = f"tread_{st.name}_{f.attr}_v{version}"
        if name in self.ns:
            return name
        inner = dataclasses.replace(f, tag=None)
        if inner.struct is not None and not (inner.type.startswith("[]") and self._inlinable(inner.struct)):
            self.reader(inner.struct, version, True)
        src = _Source()
        src.emit(f"def {name}(b, p):")
        src.depth = 1
        src.emit("n = len(b)")
        src.emit("f = ''")
        src.emit("try:")
        src.depth = 2
        var = src.var("v")
        self._emit_field_read(src, st, inner, version, True, var, tagged=True)
        src.emit(f"return {var}, p")
        src.depth = 1
        src.emit("except _DE:")
        src.emit("    raise")
        src.emit("except _LOW as e:")
        src.emit(f"    raise _DE(p, {st.name + '.'!r} + f + ': ' + _why(e)) from None")
        self._define(name, src)
        return name

    def tagged_writer(self, st: Struct, f: Field, version: int) -> str:
        """Name of the function `(value, out) -> None` writing one value of tagged field `f` (the
        flexible encoding of its type: the bytes of the tag)."""
        name = f"twrite_{st.name}_{f.attr}_v{version}"
        if name in self.ns:
            return name
        inner = dataclasses.replace(f, tag=None)
        if inner.struct is not None:
            self.writer(inner.struct, version, True)
        src = _Source()
        src.emit(f"def {name}(x, out):")
        src.depth = 1
        src.emit(f"f = {f.name!r}")
        self._emit_write(src, st, inner, version, True, "x", tagged=True)
        self._define(name, src)
        return name

    @staticmethod
    def _emit_uvarint(src: _Source, var: str) -> None:
        src.emit(f"{var} = b[p]")
        src.emit("p += 1")
        src.emit(f"if {var} > 127: {var}, p = _uv(b, p, {var})")

    def _emit_null(self, src: _Source, st: Struct, f: Field, version: int, var: str) -> None:
        if f.nullable_in(version):
            src.emit(f"    {var} = None")
        else:
            src.emit(
                f"    raise _DE(p, {f'{st.name}.{f.name}: non-nullable field was serialized as null'!r})"
            )

    def _emit_body(
        self,
        src: _Source,
        st: Struct,
        f: Field,
        version: int,
        flexible: bool,
        length: str,
        var: str,
        prefix: str = "",
    ) -> None:
        """Read the body of a variable-width field whose length/count (-1 = null) is in `length`."""
        label = f"{st.name}.{f.name}"
        src.emit(f"if {length} < 0:")
        self._emit_null(src, st, f, version, var)
        src.emit("else:")
        src.depth += 1
        if f.type in ("string", "bytes"):
            if f.type == "string" and flexible:
                src.emit(
                    f"if {length} > 0x7FFF: "
                    f"raise _DE(p, {label + ': invalid string length '!r} + str({length}))"
                )
            end = src.var("e")
            src.emit(f"if {length} == 0: {var} = {'' if f.type == 'string' else b''!r}")
            src.emit("else:")
            src.depth += 1
            src.emit(f"{end} = p + {length}")
            src.emit(
                f"if {end} > n: raise _DE(p, {label + ': length '!r} + str({length}) + ' exceeds the ' "
                f"+ str(n - p) + ' bytes left')"
            )
            if f.type == "string":
                src.emit(f"{var} = b[p:{end}].decode('utf-8', 'replace')")
            else:
                src.emit(f"{var} = b[p:{end}]")
            src.emit(f"p = {end}")
            src.depth -= 1
        elif f.type in ("[]int32", "[]int16"):
            end = src.var("e")
            size, kind, unpack = (4, "int32s", "_ints") if f.type == "[]int32" else (2, "int16s", "_shorts")
            src.emit(f"{end} = p + {size} * {length}")
            src.emit(
                f"if {end} > n: raise _DE(p, {label + ': '!r} + str({length}) + ' {kind} exceed the ' "
                f"+ str(n - p) + ' bytes left')"
            )
            src.emit(f"{var} = list({unpack}({length}).unpack_from(b, p))")
            src.emit(f"p = {end}")
        elif f.type.startswith("[]"):
            src.emit(
                f"if {length} > n - p: raise _DE(p, {label + ': '!r} + str({length}) "
                f"+ ' elements exceed the ' + str(n - p) + ' bytes left')"
            )
            src.emit(f"{var} = []")
            src.emit(f"for _ in range({length}):")
            src.depth += 1
            if f.type == "[]string":
                item = src.var("s")
                ilen = src.var("L")
                if flexible:
                    self._emit_uvarint(src, ilen)
                    src.emit(f"{ilen} -= 1")
                else:
                    src.emit(f"{ilen}, = _H.unpack_from(b, p)")
                    src.emit("p += 2")
                inner = Field(f.name + "[]", "string")
                self._emit_body(src, st, inner, version, flexible, ilen, item)
                src.emit(f"{var}.append({item})")
            else:
                assert f.struct is not None, f"{label}: array of unknown type {f.type}"
                item = src.var("o")
                if self._inlinable(f.struct):
                    self._emit_struct_read(src, f.struct, version, flexible, item, f"{prefix}{f.name}[].")
                else:
                    src.emit(f"{item}, p = {self._fname('read', f.struct, version, flexible)}(b, p)")
                src.emit(f"{var}.append({item})")
            src.depth -= 1
        else:
            raise NotImplementedError(f"{label}: untagged field of type {f.type}")
        src.depth -= 1

    def _emit_tagged_read(
        self, src: _Source, st: Struct, f: Field, version: int, var: str, rest: str
    ) -> None:
        """A known tag `t` with bytes `d`: the field's value when `d` is exactly one value of its type
        and not the default (a writer leaves defaults out), else the tag is kept raw with the unknown
        ones and the field keeps its default, so re-encoding gives the same bytes."""
        reader = self.tagged_reader(st, f, version)
        value, end = src.var("x"), src.var("e")
        src.emit("try:")
        src.emit(f"    {value}, {end} = {reader}(d, 0)")
        src.emit("except _DE:")
        src.emit(f"    {end} = -1")
        src.emit(f"if {end} == len(d) and {self._differs(f, value)}:")
        src.emit(f"    {var} = {value}")
        src.emit("else:")
        src.emit(f"    {rest}.append((t, d))")

    # -- writers --------------------------------------------------------------------------------
    def writer(self, st: Struct, version: int, flexible: bool) -> Callable[[Any, bytearray], None]:
        name = self._fname("write", st, version, flexible)
        if name in self.ns:
            return self.ns[name]
        regular, tagged = self._fields(st, version, flexible)
        for f in regular + tagged:
            if f.struct is not None:
                self.writer(f.struct, version, flexible)
        src = _Source()
        src.emit(f"def {name}(o, out):")
        src.depth = 1
        src.emit("f = ''")
        src.emit("try:")
        src.depth = 2
        for f in regular:
            src.emit(f"f = {f.name!r}")
            self._emit_write(src, st, f, version, flexible, f"o.{f.attr}")
        if flexible:
            tags = src.var("tags")
            src.emit(f"{tags} = []")
            for f in tagged:
                # Like Kafka, a tagged field holding its default is not written.
                writer = self.tagged_writer(st, f, version)
                val = src.var("t")
                buf = src.var("d")
                src.emit(f"{val} = o.{f.attr}")
                src.emit(f"if {self._differs(f, val)}:")
                src.emit(f"    {buf} = bytearray()")
                src.emit(f"    {writer}({val}, {buf})")
                src.emit(f"    {tags}.append(({f.tag}, bytes({buf})))")
            if st.unknown_tags_attr is not None:
                src.emit(f"{tags}.extend(o.{st.unknown_tags_attr})")
            src.emit(f"_wtags(out, {tags})")
        src.depth = 1
        src.emit("except (_struct_error, AttributeError, TypeError, UnicodeEncodeError) as e:")
        src.emit(f"    raise _EE({st.name + '.'!r} + f + ': ' + str(e)) from None")
        return self._define(name, src)

    def _emit_write(
        self,
        src: _Source,
        st: Struct,
        f: Field,
        version: int,
        flexible: bool,
        expr: str,
        tagged: bool = False,
    ) -> None:
        label = f"{st.name}.{f.name}"
        if f.type in _FIXED:
            if f.type == "uuid":
                src.emit(f"out += _uuidb({expr})")
            else:
                src.emit(f"out += {self._packer(_FIXED[f.type])}.pack({expr})")
            return
        val = src.var("x")
        src.emit(f"{val} = {expr}")
        if self._is_single_struct(f):
            assert f.struct is not None
            writer = self._fname("write", f.struct, version, flexible)
            if f.nullable_in(version):
                # the marker: uvarint 0 in a tag's bytes, int8 -1 elsewhere (then 1 and the struct)
                src.emit(f"if {val} is None:")
                src.emit(f"    out.append({0 if tagged else 255})")
                src.emit("else:")
                src.emit("    out.append(1)")
                src.emit(f"    {writer}({val}, out)")
            else:
                src.emit(f"if {val} is None: raise _EE({label + ': null in a non-nullable field'!r})")
                src.emit(f"{writer}({val}, out)")
            return
        src.emit(f"if {val} is None:")
        if f.nullable_in(version):
            if flexible:
                src.emit("    out.append(0)")
            else:
                null = _NULL_STRING if f.type == "string" else _NULL_BYTES
                src.emit(f"    out += {null!r}")
        else:
            src.emit(f"    raise _EE({label + ': null in a non-nullable field'!r})")
        src.emit("else:")
        src.depth += 1
        if f.type in ("string", "bytes"):
            data = val
            if f.type == "string":
                data = src.var("e")
                src.emit(f"{data} = {val}.encode('utf-8')")
            if flexible:
                src.emit(f"_wuv(out, len({data}) + 1)")
            else:
                src.emit(f"out += {'_H' if f.type == 'string' else '_I'}.pack(len({data}))")
            src.emit(f"out += {data}")
        else:
            if flexible:
                src.emit(f"_wuv(out, len({val}) + 1)")
            else:
                src.emit(f"out += _I.pack(len({val}))")
            if f.type == "[]int32":
                src.emit(f"out += _ints(len({val})).pack(*{val})")
            elif f.type == "[]int16":
                src.emit(f"out += _shorts(len({val})).pack(*{val})")
            elif f.type == "[]string":
                item = src.var("s")
                src.emit(f"for {item} in {val}:")
                src.depth += 1
                self._emit_write(src, st, Field(f.name + "[]", "string"), version, flexible, item)
                src.depth -= 1
            else:
                assert f.struct is not None
                item = src.var("i")
                src.emit(f"for {item} in {val}:")
                src.emit(f"    {self._fname('write', f.struct, version, flexible)}({item}, out)")
        src.depth -= 1

    # -- renderers ------------------------------------------------------------------------------
    def renderer(self, st: Struct, version: int, flexible: bool) -> Callable[[Any], dict[str, Any]]:
        name = self._fname("json", st, version, flexible)
        if name in self.ns:
            return self.ns[name]
        regular, tagged = self._fields(st, version, flexible)
        for f in regular + tagged:
            if f.struct is not None:
                self.renderer(f.struct, version, flexible)
        src = _Source()
        src.emit(f"def {name}(o):")
        src.depth = 1
        items: list[str] = []
        conditional: list[tuple[Field, str]] = []  # tagged fields, printed when not the default
        present = {id(f) for f in regular + tagged}
        for f in st.fields:
            if id(f) not in present:
                continue
            if f.tag is not None:
                conditional.append((f, self._render_expr(f, version, flexible)))
            else:
                items.append(f"{f.name!r}: {self._render_expr(f, version, flexible)}")
        unknown = flexible and st.unknown_tags_attr is not None
        if not conditional and not unknown:
            src.emit("return {" + ", ".join(items) + "}")
            return self._define(name, src)
        # Like Kafka's JSON converter, a tagged field is printed only when it is not its default;
        # tagged fields the table does not know are shown, never dropped silently.
        src.emit("r = {" + ", ".join(items) + "}")
        for f, expr in conditional:
            src.emit(f"if {self._differs(f, 'o.' + f.attr)}:")
            src.emit(f"    r[{f.name!r}] = {expr}")
        if unknown:
            src.emit(f"u = o.{st.unknown_tags_attr}")
            src.emit("if u:")
            src.emit("    r['_unknownTaggedFields'] = _unk(u)")
        src.emit("return r")
        return self._define(name, src)

    def _render_expr(self, f: Field, version: int, flexible: bool) -> str:
        """The JSON value of field `f` of the object `o`."""
        expr = f"o.{f.attr}"
        if f.render_decoded:
            # Consumer-protocol payloads: rendered decoded when they parsed, as base64 otherwise.
            decoded = f"o.{f.attr}_decoded"
            return f"(_b64({expr}) if {decoded} is None else _render_decoded({decoded}))"
        if f.type == "bytes":
            return f"_b64({expr})"
        if f.type in ("[]int32", "[]int16", "[]string"):
            return f"(None if {expr} is None else list({expr}))"
        if f.struct is not None and f.type.startswith("[]"):
            sub = self._fname("json", f.struct, version, flexible)
            return f"(None if {expr} is None else [{sub}(x) for x in {expr}])"
        if f.struct is not None:
            sub = self._fname("json", f.struct, version, flexible)
            return f"(None if {expr} is None else {sub}({expr}))"
        return expr

    # -- messages -------------------------------------------------------------------------------
    def message_readers(self, msg: Message) -> dict[int, Callable[[bytes, int], tuple[Any, int]]]:
        return {v: self.reader(msg.struct, v, msg.is_flexible(v)) for v in msg.versions}

    def message_writers(self, msg: Message) -> dict[int, Callable[[Any, bytearray], None]]:
        return {v: self.writer(msg.struct, v, msg.is_flexible(v)) for v in msg.versions}

    def message_renderers(self, msg: Message) -> dict[int, Callable[[Any], dict[str, Any]]]:
        return {v: self.renderer(msg.struct, v, msg.is_flexible(v)) for v in msg.versions}


COMPILER = Compiler()


def main(argv: list[str]) -> None:
    from collectors.codec import schema

    name, version = argv[0], int(argv[1])
    for msg in vars(schema).values():
        if isinstance(msg, Message) and msg.name == name:
            COMPILER.reader(msg.struct, version, msg.is_flexible(version))
            COMPILER.writer(msg.struct, version, msg.is_flexible(version))
            COMPILER.renderer(msg.struct, version, msg.is_flexible(version))
    for source in COMPILER.sources.values():
        print(source)


if __name__ == "__main__":
    main(sys.argv[1:])
