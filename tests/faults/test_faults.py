"""Issue 32, "Show": hostile input, a lost Redis, a full one, a refused write, a stopped and a killed
broker and a killed collector, one after another under ONE running `groupscope collect --all-clusters`
(conftest.py's bench: the session's broker and one of the suite's own, a redis-server of the suite's
own, fleets that keep committing). After each fault `Bench.agrees` holds Redis to the brokers: the
collector still runs, every group's committed offsets are the broker's, its lag is ListOffsets'
log end minus that offset (the fleet lags: each round produces before it commits), each generation
the coordinator wrote is a row once, no commit slot is doubled and no group the broker does not know
appeared. The collector SIGKILLed mid-batch (commits applied to Redis before Spark commits the
batch, read again on restart) is one of these faults; it was a test of its own before
(test_collector_killed.py), which started a collector of its own for it.

The tests run in file order and each leaves the bench as it found it (Redis up and roomy, no DENY
ACL, both brokers and the collector running). Only the suite's own broker is stopped and killed: the
session's serves the other tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka import Producer
from conftest import SASL_USERS

from collectors.storage.redis_store import RedisStore

from .conftest import (
    ADMIN_POLL_S,
    OWN,
    REDIS_PASSWORD,
    USER,
    Bench,
    Collector,
    Committer,
    PasswordRedis,
    described,
    shown_offsets,
    wait_until,
)

pytestmark = [pytest.mark.servers, pytest.mark.slow]

TS = int(time.time() * 1000)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]]) -> list[str]:
    """Write the records; their positions ("topic/partition@offset", as dead letters name them)."""
    positions: list[str] = []
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            positions.append(f"{msg.topic()}/{msg.partition()}@{msg.offset()}")

    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 2_000_000})
    for key, value in records:
        p.produce(topic, key=key, value=value, on_delivery=delivered)
    assert p.flush(30) == 0 and not errors, errors
    return positions


def hostile_json(u: str, group: str) -> list[bytes]:
    """The issue's hostile records, each a dead letter on any JSON source: an integer past 64 bits,
    bytes that are no JSON (nor UTF-8), a JSON array, a forged join whose session timeout is 2**62, and
    a huge string (600 KB of digits where the time goes)."""
    return [
        json.dumps({"ts": 10**20, "group": group, "event": "heartbeat"}).encode(),
        b"\xff\xfe\x00 not json {" + u.encode(),
        json.dumps([TS, group, "heartbeat", u]).encode(),
        json.dumps(
            {
                "ts": TS,
                "group": group,
                "event": "join",
                "member_id": f"forged-{u}",
                "session_timeout_ms": 2**62,
            },
        ).encode(),
        json.dumps({"ts": "9" * 600_000, "group": group, "event": "heartbeat"}).encode(),
    ]


def dead_positions(store: RedisStore) -> set[str]:
    return {d["position"] for d in store.dead_letters(10_000)}


# ---------------------------------------------------------------------------------------------
def test_the_collector_starts_and_shows_every_group_as_the_broker_has_it(bench: Bench) -> None:
    took = bench.agrees(240, "every group in Redis as the broker has it, after the start")
    bench.timings["start"] = took
    assert bench.committer is not None and bench.committer.rounds > 0


def test_hostile_records_on_every_source_topic_are_counted_dead_letters(bench: Bench) -> None:
    """On the heartbeat topic, the Admin poller's topic and the broker-log topic: each record of the
    issue becomes one dead letter (its position), the collector runs on, and a second member joins
    the probed group meanwhile (a new generation the collector must show once). Besides the dead
    letters: a forged `leave` of a real member and a heartbeat with a member id of 600 KB change no
    group's members or generations, and a join or a heartbeat of a group the broker does not have
    (one named in 500 KB) makes no group. A coordinator log line saying generation 10**20 is a dead letter
    too: before, the model filled in every generation up to it, and the collector's model worker
    grew past 15 GB (coordinator_model/broker_log.py, classic/rebalances.py)."""
    u, fleet0 = bench.u, bench.fleet[0]
    bench.add_member("c2")
    bench.stable_with(2)
    expected_dead: list[str] = []
    for topic in (bench.hb_topic, "groupscope.admin"):
        records = [(fleet0.encode(), v) for v in hostile_json(u, fleet0)]
        expected_dead += produce(bench.bootstrap, topic, records)
    expected_dead += produce(bench.bootstrap, bench.log_topic, [(None, b"\xff\xfe\xfd " + u.encode())])
    _, members = described(bench.admin, bench.live_group)
    real = sorted(members)[0]
    produce(
        bench.bootstrap,
        bench.hb_topic,
        [
            (
                bench.live_group.encode(),
                json.dumps(
                    {"ts": TS, "group": bench.live_group, "event": "leave", "member_id": real}
                ).encode(),
            ),
            (
                bench.live_group.encode(),
                json.dumps(
                    {"ts": TS, "group": bench.live_group, "event": "heartbeat", "member_id": "m" * 600_000}
                ).encode(),
            ),
            # well-formed events of groups the broker does not have: never shown (the trust model)
            *(
                (
                    g.encode()[:100],
                    json.dumps({"ts": TS, "group": g, "event": ev, "member_id": "f", **kw}).encode(),
                )
                for g, ev, kw in (
                    (f"faults-{u}-phantom", "join", {"session_timeout_ms": 30_000}),
                    (f"faults-{u}-" + "g" * 500_000, "heartbeat", {}),
                )
            ),
        ],
    )
    line = (
        "[2026-12-07 10:00:00,000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=7] "
        f"Stabilized group {bench.live_group} generation {10**20} with 1 members. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    expected_dead += produce(bench.bootstrap, bench.log_topic, [(None, line.encode())])

    def all_dead() -> Any:
        missing = sorted(set(expected_dead) - dead_positions(bench.store))
        return True if not missing else f"not (yet) dead letters: {missing}"

    wait_until(all_dead, 150, "every hostile record a dead letter")
    assert len(expected_dead) == 12
    counted = [d["position"] for d in bench.store.dead_letters(10_000)]
    assert all(counted.count(p) == 1 for p in expected_dead), "a dead letter counted twice"
    bench.timings["hostile"] = bench.agrees(90, "Redis as the broker has it, after the hostile records")
    # a dead letter keeps a bounded prefix of its record, not 600 KB
    big = [d for d in bench.store.dead_letters(10_000) if d.get("value_bytes", 0) > 500_000]
    assert len(big) == 2 and all(len(d["value"]) < 8000 for d in big)


def test_redis_flushed_under_the_collector_gets_every_group_back(bench: Bench) -> None:
    """FLUSHALL while the collector runs and the fleet commits: every group is back within one Admin
    poll interval and a margin, with its history."""
    bench.store.r.flushall()
    t0 = time.monotonic()

    def all_back() -> Any:
        missing = [g for g, o in shown_offsets(bench.store, bench.groups).items() if o is None]
        missing += [g for g, o in shown_offsets(bench.own_store, bench.own_fleet).items() if o is None]
        return True if not missing else f"{len(missing)} groups not back: {missing[:3]}"

    wait_until(all_back, ADMIN_POLL_S + 30, "every group back after FLUSHALL", every=0.2)
    bench.timings["flush: all back"] = time.monotonic() - t0
    bench.timings["flush"] = bench.agrees(60, "Redis as the broker has it, after FLUSHALL")


def test_redis_restarted_with_its_data_gone_the_collector_retries_and_recovers(bench: Bench) -> None:
    """redis-server stopped and started again on the same port, empty, while the fleet commits; the
    CLI asked while it is down says so without the password."""
    assert bench.redis is not None
    port = bench.redis.port
    bench.redis.stop()
    time.sleep(3)  # batches meet a dead Redis: the sink retries
    down = bench.cli("groups while Redis is down", "groups")
    assert down.returncode != 0 and "Redis" in down.stdout + down.stderr
    bench.cli("group while Redis is down", "group", bench.fleet[0])
    assert bench.collector is not None and bench.collector.running
    bench.redis = PasswordRedis(port=port).start()
    bench.timings["restart"] = bench.agrees(90, "Redis as the broker has it, after a restart")
    shown = bench.cli("groups after the restart", "groups")
    assert shown.returncode == 0 and bench.fleet[0] in shown.stdout


def test_a_full_redis_is_an_outage_and_nothing_is_lost_once_there_is_room(bench: Bench) -> None:
    """maxmemory just above what is used (noeviction): the collector does not exit, the outage shows
    (RedisStore.memory_full, which the dashboard's health reads, and the collector's log), and once
    maxmemory is lifted every commit made meanwhile reaches Redis."""
    r = bench.store.r
    r.config_set("maxmemory-policy", "noeviction")
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory", used + 64 * 1024)
    log_before = bench.log.stat().st_size
    assert bench.committer is not None
    before = bench.committer.offset

    filled = iter(range(10_000))

    def refused() -> Any:
        try:
            r.set(f"faults:fill:{next(filled)}", b"x" * 20_000)
        except redis.exceptions.OutOfMemoryError:
            return True
        return "still writable"

    wait_until(refused, 60, "Redis full")
    wait_until(lambda: bench.store.memory_full() is not None or "not full", 30, "memory_full says so")
    wait_until(lambda: bench.committer.offset >= before + 10 or "few commits", 60, "commits while full")
    time.sleep(2)
    assert bench.collector is not None and bench.collector.running
    full_out = bench.cli("groups while Redis is full", "groups")
    from dashboard.data import DashboardData

    assert bench.redis is not None
    health = DashboardData(bench.redis.url).healths("default")[0]
    assert health.reachable and health.redis_full, health  # what the pages' banner says
    said = bench.log.read_bytes()[log_before:].decode(errors="replace")
    assert "Redis is full (maxmemory)" in said, said[-3000:]
    stale = shown_offsets(bench.store, bench.fleet[:1])[bench.fleet[0]]
    assert stale is not None and max(stale.values()) < bench.committer.offset  # nothing written
    r.config_set("maxmemory", 0)
    bench.timings["full"] = bench.agrees(90, "Redis as the broker has it, once maxmemory is lifted")
    assert full_out.returncode == 0, full_out.stdout + full_out.stderr


def _admin_deny() -> tuple[Any, ...]:
    """A DENY of Write on groupscope.admin to the collector's principal, as (restype, name, pattern,
    principal, host, operation, permission): an AclBinding's and its AclBindingFilter's fields."""
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return (
        ResourceType.TOPIC,
        "groupscope.admin",
        ResourcePatternType.LITERAL,
        f"User:{USER}",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )


def test_the_admin_topics_writes_refused_by_an_acl_are_shown_and_sent_again(bench: Bench) -> None:
    """The session's broker enforces ACLs (StandardAuthorizer) and the collector is the SASL user
    `groupscope`: a DENY of Write on `groupscope.admin` for it makes every Admin poller line a refused
    delivery. The "admin" source status says so; the collector runs on; once the DENY is deleted the
    lines go through and Redis agrees with the broker (a member joined meanwhile)."""
    from confluent_kafka.admin import AclBinding, AclBindingFilter

    deny = _admin_deny()
    for f in bench.admin.create_acls([AclBinding(*deny)], request_timeout=15).values():
        f.result(15)
    try:

        def shown_refused() -> Any:
            st = bench.store.freshness()["sources"].get("admin") or {}
            return True if st.get("ok") is False and "AUTHORIZATION" in st.get("detail", "") else st

        wait_until(shown_refused, 60, "the admin source shows the refused writes")
        bench.add_member("c3")
        bench.stable_with(3)
        time.sleep(2)
        assert bench.collector is not None and bench.collector.running
    finally:
        for f in bench.admin.delete_acls([AclBindingFilter(*deny)], request_timeout=15).values():
            f.result(15)
    wait_until(
        lambda: (bench.store.freshness()["sources"].get("admin") or {}).get("ok") is True or "refused",
        60,
        "the admin source well again",
    )
    bench.timings["acl"] = bench.agrees(90, "Redis as the broker has it, after the DENY is lifted")


def _broker_fault(bench: Bench, how: str) -> None:
    own, committer = bench.own_broker, bench.own_committer
    assert own is not None and own.proc is not None and committer is not None
    before = committer.offset
    # Its fleet's committer stops before the broker goes, and a new one starts once it is back: the
    # test's own librdkafka clients must never meet the broker down, or the same abort takes the
    # test process down (seen twice: once paused, its admin client's first request after the
    # restart aborted the whole pytest run)
    committer.stop()
    try:
        if how == "stopped":
            own.stop()  # its workdir is the bench's: kept
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(own.proc.pid, signal.SIGKILL)
            own.proc.wait(10)
        bench.agrees(60, f"the session's cluster as its broker has it, the other broker {how}", own=False)

        def shown_down() -> Any:
            st = bench.own_store.freshness()["sources"].get("admin") or {}
            return True if st.get("ok") is False else st

        wait_until(shown_down, 30, f"the {OWN} cluster's admin source down, its broker {how}")
        watched = bench.own_fleet[0]
        f0 = bench.own_store.freshness([watched])
        t0 = time.monotonic()
        # the collector meets a dead broker a while, alive and saying so (its heartbeat goes on, as
        # often as its wait for the cluster lets it: one look at the cluster takes up to its timeout)
        wait_until(
            lambda: bench.own_store.freshness()["collector"]["ts"] > f0["collector"]["ts"] or "no heartbeat",
            30,
            f"the collector's heartbeat for the {OWN} cluster, its broker {how}",
        )
        bench.timings[f"heartbeat, broker {how}"] = time.monotonic() - t0
        time.sleep(max(0.0, 3 - (time.monotonic() - t0)))
        assert bench.collector is not None and bench.collector.running, f"the collector exited ({how})"
        f = bench.own_store.freshness([watched])
        # while the group's data is as old as it is, and the sources say why
        refreshed = f0["groups"][watched]
        assert refreshed is not None and f["groups"][watched] == refreshed
        # (or that librdkafka aborted the poller's process on the dead broker: started again)
        said = f["sources"]["admin"]
        why = said["detail"]
        assert said["ok"] is False and ("unreachable" in why or "process ended" in why), said
    finally:
        if not own.running:
            own.start()
        bench.own_committer = committer = Committer(
            own.bootstrap_servers, committer.topic, committer.groups, committer.offset
        ).start()
    wait_until(lambda: committer.offset > before + 3 or "no commits yet", 90, "commits again")
    bench.timings[f"broker {how}"] = bench.agrees(180, f"both clusters as their brokers have them, {how}")
    assert bench.own_store.freshness([watched])["groups"][watched] > refreshed  # refreshed again


@pytest.mark.parametrize("how", ["stopped", "killed"])
def test_the_brokers_stop_and_kill_the_collector_waits_and_shows_every_commit(bench: Bench, how: str) -> None:
    """The suite's own broker (cluster `own`) stopped gracefully (SIGTERM: a controlled shutdown), or
    SIGKILLed, then started again on its data: meanwhile the collector runs on and the session's
    cluster is not held up (a commit made there shows); once it is back, every commit it took shows.

    librdkafka 2.16 can abort a process whose admin client asks a broker that went away
    (confluentinc/librdkafka#4605): the collector's Admin poller runs in a child process that is
    started again when that happens (collectors/pipeline/admin_process.py), so the collector runs on
    whether or not it happened here."""
    _broker_fault(bench, how)


def test_the_collector_sigkilled_mid_batch_and_restarted_loses_and_doubles_nothing(bench: Bench) -> None:
    """SIGKILL to the collector's process group while the fleet commits (commits are applied to
    Redis before Spark commits the batch: the restart reads some again), a member leaves while it is
    down, then it starts again on the same checkpoint."""
    assert bench.collector is not None and bench.committer is not None
    time.sleep(4)  # the collector busy with the fleet's commits
    bench.collector.kill()
    bench.members[-1].close()  # a generation the collector must find on its return
    time.sleep(3)
    bench.collector = Collector(bench.env(), bench.log)
    bench.stable_with(2)
    bench.timings["killed"] = bench.agrees(240, "Redis as the broker has it, after the kill")


def test_no_secret_in_anything_the_suite_captured(bench: Bench, artifacts_dir: Path) -> None:
    """The Redis password and the collector's SASL password in no output: the collector's log (every
    fault above went through it) and each CLI output, down and full included."""
    assert {"groups while Redis is down", "groups while Redis is full"} <= set(bench.outputs)
    texts = {"collector log": bench.log.read_text(errors="replace"), **bench.outputs}
    for m in bench.members:
        texts[str(m.log)] = m.log.read_text(errors="replace")
    for where, text in texts.items():
        assert REDIS_PASSWORD not in text, f"the Redis password in {where}"
        assert SASL_USERS[USER] not in text, f"the SASL password in {where}"
    # the password is in the URL every command above was given: not by chance absent
    assert bench.redis is not None and REDIS_PASSWORD in bench.redis.url
    timings = {k: round(v, 1) for k, v in bench.timings.items()}
    print("fault timings (s):", timings)
    # how long each recovery took, kept with the run's other artifacts (test-artifacts/, not committed)
    (artifacts_dir / "fault-timings.json").write_text(json.dumps(timings, indent=1))
