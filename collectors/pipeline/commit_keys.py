"""OffsetCommit keys decoded a whole column at a time (numpy over the Arrow buffers).

Every offset commit's key names its group, topic and partition, and a catch-up meets as many distinct
keys as the fleet has committed partitions: 1,000,000 for 10,000 groups of 100 partitions. Read one
by one through the codec they were half of the first stage's time. The layout is fixed:

    record type int16 (0 or 1) | group: int16 length + UTF-8 | topic: int16 length + UTF-8 | partition int32

so the fields are read here with array arithmetic, and the group and topic names become Python
strings once per distinct name (a fleet has far fewer groups and topics than committed partitions).
A key of any other shape (another record type, a null or over-long string, trailing bytes) is left
to the codec, so whatever is decoded here is exactly what the codec would give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from collectors.pipeline.commit_columns import _binary_buffers, _read_be

COMMIT_KEY_TYPES = (0, 1)  # 0: the legacy OffsetCommitKey, 1: the current one; the same layout


@dataclass
class CommitKeys:
    """The fields of the keys `ok` marks (other rows hold zeros and must not be read)."""

    ok: np.ndarray  # bool
    group_code: np.ndarray  # int32, an index into groups
    groups: list[str]
    topic_code: np.ndarray  # int32, an index into topics
    topics: list[str]
    partition: np.ndarray  # int32


def decode_commit_keys(keys: Any) -> CommitKeys:
    """Decode a pyarrow binary array of record keys; `ok` marks the OffsetCommit keys decoded here."""
    starts, lengths, data = _binary_buffers(keys)
    n = len(starts)
    ok = np.zeros(n, bool)
    group_code = np.zeros(n, np.int32)
    topic_code = np.zeros(n, np.int32)
    partition = np.zeros(n, np.int32)
    rows = np.flatnonzero(lengths >= 10)  # type, two empty strings, partition
    if len(rows):
        s = starts[rows]
        rows = rows[np.isin(_read_be(data, s, 2, ">i2"), COMMIT_KEY_TYPES)]
    if not len(rows):
        return CommitKeys(ok, group_code, [], topic_code, [], partition)
    s = starts[rows]
    glen = _read_be(data, s + 2, 2, ">i2").astype(np.int64)
    # the topic's length field must lie inside the key before it is read
    fits = (glen >= 0) & (4 + glen + 2 + 4 <= lengths[rows])
    rows, s, glen = rows[fits], s[fits], glen[fits]
    tlen = _read_be(data, s + 4 + glen, 2, ">i2").astype(np.int64)
    exact = (tlen >= 0) & (4 + glen + 2 + tlen + 4 == lengths[rows])
    rows, s, glen, tlen = rows[exact], s[exact], glen[exact], tlen[exact]
    if not len(rows):
        return CommitKeys(ok, group_code, [], topic_code, [], partition)
    ok[rows] = True
    partition[rows] = _read_be(data, s + 6 + glen + tlen, 4, ">i4")
    codes, groups = _names(data, s + 4, glen)
    group_code[rows] = codes
    codes, topics = _names(data, s + 6 + glen, tlen)
    topic_code[rows] = codes
    return CommitKeys(ok, group_code, groups, topic_code, topics, partition)


def _names(data: np.ndarray, at: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The strings of `length` bytes at each position, as codes into their distinct values (decoded
    as the codec does: UTF-8, an invalid byte replaced)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bounds = np.zeros(len(at) + 1, np.int64)
    np.cumsum(length, out=bounds[1:])
    # each string's bytes gathered into one buffer: position of byte j of string i is at[i] + j
    gather = np.repeat(at - bounds[:-1], length) + np.arange(bounds[-1])
    packed = data[gather]
    arr = pa.Array.from_buffers(
        pa.large_binary(), len(at), [None, pa.py_buffer(bounds.tobytes()), pa.py_buffer(packed.tobytes())]
    )
    enc = pc.dictionary_encode(arr)
    names = [b.decode("utf-8", "replace") for b in enc.dictionary.to_pylist()]
    return np.asarray(enc.indices, np.int32), names
