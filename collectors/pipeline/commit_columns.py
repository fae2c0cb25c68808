"""OffsetCommit values decoded a whole column at a time (numpy over the Arrow buffers).

Offset commits are nearly every record of `__consumer_offsets` (one per partition per commit of every
group), and a backlog being caught up is millions of them: decoding them one by one in Python is what
held the pipeline's throughput down. The common shapes, versions 0 to 3 with an empty metadata
string, have a fixed layout, so their fields are read here with array arithmetic:

    v0, v2: version int16 | offset int64 | metadata int16 len=0 | commitTimestamp int64            20 bytes
    v1:     version int16 | offset int64 | metadata int16 len=0 | commitTimestamp | expireTimestamp  28 bytes
    v3:     version int16 | offset int64 | leaderEpoch int32 | metadata len=0 | commitTimestamp      24 bytes
    v4:     version int16 | offset int64 | leaderEpoch int32 | metadata uvarint 1 (compact, empty)
            | commitTimestamp int64 | tagged fields uvarint 0                                       24 bytes
    v4 + topicId (Kafka 4.1+ writes it for every commit that named its topic by id):
            ... | commitTimestamp int64 | tagged fields 1 | tag 0 | size 16 | topicId 16 bytes     42 bytes

Kafka 4.1+ writes version 4 for most commits, so without the v4 layouts a catch-up of a current
broker fell back to the codec for every record (a fifth of the catch-up's CPU, and its commits then
skipped the run path downstream). Every other value (a metadata string, other tagged fields, a
tombstone, anything malformed) is left to the codec, row by row, so whatever is decoded here is
exactly what the codec would give, and every error is still the codec's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coordinator_model.evidence import ZERO_UUID

# version -> (exact length with empty metadata, position of the metadata length, of commitTimestamp)
_LAYOUT = {0: (20, 10, 12), 1: (28, 10, 12), 2: (20, 10, 12), 3: (24, 14, 16)}
# version 4 (flexible): metadata is a compact string (uvarint length + 1) at 14, commitTimestamp at 15,
# then the tagged fields: none (24 bytes), or only topicId (tag 0, 16 bytes: 42 bytes).
_V4_PLAIN, _V4_TOPIC_ID = 24, 42
_V4_TAGS_AT, _V4_TOPIC_ID_AT = 23, 26


@dataclass
class CommitColumns:
    """The fields of the values `ok` marks (other rows hold zeros / -1 and must not be read)."""

    ok: np.ndarray  # bool
    offset: np.ndarray  # int64
    leader_epoch: np.ndarray  # int32 (-1 before v3)
    commit_timestamp: np.ndarray  # int64
    expire_timestamp: np.ndarray  # int64 (-1 but in v1)
    # the v4 tagged topicId: an index into topic_ids (few distinct among many commits), -1 for none
    topic_id_code: np.ndarray  # int32
    topic_ids: list[str | None]

    def topic_id(self, row: int) -> str | None:
        """The topic id of one row as Kafka prints it (None when absent or zero)."""
        code = int(self.topic_id_code[row])
        return self.topic_ids[code] if code >= 0 else None


def _binary_buffers(arr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, lengths, data bytes) of a pyarrow binary array, null rows as length -1."""
    import pyarrow as pa

    if arr.type == pa.large_binary():
        off_type = np.int64
    elif arr.type == pa.binary():
        off_type = np.int32
    else:
        arr = arr.cast(pa.binary())
        off_type = np.int32
    bufs = arr.buffers()
    n = len(arr)
    width = np.dtype(off_type).itemsize
    offsets = np.frombuffer(bufs[1], dtype=off_type, count=n + 1, offset=arr.offset * width)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    if arr.null_count:
        lengths[np.asarray(arr.is_null())] = -1
    return starts, lengths, data


def _read_be(data: np.ndarray, pos: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Big-endian integers of `width` bytes at each position."""
    if not len(pos):
        return np.zeros(0, np.dtype(dtype).newbyteorder("="))
    raw = data[pos[:, None] + np.arange(width)]
    return raw.view(dtype).reshape(-1).astype(np.dtype(dtype).newbyteorder("="))


def decode_commit_values(values: Any) -> CommitColumns:
    """Decode a pyarrow binary array of OffsetCommit values; `ok` marks the rows decoded here."""
    starts, lengths, data = _binary_buffers(values)
    n = len(starts)
    ok = np.zeros(n, bool)
    offset = np.zeros(n, np.int64)
    epoch = np.full(n, -1, np.int32)
    commit_ts = np.zeros(n, np.int64)
    expire_ts = np.full(n, -1, np.int64)
    topic_id = np.full(n, -1, np.int32)
    names: list[str | None] = []
    long_enough = np.flatnonzero(lengths >= 20)
    if not len(long_enough):
        return CommitColumns(ok, offset, epoch, commit_ts, expire_ts, topic_id, names)
    versions = _read_be(data, starts[long_enough], 2, ">i2")
    for version, (size, meta_at, ts_at) in _LAYOUT.items():
        rows = long_enough[(versions == version) & (lengths[long_enough] == size)]
        if not len(rows):
            continue
        s = starts[rows]
        rows = rows[_read_be(data, s + meta_at, 2, ">i2") == 0]  # empty metadata only
        if not len(rows):
            continue
        s = starts[rows]
        ok[rows] = True
        offset[rows] = _read_be(data, s + 2, 8, ">i8")
        commit_ts[rows] = _read_be(data, s + ts_at, 8, ">i8")
        if version == 3:
            epoch[rows] = _read_be(data, s + 10, 4, ">i4")
        if version == 1:
            expire_ts[rows] = _read_be(data, s + 20, 8, ">i8")
    names = _decode_v4(data, starts, lengths, long_enough, versions, ok, offset, epoch, commit_ts, topic_id)
    return CommitColumns(ok, offset, epoch, commit_ts, expire_ts, topic_id, names)


def _decode_v4(
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    long_enough: np.ndarray,
    versions: np.ndarray,
    ok: np.ndarray,
    offset: np.ndarray,
    epoch: np.ndarray,
    commit_ts: np.ndarray,
    topic_id: np.ndarray,
) -> list[str | None]:
    """Version 4 values with an empty metadata string and either no tagged field or only topicId;
    returns the distinct topic ids that `topic_id` indexes."""
    v4 = long_enough[versions == 4]
    if not len(v4):
        return []
    size = lengths[v4]
    s = starts[v4]
    empty_meta = data[s + 14] == 1
    tags = data[s + _V4_TAGS_AT]
    plain = (size == _V4_PLAIN) & empty_meta & (tags == 0)
    with_id = np.zeros(len(v4), bool)
    maybe = np.flatnonzero((size == _V4_TOPIC_ID) & empty_meta & (tags == 1))
    if len(maybe):
        ms = s[maybe]
        with_id[maybe] = (data[ms + _V4_TAGS_AT + 1] == 0) & (data[ms + _V4_TAGS_AT + 2] == 16)
    rows = v4[plain | with_id]
    if not len(rows):
        return []
    s = starts[rows]
    ok[rows] = True
    offset[rows] = _read_be(data, s + 2, 8, ">i8")
    epoch[rows] = _read_be(data, s + 10, 4, ">i4")
    commit_ts[rows] = _read_be(data, s + 15, 8, ">i8")
    id_rows = v4[with_id]
    if not len(id_rows):
        return []
    raw = data[starts[id_rows][:, None] + _V4_TOPIC_ID_AT + np.arange(16)]
    # a few distinct topics among many commits: each id is rendered once
    uniq, inverse = np.unique(raw.view("V16").reshape(-1), return_inverse=True)
    names = [_uuid_str(u.tobytes()) for u in uniq]
    codes = inverse.reshape(-1).astype(np.int32)
    zero = [i for i, name in enumerate(names) if name is None]
    if zero:
        codes[np.isin(codes, zero)] = -1
    topic_id[id_rows] = codes
    return names


def _uuid_str(raw: bytes) -> str | None:
    """Kafka's Uuid.toString() (the codec's uuid_str); the zero id means "no id"."""
    from collectors.codec.compiler import uuid_str

    text = uuid_str(raw)
    return None if text == ZERO_UUID else text
