"""KIP-932 share groups: real ShareConsumers on the harness's broker (tests/share_scenario.py), the
group rebuilt from what the coordinator wrote to __consumer_offsets, and the coordinator's own log as
the judge: its type and states, every group epoch with its cause, the members and what each holds;
the same records through the pipeline's Spark job into Redis, shown by `groupscope group`; and a
capture kept as a fixture (tests/fixtures/kafka-share), rebuilt offline."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from share_scenario import PARTITIONS, ShareRun, run_share_group

from collectors.capture import offsets_line_to_evidence, read_capture
from coordinator_model.broker_log import parse_timestamp
from coordinator_model.rebuild import rebuild

FIXTURE = Path(__file__).parent / "fixtures" / "kafka-share" / "share-lifecycle"
_BUMP = re.compile(r"\[GroupId (\S+)\] Bumped group epoch to (\d+)")
_JOIN = re.compile(r"\[GroupId (\S+)\] Member (\S+) joins the share group")
_LEFT = re.compile(r"\[GroupId (\S+)\] Member (\S+) left the share group")
_STATE = re.compile(
    r"\[GroupId (\S+)\] Member (\S+) new assignment state: epoch=(\d+).*assignedPartitions=\[(.*?)\]"
)


def judge(lines: list[str], group: str, until_ms: int | None = None) -> dict:
    """What the coordinator logged for the group (up to `until_ms`): epochs with the cause their
    preceding lines give (the first is the group's creation; a join before a bump makes it
    member_joined, none metadata_change: the share-partition state's initialization), and each
    member's last assignment (partition numbers)."""
    epochs: list[tuple[int, str]] = []
    since: list[str] = []
    held: dict[str, list[int]] = {}
    for line in lines:
        if until_ms is not None and line.startswith("[") and parse_timestamp(line[1:24]) > until_ms:
            break
        if (m := _JOIN.search(line)) and m.group(1) == group:
            since.append("member_joined")
        elif (m := _LEFT.search(line)) and m.group(1) == group:
            # Kafka removes the member and bumps the group epoch without logging the bump (the records
            # have it: GroupMetadataManager's share-group leave writes the new epoch)
            held.pop(m.group(2), None)
            epochs.append((epochs[-1][0] + 1, "member_left"))
            since = []
        elif (m := _BUMP.search(line)) and m.group(1) == group:
            cause = "group_created" if not epochs else "member_joined" if since else "metadata_change"
            epochs.append((int(m.group(2)), cause))
            since = []
        elif (m := _STATE.search(line)) and m.group(1) == group:
            parts = [int(p.rsplit("-", 1)[1]) for p in m.group(4).split(", ") if p]
            held[m.group(2)] = sorted(parts)
    return {"epochs": epochs, "held": held}


def rebuilt(lines: list[dict], group: str, at_ms: int | None = None) -> dict:
    evs = [offsets_line_to_evidence(x) for x in lines]
    engines = rebuild(evs, at_ms)
    return engines[group].document(at_ms) if at_ms is not None else engines[group].document()


@pytest.fixture(scope="module")
def share_run(kafka_broker) -> tuple[ShareRun, list[str]]:
    start = len(kafka_broker.coordinator_lines())
    run = run_share_group(kafka_broker.bootstrap_servers, "share-live-group", "share-live-topic")
    return run, kafka_broker.coordinator_lines()[start:]


@pytest.mark.servers
def test_a_share_group_rebuilt_from_its_records_is_what_the_coordinator_logged(share_run) -> None:
    run, log = share_run
    truth = judge(log, "share-live-group")
    assert len(truth["epochs"]) >= 5, truth  # created, partitions initialized, a join, two leaves
    doc = rebuilt(run.lines, "share-live-group")
    assert (doc["type"], doc["protocol_type"], doc["state"]) == ("share", "share", "Empty")
    assert [(g["generation"], g["cause"]) for g in doc["generations"]] == truth["epochs"]
    assert doc["group_epoch"] == truth["epochs"][-1][0] and doc["members"] == []
    assert [b["state"] for b in doc["timeline"]] == ["Stable", "Empty"]
    assert any("share group commits no offsets" in n for n in doc["inferred"])
    # mid-run: both members, each with the partitions the coordinator gave it, named by topic
    mid = rebuilt(run.lines, "share-live-group", run.mid_ms)
    assert mid["state"] == "Stable"
    by_client = {m["client_id"]: m for m in mid["members"]}
    assert set(by_client) == {"sc-1", "sc-2"}
    held = sorted(p for m in mid["members"] for _, p in m["assignment"])
    assert held == list(range(PARTITIONS))
    assert {t for m in mid["members"] for t, _ in m["assignment"]} == {"share-live-topic"}
    then = judge(log, "share-live-group", until_ms=run.mid_ms)
    assert {m["member_id"]: sorted(p for _, p in m["assignment"]) for m in mid["members"]} == then["held"]
    for m in mid["members"]:
        assert m["member_epoch"] == mid["assignment_epoch"] == then["epochs"][-1][0]


@pytest.mark.servers
@pytest.mark.slow
def test_a_share_group_through_the_pipeline(share_run, spark, redis_server, tmp_path: Path) -> None:
    """The run's records as a capture folder through the real pipeline (`groupscope replay`'s Spark
    job) into Redis: the stored document is the rebuilt one."""
    import redis

    from collectors.pipeline.job import PipelineConfig, run_pipeline
    from collectors.storage.redis_store import RedisStore

    run, _log = share_run
    cap = tmp_path / "share-capture"
    cap.mkdir()
    (cap / "offsets.jsonl").write_text("".join(json.dumps(x) + "\n" for x in run.lines))
    url = redis_server.url.rsplit("/", 1)[0] + "/8"
    redis.Redis.from_url(url).flushdb()
    cfg = PipelineConfig(
        redis_url=url, checkpoint_dir=str(tmp_path / "ckpt"), mode="replay", capture_dir=str(cap)
    )
    run_pipeline(cfg, spark, progress=False)
    stored = RedisStore.from_url(url).get_group("share-live-group")
    want = rebuilt(run.lines, "share-live-group")
    assert stored is not None
    for k in ("type", "state", "group_epoch", "assignment_epoch", "members"):
        assert stored[k] == want[k], k
    assert [(g["generation"], g["cause"]) for g in stored["generations"]] == [
        (g["generation"], g["cause"]) for g in want["generations"]
    ]


def test_the_share_fixture_offline_with_and_without_its_broker_log() -> None:
    """A capture of the same scenario (tests/fixtures/kafka-share/make_fixture.py, Kafka 4.3.1): the
    records alone and with the coordinator's log give the same epochs and causes, the log's."""
    truth = judge((FIXTURE / "broker.log").read_text().splitlines(), "share-fixture-group")
    cap = read_capture(FIXTURE)
    with_log = rebuild(cap.evidence)["share-fixture-group"].document()
    records_only = rebuild([e for e in cap.evidence if e.source != "broker_log"])[
        "share-fixture-group"
    ].document()
    for doc in (with_log, records_only):
        assert doc["type"] == "share" and doc["state"] == "Empty"
        assert [(g["generation"], g["cause"]) for g in doc["generations"]] == truth["epochs"]
    assert with_log["protocol"] == "simple"  # the coordinator logs the assignor it ran
