"""The Admin poller's change filter: an answer is sent on when it changed, or when its resend comes
round on its key's grid (between half and one and a half intervals after it was last sent, one
interval apart once aligned); keys of one phase come round together, different phases spread over
the interval; forgotten keys come back as new."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.pipeline.admin_changes import ChangeFilter


def test_same_answer_is_sent_once_until_it_changes_or_is_old() -> None:
    f = ChangeFilter(refresh_ms=60_000, phase_of=lambda _key: 45_000)
    assert f.due("g", {"state": "Stable"}, 0)
    assert not f.due("g", {"state": "Stable"}, 5_000)
    assert f.due("g", {"state": "PreparingRebalance"}, 10_000)  # changed: at once
    assert not f.due("g", {"state": "PreparingRebalance"}, 15_000)
    assert not f.due("g", {"state": "PreparingRebalance"}, 44_000)
    assert f.due("g", {"state": "PreparingRebalance"}, 45_000)  # its grid point, 35 s on: sent again
    assert not f.due("g", {"state": "PreparingRebalance"}, 100_000)
    assert f.due("g", {"state": "PreparingRebalance"}, 105_000)  # then one interval apart


def test_a_hot_key_is_sent_at_every_poll_for_a_while_after_it_changed() -> None:
    f = ChangeFilter(refresh_ms=60_000)
    assert f.due("g", "Stable", 0, hot_ms=20_000)
    assert f.due("g", "Empty", 100_000, hot_ms=20_000)  # changed
    assert all(f.due("g", "Empty", t, hot_ms=20_000) for t in range(105_000, 120_000, 5_000))
    assert not f.due("g", "Empty", 125_000, hot_ms=20_000)  # quiet for 25 s: back to the slow pace
    assert f.due("h", "Stable", 0, hot_ms=20_000)
    assert not f.due("h", "Stable", 5_000, hot_ms=20_000)  # first sight is news, not a change


def test_forgotten_keys_are_new_again() -> None:
    f = ChangeFilter()
    assert f.due(("g", "t", 0), 10, 0) and f.due(("g", "t", 1), 10, 0)
    f.forget({("g", "t", 0)})
    assert len(f) == 1
    assert not f.due(("g", "t", 0), 10, 1000)
    assert f.due(("g", "t", 1), 10, 1000)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3)), max_size=200))
def test_no_change_goes_unsent_and_nothing_waits_longer_than_the_refresh(steps) -> None:
    """Polls every second: each changed answer is sent at once, and an unchanged one is sent again
    within one and a half `refresh_ms` of its last send, never earlier than half of it."""
    f = ChangeFilter(refresh_ms=10_000)
    last_value: dict[int, int] = {}
    last_sent: dict[int, int] = {}
    for i, (key, value) in enumerate(steps):
        now = i * 1000
        sent = f.due(key, value, now)
        if last_value.get(key) != value:
            assert sent
        elif sent:
            assert now - last_sent[key] >= 5_000
        else:
            assert now - last_sent[key] < 15_000
        if sent:
            last_sent[key] = now
        last_value[key] = value


def test_resends_are_spread_over_the_interval() -> None:
    f = ChangeFilter(refresh_ms=60_000)
    keys = [f"group-{i}" for i in range(10_000)]
    for k in keys:
        f.due(k, "same", 0)
    per_poll = [sum(f.due(k, "same", t) for k in keys) for t in range(5_000, 95_000, 5_000)]
    assert sum(per_poll) == len(keys)  # each resent once, between 30 and 90 s on
    assert max(per_poll) < len(keys) / 3  # not all in the same poll


def test_keys_of_one_phase_come_round_together() -> None:
    """The poller gives each group's keys the phase of its state bucket: a poll's resends then reach
    a few buckets, not all of them, once the keys are aligned (one interval after they were sent)."""
    from collectors.pipeline.admin_changes import bucket_phase
    from collectors.pipeline.route import bucket_of

    f = ChangeFilter(refresh_ms=60_000, phase_of=bucket_phase(256, 60_000))
    groups = [f"group-{i}" for i in range(5_000)]
    for t in range(0, 60_000, 5_000):  # first sight spread over a minute
        for g in groups[t // 5_000 :: 12]:
            f.due(("describe", g), "same", t)
            f.due(("ends", g), "same", t)
    for t in range(60_000, 180_000, 5_000):
        due = [g for g in groups if f.due(("describe", g), "same", t)]
        ends = [g for g in groups if f.due(("ends", g), "same", t)]
        assert due == ends  # a group's keys together
        if t >= 120_000:  # aligned: about 256 / 12 buckets a poll
            assert len({bucket_of(g, 256) for g in due}) <= 256 // 12 + 2


def test_the_poller_describes_what_changes_and_the_rest_once_per_resend_interval() -> None:
    """ListGroups gives every group's state in one request per broker: a steady group (Stable,
    Empty) is described when first seen, when its listed state changes, while its last describe
    changed recently, and otherwise once per `admin_resend_s` (at its bucket's phase); the others at
    every poll."""
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    cfg = PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp", admin_resend_s=60.0)
    poller = AdminPoller(cfg, store=None)
    groups = [f"g{i}" for i in range(50)]
    listed = {g: "STABLE" for g in groups} | {"g0": "PREPARING_REBALANCING", "g1": "EMPTY"}
    t = 1_000_000
    assert poller._to_describe(groups, listed, t) == set(groups)  # first sight
    for g in groups:  # what describing them records
        poller._listed[g] = (listed[g], t, frozenset())
    assert poller._to_describe(groups, listed, t + 5000) == {"g0"}  # not steady
    listed["g2"] = "COMPLETING_REBALANCING"
    listed["g1"] = "STABLE"
    assert poller._to_describe(groups, listed, t + 10_000) == {"g0", "g1", "g2"}
    # a describe that changed stays hot for a while
    poller.changes.due(("describe", "g3"), {"v": 1}, t)
    poller.changes.due(("describe", "g3"), {"v": 2}, t + 5000)
    assert "g3" in poller._to_describe(groups, listed, t + 10_000)
    # within one and a half resend intervals every steady group is described again, each once
    seen: dict[str, int] = {}
    for step in range(1, 19):
        now = t + step * 5000
        for g in poller._to_describe(groups, listed, now):
            seen[g] = seen.get(g, 0) + 1
            poller._listed[g] = (listed[g], now, frozenset())
    assert set(seen) == set(groups)
    # (g1 and g3 changed during the interval: their resend counts from their last describe)
    assert {g: n for g, n in seen.items() if n != 1 and g not in ("g0", "g1", "g2", "g3")} == {}


def test_the_verdict_tells_a_resend_from_a_change() -> None:
    f = ChangeFilter(refresh_ms=60_000, phase_of=lambda _key: 10_000)
    assert f.verdict("g", {"v": 1}, 0) == "new"
    assert f.verdict("g", {"v": 1}, 5_000) is None
    assert f.verdict("g", {"v": 2}, 10_000, hot_ms=30_000) == "changed"
    assert f.verdict("g", {"v": 2}, 15_000, hot_ms=30_000) == "hot"
    assert f.verdict("g", {"v": 2}, 10_000 + 60_000) == "resend"


class _Lines:
    """A producer that keeps what the poller produced."""

    def __init__(self) -> None:
        self.lines: list[dict] = []

    def produce(self, topic: str, key: bytes, value: bytes, **_kw: object) -> None:
        import json

        self.lines.append(json.loads(value))

    def poll(self, _timeout: float) -> int:
        return 0


def _reference_denied(poller, wanted, refused, ts, send) -> None:
    """The denied lines of log-end offsets as the poller made them when it sent a line per group:
    every group's refusal judged by the change filter at every poll."""
    from collectors.pipeline.admin_lines import denied_line

    for g, tps in wanted.items():
        hidden = sorted({t for t, _ in tps if t in refused})
        if hidden:
            why = f"{refused[hidden[0]]} (topics: {', '.join(hidden)})"
            send(("denied", g, "end_offsets"), g, denied_line(ts, g, "end_offsets", why))
            poller._ends_refused.add(g)
        elif g in poller._ends_refused:
            send(("denied", g, "end_offsets"), g, denied_line(ts, g, "end_offsets", ""))
            poller._ends_refused.discard(g)


_tps = [(t, p) for t in ("a", "b") for p in range(3)]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1000, 70_000),  # time to the next poll
            st.dictionaries(st.sampled_from(["g1", "g2", "g3"]), st.sets(st.sampled_from(_tps)), max_size=3),
            st.dictionaries(st.sampled_from(_tps), st.integers(0, 3), max_size=6),  # log-end offsets
            st.dictionaries(st.sampled_from(["a", "b"]), st.just("denied"), max_size=1),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_log_ends_go_one_line_per_topic_and_a_reader_always_has_the_latest(polls) -> None:
    """The poller sends the cluster's log-end offsets one line per topic (group ""), whatever number
    of groups read it (`_send_ends`), through the change filter: over any polls, a topic's line holds
    exactly its partitions' offsets of that poll, a reader that merges every line it was sent has
    every offset of every poll, a topic that did not move is not sent again before its resend, and
    the groups' denied lines are the very ones the poller sent when it sent a line per group."""
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig
    from collectors.pipeline.wanted_ends import Wanted

    cfg = PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp", admin_resend_s=60.0)
    poller, reference = AdminPoller(cfg, store=None), AdminPoller(cfg, store=None)
    ts = 1_000_000
    merged: dict[tuple[str, int], int] = {}
    before: dict[str, list] = {}
    for step, wanted, ends, refused in polls:
        ts += step
        denied = []
        for p, is_reference in ((poller, False), (reference, True)):
            out, polled = _Lines(), set()

            def send(key, group, line, hot_ms=0, p=p, out=out, polled=polled, ts=ts) -> None:
                polled.add(key)
                p._send(out, key, group, line, ts, hot_ms)

            mine = {g: set(tps) for g, tps in wanted.items()}
            if is_reference:
                _reference_denied(p, mine, refused, ts, send)
            else:
                kept = Wanted()
                for g, tps in mine.items():
                    kept.add(g, tps)
                p._send_ends(kept, dict(ends), refused, ts, send)
            p.changes.forget(polled)
            denied.append([x for x in out.lines if "denied" in x])
            if not is_reference:
                lines = [x for x in out.lines if "end_offsets" in x]
        assert denied[0] == denied[1]
        topics = [x["end_offsets"][0][0] for x in lines]
        assert len(topics) == len(set(topics))
        now = {t: sorted([tp[0], tp[1], off] for tp, off in ends.items() if tp[0] == t) for t, _ in ends}
        for x in lines:
            assert x["group"] == "" and x["end_offsets"] == now[x["end_offsets"][0][0]]
            merged.update(((t, p), off) for t, p, off in x["end_offsets"])
        assert all(merged[tp] == off for tp, off in ends.items())
        unmoved = {t for t, rows in now.items() if before.get(t) == rows}
        assert all(x.get("resend") for x in lines if x["end_offsets"][0][0] in unmoved)
        before = now
