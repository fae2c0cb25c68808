"""The live model stage runs its timers on event time (collectors/pipeline/model_state.py): a slow
micro-batch never expires a member whose later heartbeats are still in transit, and a member that
really stopped heartbeating still expires through the Admin poller's clock records alone, and a
commit's lag is shown at once while the model waits for the watermark.

The update function is driven directly, batch by batch, with the rows `decode_batches` routes and a
small holder of the three GroupState calls it uses; the wall clock it reads is set per batch. The
same function runs inside Spark in tests/test_pipeline_live.py and tests/test_demo.py.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pandas as pd
import pytest

from collectors.codec import records as r
from collectors.codec.encoder import encode_key, encode_value
from collectors.pipeline import model_state
from collectors.pipeline.route import bucket_of, decode_batches
from collectors.pipeline.rows import REFRESH_BUCKET

T0 = 1_800_000_000_000
BUCKETS = 4
KINDS = {"hb": "heartbeat", "admin": "admin", "offsets": "offsets"}


class BucketState:
    """What applyInPandasWithState's GroupState offers the function: exists/get/update/hasTimedOut."""

    def __init__(self) -> None:
        self.value: tuple | None = None
        self.hasTimedOut = False

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        assert self.value is not None
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def setTimeoutDuration(self, ms: int) -> None:  # Spark's name
        self.timeout_ms = ms


def hb(member: str, event: str, ts: int, partitions: list | None = None) -> dict[str, Any]:
    return {
        "topic": "hb",
        "key": b"g",
        "ts": ts,
        "value": json.dumps(
            {
                "ts": ts,
                "group": "g",
                "member_id": member,
                "group_instance_id": None,
                "client_id": member,
                "host": "/127.0.0.1",
                "generation": None,
                "event": event,
                "state": "steady",
                "partitions": partitions or [],
                "session_timeout_ms": 6000,
                "max_poll_interval_ms": 300000,
            }
        ).encode(),
    }


def clock(ts: int) -> dict[str, Any]:
    return {"topic": "admin", "key": b"", "ts": ts, "value": json.dumps({"ts": ts, "clock": True}).encode()}


class Live:
    """One bucket's model stage across micro-batches, with the wall clock of each batch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lateness_ms: int = 5000) -> None:
        self.update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, lateness_ms)
        self.state = BucketState()
        self.monkeypatch = monkeypatch
        self.offset = 0
        self.docs: list[dict] = []

    def batch(self, wall_ms: int, records: list[dict[str, Any]]) -> dict | None:
        raw = pd.DataFrame(
            {
                "topic": [r["topic"] for r in records],
                "partition": [0] * len(records),
                "offset": list(range(self.offset, self.offset + len(records))),
                "timestamp": [r["ts"] for r in records],
                "key": [r["key"] for r in records],
                "value": [r["value"] for r in records],
            }
        )
        self.offset += len(records)
        routed = pd.concat(list(decode_batches(iter([raw]), KINDS, BUCKETS)))
        mine = routed[routed["bucket"] == bucket_of("g", BUCKETS)]
        self.monkeypatch.setattr(model_state, "_now_ms", lambda: wall_ms)
        for out in self.update((bucket_of("g", BUCKETS),), iter([mine]), self.state):
            for kind, payload in zip(out["kind"], out["payload"], strict=True):
                if kind == "doc":
                    self.docs.append(json.loads(payload))
        return self.docs[-1] if self.docs else None


def causes(doc: dict) -> list[str]:
    return [g.get("cause") for g in doc["generations"]]


def test_a_slow_batch_does_not_expire_members_whose_heartbeats_are_in_transit(monkeypatch):
    live = Live(monkeypatch)
    p = [["t", 0], ["t", 1]]
    live.batch(T0 + 1000, [hb("m1", "join", T0), hb("m1", "assigned", T0 + 500, p), clock(T0 + 500)])
    # Each batch is planned at P (a clock record of P, heartbeats up to P - 1 s still being flushed by
    # the probe) but processed 9 s later, as Spark's first batches are: on the wall clock the member's
    # last delivered heartbeat would be 10 s old, past its 6 s session timeout.
    last = T0 + 500
    for planned in range(T0 + 5000, T0 + 40_000, 5000):
        beats = [hb("m1", "heartbeat", t) for t in range(last + 1000, planned - 999, 1000)]
        last = beats[-1]["ts"] if beats else last
        doc = live.batch(planned + 9000, [*beats, clock(planned)])
        assert doc is not None
        assert "session_timeout" not in causes(doc), (planned - T0, doc["generations"])
        assert [m["member_id"] for m in doc["members"]] == ["m1"]
        assert doc["as_of"] <= planned - 5000  # the watermark: latest delivered time minus the lateness


def test_a_member_that_stopped_heartbeating_expires_through_the_clock_records(monkeypatch):
    live = Live(monkeypatch)
    p = [["t", 0]]
    evs = [hb("m1", "join", T0), hb("m1", "assigned", T0 + 300, p)]
    evs += [hb("m1", "heartbeat", t) for t in range(T0 + 1000, T0 + 10_001, 1000)]
    live.batch(T0 + 10_500, [*evs, clock(T0 + 10_000)])
    # the member is killed after its heartbeat at T0+10 s; only the Admin poller's clock goes on
    expired_at = None
    for t in range(T0 + 15_000, T0 + 40_000, 5000):
        doc = live.batch(t + 200, [clock(t)])
        if doc is not None and not doc["members"] and expired_at is None:
            expired_at = t
    assert expired_at is not None, live.docs[-1]
    # session timeout (6 s) after the last heartbeat, seen once the watermark (clock - 5 s) passes it
    assert T0 + 10_000 + 6000 + 5000 <= expired_at <= T0 + 10_000 + 6000 + 5000 + 5000
    assert "session_timeout" in causes(live.docs[-1]), live.docs[-1]["generations"]


def test_evidence_that_crossed_in_transit_is_applied_in_event_time_order(monkeypatch):
    """The leave of m1 is delivered one batch after a later join of m2: held until the watermark
    passes both, the model sees them in the order they happened (as `groupscope model` would)."""
    p = [["t", 0]]
    first = [hb("m1", "join", T0), hb("m1", "assigned", T0 + 100, p), clock(T0 + 200)]
    in_order, crossed = Live(monkeypatch), Live(monkeypatch)
    later = [hb("m1", "leave", T0 + 2000), hb("m2", "join", T0 + 2500)]
    in_order.batch(T0 + 300, first)
    crossed.batch(T0 + 300, first)
    in_order.batch(T0 + 3000, [*later, clock(T0 + 3000)])
    crossed.batch(T0 + 3000, [later[1], clock(T0 + 3000)])
    crossed.batch(T0 + 3500, [later[0]])
    for lv in (in_order, crossed):
        lv.batch(T0 + 10_500, [clock(T0 + 10_000)])
    assert crossed.docs[-1]["generations"] == in_order.docs[-1]["generations"]
    assert crossed.docs[-1]["timeline"] == in_order.docs[-1]["timeline"]


def commit(topic: str, partition: int, offset: int, ts: int) -> dict[str, Any]:
    key = encode_key(r.OffsetCommitKey("g", topic, partition))
    value = encode_value(r.OFFSET_COMMIT, r.OffsetCommitValue(offset=offset, commit_timestamp=ts))
    return {"topic": "offsets", "key": key, "ts": ts, "value": value}


def test_a_commit_shows_at_once_while_the_model_waits_for_the_watermark(monkeypatch):
    """Lag must not wait for the lateness: a commit's offset is in the very next document, while the
    state it implies (a group with commits only is Empty) waits until the watermark passes it."""
    live = Live(monkeypatch)
    p = [["t", 0]]
    live.batch(T0 + 300, [hb("m1", "join", T0), hb("m1", "assigned", T0 + 100, p), clock(T0 + 200)])
    before = live.batch(T0 + 6000, [clock(T0 + 5500)])
    doc = live.batch(T0 + 6500, [commit("t", 0, 42, T0 + 6000)])
    assert doc is not None and [o["offset"] for o in doc["offsets"]] == [42]
    assert doc["timeline"] == before["timeline"]  # the model itself has not reached the commit yet
    doc = live.batch(T0 + 7500, [commit("t", 0, 43, T0 + 7000)])
    assert [o["offset"] for o in doc["offsets"]] == [43]
    # a brand-new group's first commit shows too (without a state of its own yet)
    other = Live(monkeypatch)
    doc = other.batch(T0 + 1500, [commit("t", 0, 7, T0 + 1000)])
    assert doc is not None and [o["offset"] for o in doc["offsets"]] == [7]
    for t in range(T0 + 5000, T0 + 15_000, 5000):
        doc = other.batch(t + 200, [clock(t)])
    assert doc["state"] == "Empty" and [o["offset"] for o in doc["offsets"]] == [7]


def test_a_groups_last_change_shows_through_the_clock_alone_and_an_idle_group_is_left_alone(monkeypatch):
    """The tail of the evidence: a group's final leave, then silence on every source but the Admin
    poller's clock. The leave is held behind the watermark, then released by the clock records
    alone (the group is woken when its held row is due), so the group's last change reaches the
    document within lateness + one poll. Once nothing is due (no timer, no held row, no lag), a
    clock record re-models nothing: no new document, and the bucket's state is not rewritten."""
    live = Live(monkeypatch)
    p = [["t", 0]]
    live.batch(T0 + 300, [hb("m1", "join", T0), hb("m1", "assigned", T0 + 100, p), clock(T0 + 200)])
    leave = T0 + 3000
    live.batch(leave + 200, [hb("m1", "leave", leave)])
    shown_at = None
    for t in range(T0 + 5000, T0 + 30_000, 5000):
        doc = live.batch(t + 200, [clock(t)])
        if shown_at is None and doc is not None and not doc["members"]:
            shown_at = t
    assert shown_at is not None, live.docs[-1]
    assert shown_at <= leave + 5000 + 5000  # lateness (5 s) + one clock interval
    assert live.docs[-1]["state"] == "Empty"
    assert causes(live.docs[-1]) == ["group_created", "member_left"]
    assert live.docs[-1]["timeline"][-1]["start"] == leave
    # nothing due any more: later clock records produce no document and leave the state as it was
    docs, saved = len(live.docs), live.state.value
    for t in range(T0 + 30_000, T0 + 50_000, 5000):
        live.batch(t + 200, [clock(t)])
    assert len(live.docs) == docs
    assert live.state.value is saved


def test_an_unchanged_resend_only_marks_the_group_refreshed(monkeypatch):
    """The Admin poller marks an answer it sends again unchanged (`"resend": true`): the first stage
    sends it to the refresh bucket, which keeps no state, and the model stage only says "refresh"; the
    group's own bucket (its state, its engines) is not touched."""
    live = Live(monkeypatch)
    p = [["t", 0]]
    live.batch(T0 + 300, [hb("m1", "join", T0), hb("m1", "assigned", T0 + 100, p), clock(T0 + 200)])
    line = {"ts": T0 + 31_000, "group": "g", "end_offsets": [["t", 0, 5]], "resend": True}
    raw = pd.DataFrame(
        {
            "topic": ["admin"],
            "partition": [0],
            "offset": [99],
            "timestamp": [T0 + 31_000],
            "key": [b"g"],
            "value": [json.dumps(line).encode()],
        }
    )
    routed = pd.concat(list(decode_batches(iter([raw]), KINDS, BUCKETS)))
    assert list(routed["bucket"]) == [REFRESH_BUCKET] and list(routed["group"]) == ["g"]
    assert routed["value"].isna().all()  # its bytes are not carried on
    docs, saved = len(live.docs), live.state.value
    rec = {"topic": "admin", "key": b"g", "ts": T0 + 31_000, "value": raw["value"][0]}
    live.batch(T0 + 31_500, [rec])
    assert len(live.docs) == docs and live.state.value is saved  # its own bucket saw nothing
    state = BucketState()
    monkeypatch.setattr(model_state, "_now_ms", lambda: T0 + 31_500)
    outs = list(live.update((REFRESH_BUCKET,), iter([routed]), state))
    assert [list(o["kind"]) for o in outs] == [["refresh"]]
    assert list(outs[0]["group"]) == ["g"] and list(outs[0]["refreshed"]) == [T0 + 31_500]
    assert not state.exists  # the refresh bucket keeps no state


def test_a_bucket_times_out_when_its_first_group_is_due(monkeypatch):
    """The bucket's processing-time timeout is set for when its first group is next due (at least a
    tick, at most IDLE_REFRESH_MS): Spark ships a timed-out bucket's whole state to Python, and a
    timeout of one tick shipped the whole fleet's state every 5 s."""
    live = Live(monkeypatch)
    p = [["t", 0]]
    # a member with a 6 s session: its expiry is due soon, so the bucket wakes at the next tick
    live.batch(T0 + 300, [hb("m1", "join", T0), hb("m1", "assigned", T0 + 100, p), clock(T0 + 200)])
    assert live.state.timeout_ms == 5000
    live.batch(T0 + 3200, [hb("m1", "leave", T0 + 3000)])
    for t in range(T0 + 5000, T0 + 30_000, 5000):
        live.batch(t + 200, [clock(t)])
    assert live.docs[-1]["state"] == "Empty"
    # nothing due but the idle refresh: the timeout waits for it
    (first,) = (v.wake_at for v in pickle.loads(live.state.value[0])[0].values())
    assert live.state.timeout_ms == min(first + 5000 - (T0 + 25_200), model_state.IDLE_REFRESH_MS)
    assert live.state.timeout_ms > 5000


class _Timer:
    """GroupState's timeout as Spark keeps it: an absolute time, from the batch's processing time."""

    def __init__(self, batch_ms: int, old: int, timed_out: bool = False) -> None:
        self.batch_ms, self.oldTimeoutTimestamp, self.hasTimedOut = batch_ms, old, timed_out
        self.timeout_at: int | None = None

    def getCurrentProcessingTimeMs(self) -> int:  # Spark's name
        return self.batch_ms

    def setTimeoutDuration(self, ms: int) -> None:  # Spark's name
        assert ms > 0
        self.timeout_at = self.batch_ms + ms


def test_a_timeout_still_ahead_and_sooner_is_kept():
    """Spark rewrites a bucket's state when its timeout moves: a timeout still ahead that comes no
    later than the new one is kept as it is; a later, a past or a fired one is replaced."""
    keep = _Timer(100_000, 103_000)
    model_state._set_timeout(keep, 100_000, 5000)
    assert keep.timeout_at == 103_000
    later = _Timer(100_000, 110_000)
    model_state._set_timeout(later, 100_000, 5000)
    assert later.timeout_at == 105_000
    for past in (_Timer(100_000, 99_000), _Timer(100_000, 100_000), _Timer(100_000, 103_000, True)):
        model_state._set_timeout(past, 100_000, 5000)
        assert past.timeout_at == 105_000
