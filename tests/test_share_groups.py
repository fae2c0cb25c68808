"""KIP-932 share groups: real ShareConsumers on the harness's broker (tests/share_scenario.py), the
group rebuilt from what the coordinator wrote to __consumer_offsets, and the coordinator's own log as
the judge: its type and states, every group epoch with its cause, the members and what each holds;
the same records through the pipeline's Spark job into Redis, shown by `groupscope group`; and a
capture kept as a fixture (tests/fixtures/kafka-share), rebuilt offline.

While the two members share the topic, the Admin poller describes the group (ShareGroupDescribe,
collectors.kafka_protocol) and Kafka's own kafka-share-groups.sh (ShareGroupCommand, run from the
broker's jars) describes it too: the document rebuilt from the poller's describe line alone, and the
same line through the pipeline into Redis (`groupscope group --json`, the dashboard's group page),
are what Kafka's tool says (state, group and assignment epochs, members, their epochs and
partitions). The poller also reads the group's share-partition start offsets (DescribeShareGroupOffsets)
and the log-end offsets of their partitions: the document's start offset and lag per partition are
kafka-share-groups.sh --describe --offsets' START-OFFSET and LAG, while the members share the topic
(nothing left to deliver) and once the group is empty with a backlog produced since (lag > 0)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from share_scenario import PARTITIONS, ShareRun, produce_backlog, run_share_group
from test_share_describe import Sink

from collectors.capture import offsets_line_to_evidence, read_capture
from collectors.pipeline.admin_lines import end_offset_lines
from coordinator_model.broker_log import parse_timestamp
from coordinator_model.evidence import SHARE_START_OFFSETS, from_describe_json, from_end_offset_json
from coordinator_model.rebuild import rebuild

SHARED = 10  # records per partition produced while the two members share the topic
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
    return engines[group].document_json(at_ms) if at_ms is not None else engines[group].document_json()


def share_groups_tool(bootstrap: str, group: str) -> dict[str, Any]:
    """Kafka's own kafka-share-groups.sh (ShareGroupCommand, from the broker's jars) on the group:
    `--describe --state --verbose` (state, group epoch, assignment epoch, member count) and
    `--describe --members --verbose` (each member's host, client id, member epoch, partitions)."""
    from collectors.demo.servers.kafka.broker import java_binary
    from collectors.demo.servers.kafka.jars import classpath

    def rows(what: str) -> list[list[str]]:
        out = subprocess.run(
            [
                java_binary(),
                "-cp",
                classpath(),
                "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                "--bootstrap-server",
                bootstrap,
                "--group",
                group,
                "--describe",
                what,
                "--verbose",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        return [line.split() for line in out.splitlines() if line.split()[:1] == [group]]

    # GROUP  COORDINATOR (ID)  STATE  GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS
    ((_g, coordinator, coordinator_id, state, group_epoch, assignment_epoch, count),) = rows("--state")
    members = {}
    # GROUP  CONSUMER-ID  HOST  CLIENT-ID  #PARTITIONS  MEMBER-EPOCH  ASSIGNMENT (topic:0,1;topic2:3)
    for _g, member_id, host, client_id, n, member_epoch, *assignment in rows("--members"):
        held = []
        for spec in "".join(assignment).split(";"):
            topic, _, parts = spec.rpartition(":")
            held += [[topic, int(p)] for p in parts.split(",") if p.isdigit()]
        assert int(n) == len(held), (n, assignment)
        members[member_id] = {
            "host": host,
            "client_id": client_id,
            "member_epoch": int(member_epoch),
            "assignment": sorted(held),
        }
    assert int(count) == len(members)
    return {
        "coordinator": f"{coordinator}  {coordinator_id}",
        "state": state,
        "group_epoch": int(group_epoch),
        "assignment_epoch": int(assignment_epoch),
        "members": members,
    }


def share_offsets_tool(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """kafka-share-groups.sh --describe --offsets on the group: (topic, partition) -> (START-OFFSET,
    LAG), None where the tool prints "-" (not initialised, or the broker has no lag for it)."""
    from collectors.demo.servers.kafka.broker import java_binary
    from collectors.demo.servers.kafka.jars import classpath

    out = subprocess.run(
        [
            java_binary(),
            "-cp",
            classpath(),
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
            "--bootstrap-server",
            bootstrap,
            "--group",
            group,
            "--describe",
            "--offsets",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    got = {}
    # GROUP  TOPIC  PARTITION  START-OFFSET  LAG
    for row in (line.split() for line in out.splitlines()):
        if row[:1] == [group] and len(row) == 5:
            _, topic, part, start, lag = row
            got[(topic, int(part))] = (None if start == "-" else int(start), None if lag == "-" else int(lag))
    return got


def steady_offsets(
    bootstrap: str, group: str, want: Any = None, timeout_s: float = 60.0
) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """The tool's START-OFFSET and LAG once two runs in a row agree (and `want(rows)` holds)."""
    deadline = time.monotonic() + timeout_s
    last = share_offsets_tool(bootstrap, group)
    while True:
        now = share_offsets_tool(bootstrap, group)
        if now == last and now and (want is None or want(now)):
            return now
        assert time.monotonic() < deadline, f"share-group offsets not steady: {last} then {now}"
        last = now
        time.sleep(0.5)


def ours_per_partition(lines: list[dict[str, Any]], group: str) -> dict[tuple[str, int], tuple[Any, Any]]:
    """The group's document rebuilt from the poller's lines (describe, share start offsets, end
    offsets): (topic, partition) -> (its committed offset: the position the broker's lag implies,
    log-end offset, lag)."""
    mine = [x for x in lines if x.get("group") in (group, "")]  # "": the cluster's log ends
    evidence = [from_describe_json(x) for x in mine if "end_offsets" not in x]
    evidence += [from_end_offset_json(e) for x in mine for e in end_offset_lines(x)]
    doc = as_json(rebuild(evidence)[group])
    assert SHARE_START_OFFSETS in doc["sources"]
    assert any("the broker's share-partition lag" in n for n in doc["inferred"])
    return {
        (p["topic"], p["partition"]): (p["committed"], p["end_offset"], p["lag"])
        for p in doc["lag"]["partitions"]
    }


def admin_poll(bootstrap: str) -> dict[str, Any]:
    """One full poll of the Admin poller (collectors/pipeline/admin_poller.py) on the broker: the lines
    it sends, and the groups whose committed offsets it asked for (OffsetFetch)."""
    from confluent_kafka.admin import AdminClient

    from collectors.pipeline.admin_poller import AdminPoller

    cfg = SimpleNamespace(kafka={"bootstrap.servers": bootstrap}, admin_topic="unused", admin_resend_s=60.0)
    poller = AdminPoller(cfg, store=None)
    client = poller.link.client(15.0)
    fetch, asked = client.fetch_committed, []

    def spy(groups: list[str], *args: Any, **kwargs: Any) -> Any:
        asked.extend(groups)
        return fetch(groups, *args, **kwargs)

    client.fetch_committed = spy  # type: ignore[method-assign]
    sink = Sink()
    try:
        poller.poll_once(AdminClient({"bootstrap.servers": bootstrap}), sink, timeout_s=15.0)
    finally:
        poller.stop()
    return {"lines": sink.lines, "offset_fetched": asked}


def as_json(engine: Any, at_ms: int | None = None) -> dict[str, Any]:
    if hasattr(engine, "document_json"):
        return engine.document_json(at_ms)
    return engine.document(at_ms)


@pytest.fixture(scope="module")
def share_run(kafka_broker) -> tuple[ShareRun, list[str]]:
    start = len(kafka_broker.coordinator_lines())
    bs = kafka_broker.bootstrap_servers

    def while_sharing() -> dict[str, Any]:
        # Kafka's tool before and after the poll: the group did not move in between
        # records the members take and acknowledge (those produced before they joined are not theirs:
        # share.auto.offset.reset is latest, and a share-partition's start offset is -1 until its
        # first acknowledgement is written)
        produce_backlog(bs, "share-live-topic", lambda p: SHARED)
        offsets = steady_offsets(
            bs, "share-live-group", lambda rows: all(start is not None for start, _ in rows.values())
        )
        before = share_groups_tool(bs, "share-live-group")
        polled = admin_poll(bs)
        return {
            **polled,
            "judge": before,
            "judge_after": share_groups_tool(bs, "share-live-group"),
            "offsets": offsets,
            "offsets_after": share_offsets_tool(bs, "share-live-group"),
        }

    def once_empty() -> dict[str, Any]:
        # a backlog nobody consumes: the start offsets stay, the lag is 3, 5, 7 records
        produce_backlog(bs, "share-live-topic", lambda p: 3 + 2 * p)
        offsets = steady_offsets(bs, "share-live-group", lambda rows: all(lag for _, lag in rows.values()))
        polled = admin_poll(bs)
        return {**polled, "offsets": offsets, "offsets_after": share_offsets_tool(bs, "share-live-group")}

    run = run_share_group(bs, "share-live-group", "share-live-topic", during=while_sharing, after=once_empty)
    return run, kafka_broker.coordinator_lines()[start:]


def what_kafka_says_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A document in the terms of kafka-share-groups.sh (`share_groups_tool`)."""
    node = doc.get("coordinator")
    return {
        "coordinator": f"{node['host']}:{node['port']}  ({node['id']})" if node else "-",
        "state": doc["state"],
        "group_epoch": doc["group_epoch"],
        "assignment_epoch": doc["assignment_epoch"],
        "members": {
            m["member_id"]: {
                "host": m["client_host"],
                "client_id": m["client_id"],
                "member_epoch": m["member_epoch"],
                "assignment": sorted(m["assignment"]),
            }
            for m in doc["members"]
        },
    }


@pytest.mark.servers
def test_a_running_share_group_from_the_admin_api_is_what_kafka_share_groups_sh_says(share_run) -> None:
    run, _log = share_run
    seen = run.during
    judge = seen["judge"]
    assert seen["judge_after"] == judge  # steady while the poller described it
    assert judge["state"] == "Stable" and len(judge["members"]) == 2
    assert sorted(p for m in judge["members"].values() for _, p in m["assignment"]) == list(range(PARTITIONS))
    mine = [x for x in seen["lines"] if x.get("group") == "share-live-group"]
    (line,) = [x for x in mine if "members" in x]
    assert (line["type"], line["broker"]["state"]) == ("share", "Stable")
    # the document rebuilt from that describe line alone
    doc = as_json(rebuild([from_describe_json(line)])["share-live-group"])
    assert (doc["type"], doc["protocol_type"], doc["sources"]) == ("share", "share", ["describe"])
    assert what_kafka_says_of(doc) == judge
    # no OffsetFetch for a share group (it commits none): its share-partition start offsets instead
    assert "share-live-group" not in seen["offset_fetched"]
    (starts,) = [x for x in mine if "committed" in x]
    assert starts["source"] == "share_start_offsets"
    # its partitions' log-end offsets are read
    # (the cluster's, one line per topic: group "")
    (ends,) = [
        x["end_offsets"]
        for x in seen["lines"]
        if x.get("group") == "" and x.get("end_offsets", [[None]])[0][0] == "share-live-topic"
    ]
    assert ends == [["share-live-topic", p, 60 // PARTITIONS + SHARED] for p in range(PARTITIONS)]
    # and what the coordinator's records give for that moment is the same
    records = as_json(
        rebuild([offsets_line_to_evidence(x) for x in run.lines], line["ts"])["share-live-group"], line["ts"]
    )
    # (the records name no coordinator: only a describe does)
    assert what_kafka_says_of(records) == {**judge, "coordinator": "-"}


@pytest.mark.servers
@pytest.mark.slow
@pytest.mark.browser
def test_the_admin_api_describe_through_the_pipeline_to_the_cli_and_the_dashboard(
    share_run, spark, redis_server, tmp_path: Path, artifacts_dir: Path
) -> None:
    """The poller's lines of the running group as a capture (describe.jsonl, end_offsets.jsonl: no
    __consumer_offsets records) through `groupscope replay`'s Spark job into Redis: `groupscope group
    --json` prints what Kafka's tool said, and the dashboard's group page shows it."""
    import redis

    sys.path.insert(0, str(Path(__file__).parent))
    from browser.dashboard_driver import chromium, grid_cells, serve_in_thread, shoot, text, wait_for

    from collectors.pipeline.admin_lines import end_offset_lines
    from collectors.pipeline.job import PipelineConfig, run_pipeline
    from dashboard.urls import group_url

    run, _log = share_run
    judge = run.during["judge"]
    mine = [x for x in run.during["lines"] if x.get("group") in ("share-live-group", "")]
    cap = tmp_path / "share-describe-capture"
    cap.mkdir()
    (cap / "describe.jsonl").write_text("".join(json.dumps(x) + "\n" for x in mine if "members" in x))
    ends = [e for x in mine for e in end_offset_lines(x)]
    (cap / "end_offsets.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ends))
    url = redis_server.url.rsplit("/", 1)[0] + "/9"
    redis.Redis.from_url(url).flushdb()
    cfg = PipelineConfig(
        redis_url=url, checkpoint_dir=str(tmp_path / "ckpt"), mode="replay", capture_dir=str(cap)
    )
    run_pipeline(cfg, spark, progress=False)
    printed = subprocess.run(
        [sys.executable, "-m", "collectors.cli.main", "group", "share-live-group", "--json", "--redis", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    doc = json.loads(printed.stdout)
    assert (doc["type"], doc["protocol_type"]) == ("share", "share")
    assert what_kafka_says_of(doc) == judge
    base, server = serve_in_thread(url)
    try:
        with chromium(1400, 2600) as browser:
            browser.get(base + group_url("share-live-group"))
            wait_for(
                lambda: text(browser, "#hdr-group-epoch") == str(judge["group_epoch"]), what="group epoch"
            )
            assert text(browser, "#hdr-state") == judge["state"]
            assert text(browser, "#hdr-assignment-epoch") == str(judge["assignment_epoch"])
            members = wait_for(lambda: grid_cells(browser, "group-members", "member_id"), what="members")
            assert sorted(members) == sorted(judge["members"])
            epochs = grid_cells(browser, "group-members", "member_epoch")
            assert sorted(epochs) == sorted(m["member_epoch"] for m in judge["members"].values())
            shoot(browser, artifacts_dir, "group-share-live")
    finally:
        server.shutdown()


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
    with_log = rebuild(cap.evidence)["share-fixture-group"].document_json()
    records_only = rebuild([e for e in cap.evidence if e.source != "broker_log"])[
        "share-fixture-group"
    ].document_json()
    for doc in (with_log, records_only):
        assert doc["type"] == "share" and doc["state"] == "Empty"
        assert [(g["generation"], g["cause"]) for g in doc["generations"]] == truth["epochs"]
    assert with_log["protocol"] == "simple"  # the coordinator logs the assignor it ran


@pytest.mark.servers
def test_share_group_lag_from_the_admin_api_against_kafka_share_groups_sh(share_run) -> None:
    """Each partition's lag in the document rebuilt from the poller's lines is the LAG of
    kafka-share-groups.sh --describe --offsets (Kafka 4.3: the broker's, KIP-1226), the tool run just
    before and after the poll and agreeing (steady): while the two members share the topic
    (everything delivered), and once the group is empty with a backlog of 3, 5 and 7 records
    produced since. The document's offset is the position that lag implies, log-end minus LAG, at or
    past the tool's START-OFFSET (the share coordinator persists the start offset behind the
    acknowledgements: log-end minus START-OFFSET would show the caught-up group a batch behind)."""
    run, _log = share_run
    for phase, seen in (("sharing", run.during), ("empty", run.after)):
        tool = seen["offsets"]
        assert seen["offsets_after"] == tool, phase  # steady while the poller read it
        assert sorted(tool) == [("share-live-topic", p) for p in range(PARTITIONS)], phase
        assert all(start is not None and lag is not None for start, lag in tool.values()), (phase, tool)
        ours = ours_per_partition(seen["lines"], "share-live-group")
        print(f"\n{phase}: kafka-share-groups.sh (START-OFFSET, LAG): {sorted(tool.items())}")
        print(f"{phase}: groupscope (position, log-end offset, lag): {sorted(ours.items())}")
        assert sorted(ours) == sorted(tool), phase
        for tp, (start, lag) in tool.items():
            position, end, our_lag = ours[tp]
            assert our_lag == lag and position == end - lag and position >= start, (phase, tp)
    for tp, (start, lag) in run.after["offsets"].items():
        before_start, before_lag = run.during["offsets"][tp]
        assert start == before_start  # nobody consumed the backlog
        assert lag - before_lag == 3 + 2 * tp[1]
