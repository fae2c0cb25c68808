"""A group's committed offsets in Redis, one hash field per partition (docs/redis-schema.md, "Per
group"): the unit of work of the live pipeline is the partition commit, not the group.

`{prefix}:group:{G}:offsets`, field `TOPIC:PARTITION` -> what `OffsetStore` keeps of the partition
(its `OffsetState` and its Burrow lag window), packed little-endian:

    0x01, offset, commit_timestamp, ts, log_offset, leader_epoch, expire_timestamp, slot_start (int64
    each), metadata's length (uint32; 0xFFFFFFFF: none), samples (uint8), the metadata (UTF-8), then
    per sample ts, offset, lag, end_offset (int64 each; -2**63: unknown)

A value that starts with `[` is the JSON form an earlier version wrote (`[offset, commit_timestamp,
ts, log_offset, metadata, leader_epoch, expire_timestamp, slot_start, [[ts, offset, lag,
end_offset], ...]]`); it reads the same and the partition's next commit writes it packed. Packed, a
100-partition group's fields read about four times faster: a lag refresh reads all of them.
Topic names have no `:` (Kafka allows letters, digits, `.`, `_` and `-`), so the last `:` splits a
field. A commit writes its partition's field and nothing else of the group.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import orjson

from coordinator_model.offsets import OffsetState, OffsetStore
from coordinator_model.offsets import lag as lagmod

TP = tuple[str, int]


def field(tp: TP) -> str:
    return f"{tp[0]}:{tp[1]}"


def tp_of(name: bytes | str) -> TP:
    text = name.decode() if isinstance(name, bytes) else name
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)


PACKED = 1
_HEAD = struct.Struct("<B7qIB")
_SAMPLE_FORM = struct.Struct("<4q")
_UNKNOWN = -(2**63)
_NO_METADATA = 0xFFFFFFFF


def encode(store: OffsetStore, tp: TP) -> bytes | None:
    """A partition's field value (None: the store keeps no offset there)."""
    o = store.committed.get(tp)
    if o is None:
        return None
    w = store.windows.get(tp)
    samples = w.samples if w is not None else []
    slot_start = w.slot_start if w is not None else -(2**62)
    meta = o.metadata.encode() if o.metadata is not None else b""
    # the route stage lets no value beyond int64 through (route.py's per-row guard)
    head = _HEAD.pack(
        PACKED,
        o.offset,
        o.commit_timestamp,
        o.ts,
        o.log_offset,
        o.leader_epoch,
        o.expire_timestamp,
        slot_start,
        len(meta) if o.metadata is not None else _NO_METADATA,
        len(samples),
    )
    tail = b"".join(
        _SAMPLE_FORM.pack(s[0], s[1], _UNKNOWN if s[2] is None else s[2], _UNKNOWN if s[3] is None else s[3])
        for s in samples
    )
    return head + meta + tail


def decode_into(store: OffsetStore, tp: TP, raw: bytes) -> None:
    """A field value into `store` (its committed offset and lag window); ValueError if malformed."""
    if raw[:1] != b"[":
        _decode_packed(store, tp, raw)
        return
    try:
        off, cts, ts, log, meta, epoch, expire, slot_start, window = orjson.loads(raw)
        state = OffsetState(off, cts, ts, log, meta, epoch, expire)
        samples = [_new(_SAMPLE, s) for s in window]
        if not all(type(v) is int for v in (off, cts, ts, log, epoch, expire, slot_start)) or any(
            len(x) != 4 or type(x[0]) is not int or type(x[1]) is not int for x in samples
        ):
            raise TypeError("not the stored shape")
    except (TypeError, ValueError, IndexError) as e:
        raise ValueError(f"offsets field of {field(tp)}: {e}") from e
    store.committed[tp] = state
    store.windows[tp] = lagmod.PartitionWindow(samples, slot_start)


def _decode_packed(store: OffsetStore, tp: TP, raw: bytes) -> None:
    try:
        version, off, cts, ts, log, epoch, expire, slot_start, meta_len, n = _HEAD.unpack_from(raw)
        if version != PACKED:
            raise ValueError(f"unknown form {version}")
        at = _HEAD.size
        meta: str | None = None
        if meta_len != _NO_METADATA:
            meta = bytes(raw[at : at + meta_len]).decode()
            at += meta_len
        if len(raw) != at + n * _SAMPLE_FORM.size:
            raise ValueError("length does not match its samples")
        # a lagging fleet's refresh reads every partition's window: samples made as plain tuples
        samples = [
            _new(_SAMPLE, (s, o, None if lag == _UNKNOWN else lag, None if end == _UNKNOWN else end))
            for s, o, lag, end in _SAMPLE_FORM.iter_unpack(raw[at:])
        ]
    except (struct.error, UnicodeDecodeError) as e:
        raise ValueError(f"offsets field of {field(tp)}: {e}") from e
    except ValueError as e:
        raise ValueError(f"offsets field of {field(tp)}: {e}") from e
    store.committed[tp] = OffsetState(off, cts, ts, log, meta, epoch, expire)
    store.windows[tp] = lagmod.PartitionWindow(samples, slot_start)


_SAMPLE = lagmod.CommitSample
_new = tuple.__new__

# `commit_run_packed`'s answer when only the whole path (decode, OffsetStore.commit_run, encode) can
# say what the run makes of the field
WHOLE_PATH = False


def commit_run_packed(raw: bytes, run: Any, history: Any) -> bytes | bool | None:
    """The field a packed partition field `raw` becomes with one run of plain commits (CommitRun),
    made on the bytes: exactly `encode` of what `OffsetStore.commit_run` makes of `decode_into`'s
    result, when that takes the run's summary (every commit kept, the first opening a lag slot); the
    kept samples stay as they are stored. `history`: the partition's log-end history (its `at`), or
    None. None when the stored state already holds the run (a batch read again); WHOLE_PATH for any
    other case (the JSON form, an interleaving or older run, a first commit within a slot).

    Why: on a busy fleet every record of `__consumer_offsets` is such a run, and decoding the
    partition's ten samples into objects and encoding them again was most of a commit's cost."""
    if raw[:1] != b"\x01" or len(raw) < _HEAD.size:
        return WHOLE_PATH
    _, _, _, _, log, _, _, slot_start, meta_len, n = _HEAD.unpack_from(raw)
    at = _HEAD.size + (0 if meta_len == _NO_METADATA else meta_len)
    if len(raw) != at + n * _SAMPLE_FORM.size:
        return WHOLE_PATH
    if run.last_log <= log:
        return None
    if not run.monotone or log > run.first_log or (n and run.first_ts - slot_start < lagmod.MIN_DISTANCE_MS):
        return WHOLE_PATH
    new = run.slots[-lagmod.WINDOW :]
    keep = min(n, lagmod.WINDOW - len(new))
    out = [
        _HEAD.pack(
            PACKED,
            run.offset,
            run.commit_ts if run.commit_ts >= 0 else run.last_ts,
            run.last_ts,
            run.last_log,
            run.epoch,
            run.expire,
            run.slot_start,
            0,  # the metadata of a run's commits: "" (CommitRun)
            keep + len(new),
        ),
        raw[len(raw) - keep * _SAMPLE_FORM.size :] if keep else b"",
    ]
    for ts, off in new:
        end = history.at(ts) if history is not None else None
        out.append(
            _SAMPLE_FORM.pack(
                ts,
                off,
                _UNKNOWN if end is None else min(max(0, end - off), lagmod.LAG_MAX),  # as lagmod.lag_offsets
                _UNKNOWN if end is None else end,
            )
        )
    return b"".join(out)


# Compare-and-set of partition fields. Two writers apply commits to the partitions a group holds,
# the first stage in Spark (known_commits.py) and the commit lane (commit_lane.py), each reading a
# field, applying its runs to it and writing it back: a field the other wrote in between is left as
# it is and named in the answer, and the writer reads it again. ARGV: field, the value read, the value
# to write ('' deletes the field), for each field.
_SWAP = """
local moved = {}
for i = 1, #ARGV, 3 do
  local cur = redis.call('HGET', KEYS[1], ARGV[i])
  if cur ~= ARGV[i + 1] then
    moved[#moved + 1] = ARGV[i]
  elseif ARGV[i + 2] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
  end
end
return moved
"""


class GroupOffsets:
    """Read and write groups' offset hashes through one client."""

    def __init__(self, client: Any, key_of: Any) -> None:
        self.r = client
        self.key_of = key_of  # group -> its hash's key (RedisStore.group_key(group, "offsets"))
        self._swap = client.register_script(_SWAP)

    def held(self, groups: list[str]) -> list[str]:
        """Those of `groups` that hold offsets here (their hash exists)."""
        with self.r.pipeline(transaction=False) as p:
            for g in groups:
                p.exists(self.key_of(g))
            return [g for g, n in zip(groups, p.execute(), strict=True) if n]

    def load(self, groups: list[str]) -> dict[str, OffsetStore]:
        """Every partition of each group (a group with none: an empty store)."""
        if not groups:
            return {}
        with self.r.pipeline(transaction=False) as p:
            for g in groups:
                p.hgetall(self.key_of(g))
            rows = p.execute()
        return {g: _store(fields.items()) for g, fields in zip(groups, rows, strict=True)}

    def load_fields(self, wanted: dict[str, list[TP]]) -> dict[str, dict[TP, bytes]]:
        """These partitions' stored forms, as they are in Redis (those it holds)."""
        groups = list(wanted)
        if not groups:
            return {}
        with self.r.pipeline(transaction=False) as p:
            for g in groups:
                p.hmget(self.key_of(g), [field(tp) for tp in wanted[g]])
            rows = p.execute()
        return {
            g: {tp: v for tp, v in zip(wanted[g], values, strict=True) if v is not None}
            for g, values in zip(groups, rows, strict=True)
        }

    def queue_fields(self, p: Any, group: str, fields: dict[TP, bytes | None]) -> None:
        """Queue on pipeline `p` these partitions' stored forms (None: the field goes)."""
        sets: dict[str, bytes] = {}
        gone: list[str] = []
        for tp, v in fields.items():
            if v is None:
                gone.append(field(tp))
            else:
                sets[field(tp)] = v
        key = self.key_of(group)
        if sets:
            p.hset(key, mapping=sets)
        if gone:
            p.hdel(key, *gone)

    def queue_swaps(self, p: Any, group: str, swaps: dict[TP, tuple[bytes, bytes | None]]) -> None:
        """Queue on pipeline `p` these partitions' new forms, each written only if the field still
        holds the form it was read as (`(read, new)`; new None: the field goes). The pipeline's answer
        for it: the names of the fields another writer changed meanwhile (`moved_of`)."""
        args: list[Any] = []
        for tp, (read, new) in swaps.items():
            args += [field(tp), read, b"" if new is None else new]
        self._swap(keys=[self.key_of(group)], args=args, client=p)


def moved_of(answer: Any) -> set[TP]:
    """The partitions a queue_swaps answer says were changed by another writer (and left as they were)."""
    return {tp_of(name) for name in answer or ()}


def stored(fields: dict[TP, bytes]) -> OffsetStore:
    """An OffsetStore of these partitions' stored forms (a malformed one left out)."""
    store = OffsetStore()
    for tp, raw in fields.items():
        try:
            decode_into(store, tp, raw)
        except ValueError:
            continue  # a field of another shape is not an offset: the next commit writes it anew
    return store


def _store(fields: Iterable[tuple[Any, Any]]) -> OffsetStore:
    store = OffsetStore()
    for name, raw in fields:
        try:
            decode_into(store, tp_of(name), raw)
        except ValueError:
            continue  # a field of another shape (or name) is not an offset: the next commit writes it anew
    return store
