"""The demo's scenarios (a real `groupscope demo` run on Apache Kafka, tests/fixtures/kafka-demo) through
the coordinator model into Redis, judged by the evaluator as the run unfolds: each scenario raises
exactly the alert it should, and the others raise none.

A stored capture rather than the live run of tests/test_demo.py: the evaluator is judged at fixed
moments of the scenarios' script, on the evidence a collector had (`__consumer_offsets`, the
coordinator's log, the probes' events, the Admin API), the same every time.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from collectors.alerts.evaluate import Evaluator
from collectors.capture import read_capture
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import parse_alert_config
from coordinator_model.rebuild import rebuild

pytestmark = pytest.mark.servers

# The fixture's first scenario cycle: the demo loops its scenarios, and from ~105 s on the same
# clients start again (a second crash of the same client id is then rightly a flapping member).
FIRST_CYCLE_MS = 100_000


def test_demo_scenarios_raise_exactly_their_alerts(redis_client) -> None:
    cap = read_capture(FIXTURES / "kafka-demo")
    assert cap.errors == [] and len(cap.files) == 5, (cap.errors[:5], cap.files)
    lo = min(e.ts for e in cap.evidence)
    store = RedisStore(redis_client)
    evaluator = Evaluator(redis_client, parse_alert_config(None))
    alerts = AlertStore(redis_client)
    seen: dict[int, list[tuple[str, str]]] = {}
    for at in range(lo, lo + FIRST_CYCLE_MS + 1, 10_000):
        docs = [eng.document_json(at) for eng in rebuild(cap.evidence, at_ms=at).values()]
        store.write_groups(docs, at)
        evaluator.run_cycle(at_ms=at)
        seen[at - lo] = sorted((a["group"], a["rule"]) for a in alerts.active())
    assert seen[0] == [] and seen[10_000] == []  # groups forming: no alarm
    assert seen[FIRST_CYCLE_MS] == [
        ("demo-crash", "member_lost"),
        ("demo-stall", "member_lost"),
        ("demo-static", "member_lost"),
        ("demo-storm", "rebalance_storm"),
    ]
    # joins, leaves, a cooperative join in two rounds, a KIP-848 subscription change, a growing lag
    # (under a minute): nothing to alert on
    quiet = {"demo-steady", "demo-slow", "demo-scaleout", "demo-coop", "demo-kip848"}
    assert not any(g in quiet for active in seen.values() for g, _ in active), seen
    [crash] = alerts.history(group="demo-crash", rule="member_lost")
    assert crash["evidence"]["causes"] == {"session_timeout": 1}  # the SIGKILLed consumer
    [stall] = alerts.history(group="demo-stall", rule="member_lost")
    assert set(stall["evidence"]["causes"]) == {"poll_timeout"}  # the consumer that stopped polling
    # static: static-2, away longer than its session, expired; static-1's restart within its session
    # (a new member id, no rebalance) is not a lost member
    [static] = alerts.history(group="demo-static", rule="member_lost")
    assert static["evidence"]["causes"] == {"session_timeout": 1}, static["evidence"]
    assert all(m.startswith("demo-inst-2-") for m in static["evidence"]["members"]), static["evidence"]
    [storm] = alerts.history(group="demo-storm", rule="rebalance_storm")
    assert storm["evidence"]["rebalances"] >= 10  # a flapper every 3 s from 10 s to 70 s
