"""Reads and writes the schemas of messages.py: one small interpreter for every message and version.

Values are plain dicts keyed by the snake_case field names (like Kafka's JSON converters); a field
the version does not carry is absent from the dict a reader returns and ignored by a writer. Topic
ids are Kafka's Uuid strings (URL-safe base64 of the 16 bytes, no padding). The messages here are a
few per poll, so writing is a small interpreter; reading is compiled per struct and version
(readers.py: an OffsetFetch answer holds a struct per group, topic and partition). Every length is
checked against the bytes left before anything is allocated.

Framing (request/response headers) is here too:
- request header v1 (non-flexible APIs) / v2 (flexible): api key, version, correlation id,
  client id (always a classic nullable string), then tagged fields in v2;
- response header v0 / v1 (flexible: tagged fields), except ApiVersions, whose response header is
  always v0 so that a client can read it before it knows which versions the broker speaks.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any

from collectors.kafka_protocol.errors import KafkaProtocolError, ProtocolDecodeError
from collectors.kafka_protocol.messages import API_VERSIONS, Api, Field
from collectors.kafka_protocol.readers import Short, read_uvarint, reader, skip_tags

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "bool": struct.Struct(">?"),
}
_I16, _I32 = _FIXED["int16"], _FIXED["int32"]


class EncodeError(KafkaProtocolError):
    """A value does not fit its field (wrong type, out of range, null where not nullable)."""


def uuid_to_str(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_to_bytes(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise EncodeError(f"not a Kafka Uuid: {text!r}") from exc
    if len(raw) != 16 or uuid_to_str(raw) != text:
        raise EncodeError(f"not a Kafka Uuid: {text!r}")
    return raw


# -- writing --------------------------------------------------------------------------------------
def write_uvarint(out: bytearray, value: int) -> None:
    if not 0 <= value <= 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_length(out: bytearray, length: int | None, flexible: bool, classic: struct.Struct) -> None:
    """A length or count: compact (uvarint of n + 1, 0 = null) in flexible versions, else `classic`."""
    if flexible:
        write_uvarint(out, 0 if length is None else length + 1)
    else:
        out += classic.pack(-1 if length is None else length)


def write_fields(
    out: bytearray, fields: tuple[Field, ...], version: int, flexible: bool, value: dict
) -> None:
    for f in fields:
        if not f.present_in(version):
            continue
        if f.key not in value:
            raise EncodeError(f"{f.name}: missing (the field is in v{version})")
        try:
            _write_value(out, f, version, flexible, value[f.key])
        except (struct.error, TypeError, AttributeError, UnicodeEncodeError) as exc:
            raise EncodeError(f"{f.name}: {exc}") from None
    if flexible:
        out.append(0)  # no tagged fields


def _write_value(out: bytearray, f: Field, version: int, flexible: bool, v: Any) -> None:
    t = f.type
    if t in _FIXED:
        out += _FIXED[t].pack(v)
        return
    if t == "uuid":
        out += uuid_to_bytes(v)
        return
    if v is None and not f.nullable_in(version):
        raise EncodeError(f"{f.name}: null in a field that is not nullable in v{version}")
    if t == "string":
        data = None if v is None else v.encode("utf-8")
        _write_length(out, None if data is None else len(data), flexible, _I16)
        out += data or b""
    elif t == "bytes":
        _write_length(out, None if v is None else len(v), flexible, _I32)
        out += v or b""
    elif t.startswith("[]"):
        _write_length(out, None if v is None else len(v), flexible, _I32)
        for x in v or ():
            _write_value(out, f.item, version, flexible, x)
    elif f.fields:  # a struct; a nullable one behind an int8, -1 null or 1 present
        if f.nullable_in(version):
            out += _FIXED["int8"].pack(-1 if v is None else 1)
        if v is not None:
            write_fields(out, f.fields, version, flexible, v)
    else:
        raise EncodeError(f"{f.name}: unknown type {t}")


# -- reading --------------------------------------------------------------------------------------
class Reader:
    """A cursor over one response body."""

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf, self.pos = buf, pos

    def left(self) -> int:
        return len(self.buf) - self.pos

    def take(self, n: int, what: str) -> bytes:
        if n > self.left():
            raise ProtocolDecodeError(f"{what}: {n} bytes needed at offset {self.pos}, {self.left()} left")
        data = self.buf[self.pos : self.pos + n]
        self.pos += n
        return data

    def fixed(self, s: struct.Struct, what: str) -> Any:
        return s.unpack(self.take(s.size, what))[0]

    def uvarint(self, what: str) -> int:
        try:
            value, self.pos = read_uvarint(self.buf, self.pos, what)
        except Short as e:
            raise ProtocolDecodeError(str(e)) from None
        return value

    def length(self, flexible: bool, classic: struct.Struct, what: str) -> int | None:
        n = self.uvarint(what) - 1 if flexible else self.fixed(classic, what)
        return None if n < 0 else n

    def skip_tags(self, what: str) -> None:
        try:
            self.pos = skip_tags(self.buf, self.pos, what)
        except Short as e:
            raise ProtocolDecodeError(str(e)) from None


def read_fields(r: Reader, fields: tuple[Field, ...], version: int, flexible: bool) -> dict[str, Any]:
    """A struct's fields at `version`, through its compiled reader (readers.py)."""
    out, r.pos = reader(fields, version, flexible)(r.buf, r.pos)
    return out


# -- whole messages -------------------------------------------------------------------------------
def encode_request(api: Api, version: int, correlation_id: int, client_id: str | None, body: dict) -> bytes:
    """The request frame without its 4-byte size prefix: header, then body."""
    if not api.min_version <= version <= api.max_version:
        raise EncodeError(
            f"{api.name} v{version}: this client implements v{api.min_version}-{api.max_version}"
        )
    flexible = api.is_flexible(version)
    out = bytearray(_I16.pack(api.key) + _I16.pack(version) + _I32.pack(correlation_id))
    cid = None if client_id is None else client_id.encode("utf-8")
    out += _I16.pack(-1 if cid is None else len(cid)) + (cid or b"")
    if flexible:
        out.append(0)  # header tagged fields
    write_fields(out, api.request, version, flexible, body)
    return bytes(out)


def decode_request(api: Api, frame: bytes) -> tuple[int, int, str | None, dict]:
    """(version, correlation id, client id, body) of a request frame: for tests and debugging."""
    r = Reader(frame)
    key, version, correlation_id = r.fixed(_I16, "api key"), r.fixed(_I16, "version"), r.fixed(_I32, "cid")
    if key != api.key:
        raise ProtocolDecodeError(f"api key {key}, expected {api.key} ({api.name})")
    n = r.fixed(_I16, "client id")
    client_id = None if n < 0 else r.take(n, "client id").decode("utf-8", "replace")
    flexible = api.is_flexible(version)
    if flexible:
        r.skip_tags("header tagged fields")
    body = read_fields(r, api.request, version, flexible)
    if r.left():
        raise ProtocolDecodeError(f"{api.name} v{version} request: {r.left()} bytes after the body")
    return version, correlation_id, client_id, body


def response_header_is_flexible(api: Api, version: int) -> bool:
    return api.is_flexible(version) and api is not API_VERSIONS


def encode_response(api: Api, version: int, correlation_id: int, body: dict) -> bytes:
    """A response frame without its size prefix (the broker's side: tests round-trip through it)."""
    out = bytearray(_I32.pack(correlation_id))
    if response_header_is_flexible(api, version):
        out.append(0)
    write_fields(out, api.response, version, api.is_flexible(version), body)
    return bytes(out)


def response_correlation_id(frame: bytes) -> int:
    return Reader(frame).fixed(_I32, "correlation id")


def decode_response(api: Api, version: int, frame: bytes) -> dict:
    """The body of a response frame (size prefix already removed); bytes after the body are ignored."""
    r = Reader(frame)
    r.fixed(_I32, "correlation id")
    if response_header_is_flexible(api, version):
        r.skip_tags("response header tagged fields")
    try:
        return read_fields(r, api.response, version, api.is_flexible(version))
    except ProtocolDecodeError as exc:
        raise ProtocolDecodeError(f"{api.name} v{version} response: {exc}") from None
