"""`groupscope describe` and `groupscope reset-offsets` (kafka-consumer-groups.sh habits) over a real
Redis seeded with documents, and the shared time parser (collectors/cli/times.py)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from collectors.cli import describe_cmd
from collectors.cli.main import cli
from collectors.cli.times import ago, iso_utc, parse_time
from collectors.storage.log_ends import LogEnds
from collectors.storage.redis_store import RedisStore
from coordinator_model.document import GroupDocument
from coordinator_model.document.types import LagDoc, MemberDoc, OffsetDoc, PartitionLag

NOW = 1_700_000_100_000
T10 = int(datetime(2026, 11, 28, 10, 0, tzinfo=UTC).timestamp() * 1000)

OFFSETS_HEADER = (
    "GROUP  TOPIC PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             LAG-SECONDS  CONSUMER-ID HOST"
    "      CLIENT-ID"
)


def _orders() -> dict:
    return GroupDocument(
        group="orders",
        state="Stable",
        protocol_type="consumer",
        protocol="range",
        generation=4,
        members=[
            MemberDoc("m1", client_id="c1", client_host="/10.0.0.1", assignment=[("t", 0), ("t", 1)]),
            MemberDoc(
                "m2", group_instance_id="i2", client_id="c2", client_host="/10.0.0.2", assignment=[("u", 0)]
            ),
            MemberDoc("m3", client_id="c3", client_host="/10.0.0.3"),
        ],
        offsets=[OffsetDoc("t", 0, 100), OffsetDoc("t", 1, 200)],
        lag=LagDoc(
            total=50,
            max_seconds=12.5,
            partitions=[
                PartitionLag("t", 0, 100, True, 150, 50, 12.5, member_id="m1"),
                PartitionLag("t", 1, 200, True, 200, 0, 0.0, member_id="m1"),
                PartitionLag("u", 0, None, False, 30, None, None, member_id="m2"),
            ],
        ),
        as_of=NOW,
    ).to_json()


def _idle() -> dict:
    return GroupDocument(
        group="idle",
        state="Empty",
        protocol_type="consumer",
        offsets=[OffsetDoc("t", 0, 5)],
        lag=LagDoc(partitions=[PartitionLag("t", 0, 5, True)]),
        as_of=NOW,
    ).to_json()


@pytest.fixture()
def url(redis_client, redis_server, monkeypatch: pytest.MonkeyPatch) -> str:
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)
    RedisStore(redis_client).write_groups([_orders(), _idle()], NOW)
    # log-end samples of t: 0 -> 120 at 09:00, 150 at 10:30; t/1 -> 200 at 09:00
    LogEnds(redis_client, "gs").merge(
        {("t", 0): [(T10 - 3_600_000, 120), (T10 + 1_800_000, 150)], ("t", 1): [(T10 - 3_600_000, 200)]}
    )
    return redis_server.url


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.strip()]


# ---- times ---------------------------------------------------------------------------------------
def test_times_iso_and_relative() -> None:
    assert parse_time("2026-11-28T10:00:00") == T10  # no zone: UTC
    assert parse_time("2026-11-28T10:00:00Z") == T10
    assert parse_time("2026-11-28T11:00:00+01:00") == T10
    assert parse_time("2026-11-28T10:00:00.000") == T10
    assert parse_time("2026-11-28") == T10 - 10 * 3_600_000
    assert parse_time("now", now_ms=NOW) == NOW
    assert parse_time("-15m", now_ms=NOW) == NOW - 900_000
    assert parse_time("-2h", now_ms=NOW) == NOW - 7_200_000
    assert parse_time("-1d", now_ms=NOW) == NOW - 86_400_000
    assert parse_time(" -30S ", now_ms=NOW) == NOW - 30_000
    for bad in ("yesterday", "-15", "15m", "-15x", "2026-13-01T00:00:00", ""):
        with pytest.raises(ValueError, match="not a time"):
            parse_time(bad)
    assert iso_utc(T10 + 5) == "2026-11-28T10:00:00.005Z"
    assert ago(NOW - 90_000, NOW) == "90s" and ago(NOW - 3 * 3_600_000, NOW) == "3h" and ago(None) == "-"


# ---- describe ------------------------------------------------------------------------------------
@pytest.mark.servers
def test_describe_offsets_has_kafka_columns_and_dashes_for_unknowns(url: str) -> None:
    r = run("describe", "--group", "orders", "--redis", url)
    assert r.exit_code == 0, r.output
    out = lines(r.output)
    assert out[0] == OFFSETS_HEADER
    assert out[1].split() == ["orders", "t", "0", "100", "150", "50", "12.5", "m1", "/10.0.0.1", "c1"]
    assert out[2].split() == ["orders", "t", "1", "200", "200", "0", "0.0", "m1", "/10.0.0.1", "c1"]
    assert out[3].split() == ["orders", "u", "0", "-", "30", "-", "-", "m2", "/10.0.0.2", "c2"]
    # a member without partitions: its own row, topic and partition unknown (as Kafka prints it)
    assert out[4].split() == ["orders", "-", "-", "-", "-", "-", "-", "m3", "/10.0.0.3", "c3"]
    assert len(out) == 5
    # fixed-width columns: every value starts under its header
    for col in ("PARTITION", "CURRENT-OFFSET", "LAG-SECONDS", "CONSUMER-ID", "CLIENT-ID"):
        at = out[0].index(col)
        assert all(ln[at - 1] == " " and ln[at] != " " for ln in out[1:]), col
    assert run("describe", "--group", "orders", "--offsets", "--redis", url).output == r.output


@pytest.mark.servers
def test_describe_members_verbose_and_state(url: str) -> None:
    r = run("describe", "--group", "orders", "--members", "--redis", url)
    assert r.exit_code == 0, r.output
    out = lines(r.output)
    assert out[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert [ln.split() for ln in out[1:]] == [
        ["orders", "m1", "/10.0.0.1", "c1", "2"],
        ["orders", "m2", "/10.0.0.2", "c2", "1"],
        ["orders", "m3", "/10.0.0.3", "c3", "0"],
    ]
    r = run("describe", "--group", "orders", "--members", "--verbose", "--redis", url)
    out = lines(r.output)
    assert out[0].split() == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert out[1].split() == ["orders", "m1", "-", "/10.0.0.1", "c1", "2", "t(0,1)"]
    assert out[2].split() == ["orders", "m2", "i2", "/10.0.0.2", "c2", "1", "u(0)"]
    assert out[3].split() == ["orders", "m3", "-", "/10.0.0.3", "c3", "0", "-"]
    r = run("describe", "--group", "orders", "--state", "--redis", url)
    out = lines(r.output)
    assert out[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert out[1].split() == ["orders", "-", "range", "Stable", "3"]
    r = run("describe", "--group", "orders", "--verbose", "--redis", url)
    assert r.exit_code == 2 and "--verbose goes with --members" in r.output


@pytest.mark.servers
def test_describe_all_groups_and_several_groups(url: str) -> None:
    r = run("describe", "--all-groups", "--redis", url)
    assert r.exit_code == 0, r.output
    out = lines(r.output)
    assert out[0] == "Consumer group 'idle' has no active members."
    rows = [ln.split() for ln in out[2:]]
    assert ["idle", "t", "0", "5", "-", "-", "-", "-", "-", "-"] in rows
    assert {row[0] for row in rows} == {"idle", "orders"} and len(rows) == 5
    r = run("describe", "--all-groups", "--members", "--redis", url)
    out = lines(r.output)
    assert out[0] == "Consumer group 'idle' has no active members."
    assert [ln.split()[:2] for ln in out[2:]] == [["orders", "m1"], ["orders", "m2"], ["orders", "m3"]]
    r = run("describe", "--all-groups", "--state", "--redis", url)
    assert [ln.split() for ln in lines(r.output)[1:]] == [
        ["idle", "-", "-", "Empty", "0"],
        ["orders", "-", "range", "Stable", "3"],
    ]
    r = run("describe", "--group", "idle", "--group", "orders", "--state", "--redis", url)
    assert [ln.split()[0] for ln in lines(r.output)[1:]] == ["idle", "orders"]
    assert run("describe", "--redis", url).exit_code == 2
    assert run("describe", "--all-groups", "--group", "x", "--redis", url).exit_code == 2


@pytest.mark.servers
def test_describe_json(url: str) -> None:
    r = run("describe", "--group", "orders", "--json", "--redis", url)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["mode"] == "offsets" and len(doc["rows"]) == 4
    assert doc["rows"][0] == {
        "group": "orders",
        "topic": "t",
        "partition": 0,
        "current_offset": 100,
        "log_end_offset": 150,
        "lag": 50,
        "lag_seconds": 12.5,
        "consumer_id": "m1",
        "host": "/10.0.0.1",
        "client_id": "c1",
    }
    assert doc["rows"][2]["current_offset"] is None and doc["rows"][3]["topic"] is None
    m = json.loads(run("describe", "--group", "orders", "--members", "--json", "--redis", url).stdout)
    assert m["rows"][0]["assignment"] == [["t", 0], ["t", 1]] and m["rows"][1]["group_instance_id"] == "i2"
    s = json.loads(run("describe", "--all-groups", "--state", "--json", "--redis", url).stdout)
    assert [(x["group"], x["coordinator"], x["members"]) for x in s["rows"]] == [
        ("idle", None, 0),
        ("orders", None, 3),
    ]


@pytest.mark.servers
def test_describe_watch_redraws_until_stopped(
    url: str, redis_client, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        # between draws the collector writes: the next draw shows it
        doc = _orders()
        doc["state"] = "PreparingRebalance"
        RedisStore(redis_client).write_groups([doc], NOW + 1000)

    monkeypatch.setattr(describe_cmd, "pause", sleep)
    r = run("describe", "--group", "orders", "--state", "--watch", "2", "--watch-count", "3", "--redis", url)
    assert r.exit_code == 0, r.output
    assert slept == [2.0, 2.0] and r.output.count("every 2s: groupscope describe") == 3
    assert r.output.count("Stable") == 1 and r.output.count("PreparingRebalance") == 2
    # --watch alone: every 5 seconds, until Ctrl-C (a clean exit)
    slept.clear()

    def interrupt(s: float) -> None:
        slept.append(s)
        raise KeyboardInterrupt

    monkeypatch.setattr(describe_cmd, "pause", interrupt)
    r = run("describe", "--group", "orders", "--watch", "--redis", url)
    assert r.exit_code == 0 and slept == [5.0] and r.output.count("every 5s") == 1


@pytest.mark.servers
def test_unknown_group_is_a_clear_error(url: str) -> None:
    r = run("describe", "--group", "nope", "--redis", url)
    assert r.exit_code == 1 and "group 'nope' is not in Redis" in r.output
    r = run("reset-offsets", "--group", "nope", "--to-latest", "--redis", url)
    assert r.exit_code == 1 and "group 'nope' is not in Redis" in r.output


# ---- reset-offsets -------------------------------------------------------------------------------
def _plan(out: str) -> list[list[str]]:
    rows = []
    for ln in out.splitlines()[1:]:
        if not ln.strip():
            break
        rows.append(ln.split())
    return rows


def _command(out: str) -> str:
    i = out.splitlines().index("groupscope does not change offsets. To reset them, run:")
    return out.splitlines()[i + 1].strip()


@pytest.mark.servers
def test_reset_to_earliest_and_latest(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPSCOPE_BOOTSTRAP_SERVERS", "k1:9092,k2:9092")
    r = run("reset-offsets", "--group", "orders", "--to-earliest", "--redis", url)
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]
    assert _plan(r.output) == [
        ["orders", "t", "0", "100", "earliest"],
        ["orders", "t", "1", "200", "earliest"],
        ["orders", "u", "0", "-", "earliest"],
    ]
    assert "the broker resolves 'earliest'" in r.output
    assert "Kafka refuses to reset the offsets of an active group" in r.output
    assert _command(r.output) == (
        "kafka-consumer-groups.sh --bootstrap-server k1:9092,k2:9092 --group orders --reset-offsets"
        " --to-earliest --all-topics --execute"
    )
    r = run("reset-offsets", "--group", "orders", "--to-latest", "--redis", url)
    assert _plan(r.output) == [
        ["orders", "t", "0", "100", "150"],
        ["orders", "t", "1", "200", "200"],
        ["orders", "u", "0", "-", "30"],
    ]
    assert (
        "the log ends groupscope holds, the oldest observed" in r.output
        and "--to-latest --all-topics" in r.output
    )


@pytest.mark.servers
def test_reset_shift_by_clamps_to_zero_and_the_log_end(url: str) -> None:
    r = run("reset-offsets", "--group", "orders", "--shift-by", "30", "--redis", url)
    assert r.exit_code == 0, r.output
    assert _plan(r.output) == [
        ["orders", "t", "0", "100", "130"],
        ["orders", "t", "1", "200", "200"],  # not past the known log end
        ["orders", "u", "0", "-", "-"],  # no commit to shift
    ]
    assert "'-': not known to groupscope" in r.output
    assert "--bootstrap-server HOST:PORT" in _command(r.output) and "no bootstrap servers known" in r.output
    r = run("reset-offsets", "--group", "orders", "--shift-by", "-150", "--topic", "t", "--redis", url)
    assert _plan(r.output) == [["orders", "t", "0", "100", "0"], ["orders", "t", "1", "200", "50"]]
    assert _command(r.output).endswith("--reset-offsets --shift-by -150 --topic t --execute")


@pytest.mark.servers
def test_reset_to_datetime_uses_the_log_end_history(url: str) -> None:
    args = ["reset-offsets", "--group", "orders", "--topic", "t", "--bootstrap-servers", "b:9092"]
    r = run(*args, "--to-datetime", "2026-11-28T10:00:00", "--redis", url)
    assert r.exit_code == 0, r.output
    # at 10:00 t/0's log end was 120 (seen at 09:00, next sample 150 at 10:30); t/1's was 200
    assert _plan(r.output) == [["orders", "t", "0", "100", "120"], ["orders", "t", "1", "200", "200"]]
    assert "an estimate from groupscope's samples" in r.output
    assert "kafka-consumer-groups.sh --to-datetime resolves it" in r.output
    assert _command(r.output) == (
        "kafka-consumer-groups.sh --bootstrap-server b:9092 --group orders --reset-offsets"
        " --to-datetime 2026-11-28T10:00:00.000Z --topic t --execute"
    )
    # the same time with a zone; before groupscope's first sample: unknown
    r = run(*args, "--to-datetime", "2026-11-28T11:40:00+01:00", "--redis", url)
    assert _plan(r.output)[0][-1] == "150"
    r = run(*args, "--to-datetime", "2026-11-28T08:00:00", "--redis", url)
    assert _plan(r.output) == [["orders", "t", "0", "100", "-"], ["orders", "t", "1", "200", "-"]]
    # one partition of the topic, Kafka's TOPIC:P spelling; relative times are taken
    r = run(*args[:-4], "--topic", "t:1", "--to-datetime", "-1h", "--json", "--redis", url)
    doc = json.loads(r.stdout)
    assert [(p["topic"], p["partition"], p["new_offset"]) for p in doc["plan"]] == [("t", 1, 200)]
    assert doc["mode"] == "datetime" and "--topic t:1 --execute" in doc["command"]
    assert doc["warnings"] and "HOST:PORT" in doc["command"]


@pytest.mark.servers
def test_reset_bad_input_is_a_usage_error(url: str) -> None:
    r = run("reset-offsets", "--group", "orders", "--to-datetime", "yesterday", "--redis", url)
    assert r.exit_code == 2 and "'yesterday' is not a time" in r.output and "-15m" in r.output
    r = run("reset-offsets", "--group", "orders", "--redis", url)
    assert r.exit_code == 2 and "choose exactly one of" in r.output
    r = run("reset-offsets", "--group", "orders", "--to-latest", "--shift-by", "1", "--redis", url)
    assert r.exit_code == 2 and "got --to-latest, --shift-by" in r.output
    r = run("reset-offsets", "--group", "orders", "--to-latest", "--topic", "t:x", "--redis", url)
    assert r.exit_code == 2 and "TOPIC:0,1,2" in r.output
    r = run("reset-offsets", "--group", "orders", "--to-latest", "--topic", "nope", "--redis", url)
    assert r.exit_code == 1 and "has no partition of nope" in r.output and "its topics: t, u" in r.output


@pytest.mark.servers
def test_reset_of_an_empty_group_has_no_warning_and_never_writes(url: str, redis_client) -> None:
    before = {k: redis_client.dump(k) for k in redis_client.keys("*")}
    r = run(
        "reset-offsets", "--group", "idle", "--to-latest", "--bootstrap-servers", "b:9092", "--redis", url
    )
    assert r.exit_code == 0, r.output
    assert _plan(r.output) == [["idle", "t", "0", "5", "150"]]  # the log end from the history
    assert "warning" not in r.output
    assert {k: redis_client.dump(k) for k in redis_client.keys("*")} == before


def test_a_log_end_older_than_the_commit_is_shown_at_the_commit() -> None:
    """The Admin poller's last log end can be older than a commit the offsets topic brought after it:
    describe shows the end at the committed offset (the log had reached it), never below it, as
    kafka-consumer-groups.sh does; a known end past the commit is shown as it is."""
    from collectors.cli.describe_tables import partition_rows

    doc = GroupDocument(
        group="g",
        state="Stable",
        offsets=[OffsetDoc("t", 0, 97), OffsetDoc("t", 1, 50)],
        lag=LagDoc(
            partitions=[
                PartitionLag("t", 0, 97, True, 95, 0, 0.0),
                PartitionLag("t", 1, 50, True, 60, 10, 1.0),
            ]
        ),
    )
    rows = {(r.topic, r.partition): r for r in partition_rows(doc)}
    assert (rows[("t", 0)].committed, rows[("t", 0)].end_offset, rows[("t", 0)].lag) == (97, 97, 0)
    assert (rows[("t", 1)].committed, rows[("t", 1)].end_offset, rows[("t", 1)].lag) == (50, 60, 10)
