"""Property test of the alert lifecycle on the real Redis: random sequences of collector writes and
evaluation cycles keep the invariants (one alert per group and rule while it fires, history
consistent with the active set, a repeated cycle changes nothing)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_alert_docs import MIN, T0, S, doc, gen, mid, part, steady_doc, storm_doc

from collectors.alerts.evaluate import Evaluator
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config

pytestmark = pytest.mark.servers

GROUPS = ["a", "b", "c"]


def _variant(kind: str, group: str, t: int) -> dict:
    if kind == "storm":
        return storm_doc(group, flaps=4, t0=t - 30 * S)[0]
    if kind == "lagging":
        return steady_doc(group, t0=T0 - 60 * MIN, lag=[part("t", 0, 4000, 200.0, "ERR")])
    if kind == "lost":
        m = mid("x")
        gens = [
            gen(1, T0 - 60 * MIN, "group_created", [mid("y"), m]),
            gen(2, t - 5 * S, "session_timeout", left=[m]),
        ]
        return doc(group, gens, [("Stable", T0 - 60 * MIN, None)])
    if kind == "empty":
        tl = [("Stable", T0 - 60 * MIN, t - 2 * MIN), ("Empty", t - 2 * MIN, None)]
        return doc(
            group,
            [gen(1, T0 - 60 * MIN, "group_created", [mid("z")])],
            tl,
            [part("t", 0, 50, 90.0, "STOP")],
            "Empty",
        )
    return steady_doc(group, t0=T0 - 60 * MIN, lag=[part("t", 0, 3, 1.0, "OK")])


steps = st.lists(
    st.tuples(
        st.integers(0, 4 * 60),  # seconds since the previous step
        st.one_of(
            st.tuples(
                st.just("write"),
                st.sampled_from(GROUPS),
                st.sampled_from(["storm", "lagging", "lost", "empty", "steady"]),
            ),
            st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.just("")),
            st.tuples(st.just("cycle"), st.just(""), st.just("")),
        ),
    ),
    min_size=1,
    max_size=14,
)


def _snapshot(client) -> dict:
    a = AlertStore(client)
    return {k: client.hgetall(a.key_of(k)) for k in ("active", "log")} | {
        "history": client.zrange(a.key_of("history"), 0, -1)
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps)
def test_lifecycle_invariants(redis_client, program) -> None:
    redis_client.flushdb()
    store = RedisStore(redis_client)
    alerts = AlertStore(redis_client)
    ev = Evaluator(redis_client, parse_alert_config(None))
    t = T0
    for dt, (op, group, kind) in program:
        t += dt * S
        if op == "write":
            store.write_group(_variant(kind, group, t), t)
        elif op == "delete":
            store.delete_group(group)
        else:
            first = ev.run_cycle(now_ms=t)
            event(f"fired {min(first.fired, 2)} resolved {min(first.resolved, 2)}")
            before = _snapshot(redis_client)
            again = ev.run_cycle(now_ms=t, full=True)
            assert (again.fired, again.resolved) == (0, 0)
            assert _snapshot(redis_client)["history"] == before["history"]
            active = alerts.active()
            keys = [(x["group"], x["rule"]) for x in active]
            assert len(keys) == len(set(keys))  # one alert per (group, rule) while it fires
            history = alerts.history(limit=10_000)
            assert {x["id"] for x in active} == {x["id"] for x in history if x["state"] == "firing"}
            for x in history:
                assert x["since"] <= t
                assert (x["state"] == "resolved") == (x["until"] is not None)
                if x["until"] is not None:
                    assert x["until"] >= x["since"]
            # every firing alert belongs to a group the collector still has
            assert {x["group"] for x in active} <= {
                g.decode() for g in redis_client.hkeys(store.key_of("refreshed"))
            }
