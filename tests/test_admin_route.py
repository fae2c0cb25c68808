"""The first stage routes an Admin poller line by its "group" and "ts" alone (route._admin_route),
without building its evidence. It must route every line exactly as the full decoder would (same
group, time and rank), and leave every line it cannot read that way to the decoder, which routes it
or sets it aside with the decoder's own error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.pipeline import route
from collectors.pipeline.route import _admin_route, decode_one

FIXTURES = Path(__file__).parent / "fixtures"


def full_route(value: bytes) -> list[tuple[str, int, int]] | Exception:
    """What route_one gave before the fast path: from the decoded evidence."""
    try:
        out: dict[str, tuple[str, int, int]] = {}
        for g, t, rank, _ in decode_one("admin", "groupscope.admin", 0, 0, 0, None, value):
            out.setdefault(g, (g, int(t), rank))
        return list(out.values())
    except Exception as e:
        return e


def check(value: bytes) -> None:
    fast = _admin_route(value)
    full = full_route(value)
    if fast is None:
        return  # left to the decoder: route_one takes the full path
    if isinstance(full, Exception):
        # routed, and the model stage's decoder sets it aside with this error
        assert not isinstance(fast, Exception)
        return
    assert fast == full, (value, fast, full)


def real_lines() -> list[bytes]:
    lines = []
    for f in sorted(FIXTURES.glob("*/*/describe.jsonl")) + sorted(FIXTURES.glob("*/describe.jsonl")):
        lines += [line.encode() for line in f.read_text().splitlines() if line.strip()]
    for f in sorted(FIXTURES.glob("*/*/end_offsets.jsonl")):
        by_group: dict[tuple[int, str], list] = {}
        for line in f.read_text().splitlines():
            o = json.loads(line)
            if o.get("group"):
                by_group.setdefault((o["ts"], o["group"]), []).append(
                    [o["topic"], o["partition"], o["end_offset"]]
                )
        lines += [
            json.dumps({"ts": ts, "group": g, "end_offsets": ends}).encode()
            for (ts, g), ends in by_group.items()
        ]
    return lines


def test_every_real_line_is_routed_as_the_decoder_routes_it():
    lines = real_lines()
    assert len(lines) > 500
    fast = 0
    for value in lines:
        check(value)
        fast += _admin_route(value) is not None
    assert fast == len(lines)  # every line the poller writes takes the fast path


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
groups = st.one_of(st.text(max_size=8), st.integers(), st.none())
stamps = st.one_of(st.integers(0, 2**53), st.floats(0, 1e13, allow_nan=False), st.text(max_size=3), st.none())
ends = st.one_of(
    st.lists(
        st.tuples(st.text(max_size=4), st.integers(-1, 9), st.integers(-1, 10**9)).map(list), max_size=4
    ),
    st.lists(json_values, max_size=3),
    json_values,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    group=groups,
    ts=stamps,
    shape=st.sampled_from(["describe", "ends", "end_offset", "committed", "denied", "clock", "none"]),
    body=json_values,
    members=st.one_of(st.lists(json_values, max_size=2), json_values),
    end_list=ends,
)
def test_any_line_is_routed_as_the_decoder_routes_it_or_left_to_it(
    group: Any, ts: Any, shape: str, body: Any, members: Any, end_list: Any
):
    obj: dict[str, Any] = {"ts": ts, "group": group}
    if shape == "describe":
        obj["members"] = members
    elif shape == "ends":
        obj["end_offsets"] = end_list
    elif shape == "end_offset":
        obj.update(topic="t", partition=0, end_offset=body)
    elif shape == "committed":
        obj["committed"] = end_list
    elif shape == "denied":
        obj.update(denied=body, error="x")
    elif shape == "clock":
        obj["clock"] = True
    check(json.dumps(obj).encode())


def test_route_one_takes_the_fast_path_for_admin_lines(monkeypatch):
    calls = []
    monkeypatch.setattr(route, "decode_one", lambda *a: calls.append(a) or [])
    line = json.dumps({"ts": 5, "group": "g", "end_offsets": [["t", 0, 9]] * 100}).encode()
    assert route.route_one("admin", "groupscope.admin", 0, 0, 0, None, line) == [
        ("g", 5, route.END_OFFSET_RANK)
    ]
    assert calls == []
