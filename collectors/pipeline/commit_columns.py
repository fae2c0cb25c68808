"""OffsetCommit values decoded a whole column at a time (numpy over the Arrow buffers).

Offset commits are nearly every record of `__consumer_offsets` (one per partition per commit of every
group), and a backlog being caught up is millions of them: decoding them one by one in Python is what
held the pipeline's throughput down. The common shapes, versions 0 to 3 with an empty metadata
string, have a fixed layout, so their fields are read here with array arithmetic:

    v0, v2: version int16 | offset int64 | metadata int16 len=0 | commitTimestamp int64            20 bytes
    v1:     version int16 | offset int64 | metadata int16 len=0 | commitTimestamp | expireTimestamp  28 bytes
    v3:     version int16 | offset int64 | leaderEpoch int32 | metadata len=0 | commitTimestamp      24 bytes

Every other value (a metadata string, the flexible version 4, a tombstone, anything malformed) is
left to the codec, row by row, so whatever is decoded here is exactly what the codec would give, and
every error is still the codec's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# version -> (exact length with empty metadata, position of the metadata length, of commitTimestamp)
_LAYOUT = {0: (20, 10, 12), 1: (28, 10, 12), 2: (20, 10, 12), 3: (24, 14, 16)}


@dataclass
class CommitColumns:
    """The fields of the values `ok` marks (other rows hold zeros / -1 and must not be read)."""

    ok: np.ndarray  # bool
    offset: np.ndarray  # int64
    leader_epoch: np.ndarray  # int32 (-1 before v3)
    commit_timestamp: np.ndarray  # int64
    expire_timestamp: np.ndarray  # int64 (-1 but in v1)


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
    long_enough = np.flatnonzero(lengths >= 20)
    if not len(long_enough):
        return CommitColumns(ok, offset, epoch, commit_ts, expire_ts)
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
    return CommitColumns(ok, offset, epoch, commit_ts, expire_ts)
