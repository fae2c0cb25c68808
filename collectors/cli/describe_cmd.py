"""`groupscope describe` and `groupscope reset-offsets`: kafka-consumer-groups.sh habits, answered
from what the collector keeps in Redis.

`describe` prints the columns of `kafka-consumer-groups.sh --describe` (--offsets, the default;
--members [--verbose]; --state), with LAG-SECONDS after LAG. `reset-offsets` prints a plan (each
partition's committed offset and the offset it would get) and the exact kafka-consumer-groups.sh
command that does it: groupscope itself never writes offsets."""

from __future__ import annotations

import json
import shlex
import sys
import time
from typing import Any

import click

from collectors.cli.describe_tables import ROWS, cell, partition_rows, render, table
from collectors.cli.read_cmd import Clusters, _clusters, _find_group, group_cluster_option
from collectors.cli.times import HELP as TIME_HELP
from collectors.cli.times import TIME, ago, iso_utc
from collectors.command_options import bootstrap_option, redis_option
from collectors.config import ConfigError
from coordinator_model.document import DocumentError, GroupDocument


def _typed(doc: dict[str, Any], name: str) -> GroupDocument:
    try:
        return GroupDocument.from_json(doc)
    except DocumentError as exc:
        raise click.ClickException(f"{exc} (groupscope group {name} --json prints it as stored)") from exc


def _documents(c: Clusters, names: list[str], all_groups: bool, cluster: str | None) -> list[GroupDocument]:
    if all_groups:
        where = c.one(cluster)
        store = c.store(where)
        _, rows = store.list_groups("name", limit=1_000_000)
        docs = []
        for r in rows:
            d = store.get_group(r["name"])
            if d is not None:
                docs.append(_typed(d, r["name"]))
        return docs
    return [_typed(_find_group(c, n, cluster)[1], n) for n in names]


def _describe_once(
    c: Clusters,
    names: list[str],
    all_groups: bool,
    cluster: str | None,
    mode: str,
    verbose: bool,
    as_json: bool,
) -> list[str]:
    docs = _documents(c, names, all_groups, cluster)
    rows = [r for d in docs for r in ROWS[mode](d)]
    if as_json:
        return [json.dumps({"mode": mode, "rows": rows}, separators=(",", ":"))]
    if not docs:
        return ["no groups in Redis yet: is the collector running (groupscope collect / replay)?"]
    out = []
    if mode in ("offsets", "members"):
        for d in docs:
            if not d.members:
                out.append(f"Consumer group '{d.group}' has no active members.")
    if out:
        out.append("")
    return out + render(mode, verbose, rows)


@click.command()
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="The group (repeat for several).")
@click.option("--all-groups", is_flag=True, help="Every group of the cluster.")
@click.option(
    "--offsets", "mode", flag_value="offsets", default=True, help="Partitions and lag (the default)."
)
@click.option(
    "--members", "mode", flag_value="members", help="The members and how many partitions each owns."
)
@click.option("--state", "mode", flag_value="state", help="The group's state, assignor and member count.")
@click.option(
    "--verbose", is_flag=True, help="With --members: GROUP-INSTANCE-ID and each member's ASSIGNMENT."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document: {mode, rows} (null for unknowns).")
@click.option(
    "--watch",
    type=click.FloatRange(min=0.1),
    is_flag=False,
    flag_value=5.0,
    default=None,
    metavar="[SECONDS]",
    help="Redraw every SECONDS (default 5) until Ctrl-C.",
)
@click.option("--watch-count", type=click.IntRange(1), default=None, hidden=True)  # tests: stop after N draws
@redis_option
@click.option(
    "--cluster",
    default=None,
    metavar="NAME",
    help="The groups' cluster (default: for --group, the only cluster that has the group, else "
    "`default`; for --all-groups, the only cluster in Redis).",
)
def describe(
    groups: tuple[str, ...],
    all_groups: bool,
    mode: str,
    verbose: bool,
    as_json: bool,
    watch: float | None,
    watch_count: int | None,
    redis_url: str | None,
    cluster: str | None,
) -> None:
    """Describe groups the way `kafka-consumer-groups.sh --describe` does, from Redis.

    Columns as Kafka's tool prints them, plus LAG-SECONDS (after LAG): how far behind the group is in
    time. '-' stands for what groupscope does not know (no commit, no log end yet, no owner; in
    --state, a coordinator no Admin API describe has named yet)."""
    if not groups and not all_groups:
        raise click.UsageError("say which groups: --group GROUP (repeatable) or --all-groups")
    if groups and all_groups:
        raise click.UsageError("--group and --all-groups exclude each other")
    if verbose and mode != "members":
        raise click.UsageError("--verbose goes with --members")
    c = _clusters(redis_url, cluster)
    drawn = 0
    try:
        while True:
            lines = _describe_once(c, list(groups), all_groups, cluster, mode, verbose, as_json)
            if watch is not None and not as_json:
                click.clear()
                now = iso_utc(int(time.time() * 1000))
                click.echo(f"every {watch:g}s: groupscope describe (Ctrl-C to stop)    {now}\n")
            click.echo("\n".join(lines))
            drawn += 1
            if watch is None or (watch_count is not None and drawn >= watch_count):
                return
            pause(watch)
    except KeyboardInterrupt:
        return


def pause(seconds: float) -> None:
    """The wait between two --watch draws; its own name so a test can replace it without
    replacing time.sleep for every other thread of the process."""
    time.sleep(seconds)


# ---- reset-offsets --------------------------------------------------------------------------------
def _topic_filter(topics: tuple[str, ...]) -> dict[str, set[int] | None]:
    """--topic T or T:0,1,2 (Kafka's spelling) -> topic -> partitions (None: all)."""
    out: dict[str, set[int] | None] = {}
    for spec in topics:
        name, _, parts = spec.partition(":")
        if not name:
            raise click.BadParameter(f"{spec!r}: TOPIC or TOPIC:0,1,2", param_hint="--topic")
        if not parts:
            out[name] = None
            continue
        try:
            ps = {int(p) for p in parts.split(",") if p.strip()}
        except ValueError:
            raise click.BadParameter(f"{spec!r}: TOPIC or TOPIC:0,1,2", param_hint="--topic") from None
        prev = out.get(name, set())
        out[name] = None if name in out and prev is None else (prev or set()) | ps
    return out


def _bootstrap(c: Clusters, where: str, given: str | None) -> str | None:
    if given:
        return given
    try:
        s = c.settings.for_cluster(where)
        if s.bootstrap_servers:
            return s.bootstrap_servers
    except ConfigError:
        pass
    from collectors.storage.clusters import ClusterRegistry

    try:
        for info in ClusterRegistry(c.client).clusters():
            if info.name == where and info.bootstrap_servers:
                return info.bootstrap_servers
    except Exception:  # the registry is a hint only
        return None
    return None


def plan_rows(
    doc: GroupDocument,
    how: str,
    *,
    topics: dict[str, set[int] | None],
    shift: int = 0,
    at_ms: int | None = None,
    histories: dict[tuple[str, int], Any] | None = None,
) -> list[dict[str, Any]]:
    """Each partition's committed offset and the offset the reset would give it (an int, 'earliest',
    or None: not known to groupscope)."""
    histories = histories or {}
    out = []
    for r in partition_rows(doc):
        if topics and (
            r.topic not in topics or (topics[r.topic] is not None and r.partition not in topics[r.topic])
        ):
            continue
        h = histories.get((r.topic, r.partition))
        end = r.end_offset if r.end_offset is not None else (h.latest if h is not None else None)
        new: int | str | None
        if how == "earliest":
            new = "earliest"
        elif how == "latest":
            new = end
        elif how == "shift":
            new = None if r.committed is None else max(0, r.committed + shift)
            if isinstance(new, int) and end is not None:
                new = min(new, end)
        else:  # datetime: the log end then, i.e. the first offset written after that time
            new = h.at(at_ms) if h is not None and at_ms is not None else None
        out.append(
            {
                "group": doc.group,
                "topic": r.topic,
                "partition": r.partition,
                "current_offset": r.committed,
                "new_offset": new,
                "log_end_seen": h.last_seen if h is not None and h.last_seen else None,
            }
        )
    return out


@click.command("reset-offsets")
@click.option("--group", required=True, metavar="GROUP", help="The group whose offsets the plan resets.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC[:P,...]",
    help="Only this topic (or these of its partitions); repeatable. Default: every topic of the group.",
)
@click.option(
    "--to-datetime", "to_datetime", type=TIME, default=None, help=f"The offsets at that time ({TIME_HELP})."
)
@click.option("--to-earliest", is_flag=True, help="The log start of each partition.")
@click.option("--to-latest", is_flag=True, help="The log end of each partition.")
@click.option(
    "--shift-by", type=int, default=None, metavar="N", help="Each committed offset plus N (N may be < 0)."
)
@click.option("--json", "as_json", is_flag=True, help="The plan and the command as one JSON document.")
@bootstrap_option
@redis_option
@group_cluster_option
def reset_offsets(
    group: str,
    topics: tuple[str, ...],
    to_datetime: int | None,
    to_earliest: bool,
    to_latest: bool,
    shift_by: int | None,
    as_json: bool,
    bootstrap_servers: str | None,
    redis_url: str | None,
    cluster: str | None,
) -> None:
    """Plan an offset reset and print the kafka-consumer-groups.sh command that does it.

    groupscope never writes offsets: it prints each partition's current offset and the new one as
    far as it knows them, then the command to run."""
    chosen = [
        n
        for n, on in (
            ("--to-datetime", to_datetime is not None),
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--shift-by", shift_by is not None),
        )
        if on
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "choose exactly one of --to-datetime, --to-earliest, --to-latest, --shift-by"
            + (f" (got {', '.join(chosen)})" if chosen else "")
        )
    wanted = _topic_filter(topics)
    c = _clusters(redis_url, cluster)
    where, raw = _find_group(c, group, cluster)
    doc = _typed(raw, group)
    how = {"--to-datetime": "datetime", "--to-earliest": "earliest", "--to-latest": "latest"}.get(
        chosen[0], "shift"
    )
    from collectors.storage.log_ends import LogEnds

    store = c.store(where)
    names = {r.topic for r in partition_rows(doc)} & (set(wanted) or {r.topic for r in partition_rows(doc)})
    histories = LogEnds(c.client, store.p).read(names)
    rows = plan_rows(doc, how, topics=wanted, shift=shift_by or 0, at_ms=to_datetime, histories=histories)
    if wanted and not rows:
        raise click.ClickException(
            f"group {group!r} has no partition of {', '.join(topics)}"
            f" (its topics: {', '.join(doc.topics()) or 'none'})"
        )
    now = int(time.time() * 1000)
    notes = []
    if how == "earliest":
        notes.append("the log start offset is not known to groupscope: the broker resolves 'earliest'.")
    elif how == "latest":
        seen = [r["log_end_seen"] for r in rows if r["log_end_seen"]]
        when = (
            f"the oldest observed {ago(min(seen), now)} ago"
            if seen
            else f"as of the group's document ({ago(doc.as_of, now)} ago)"
        )
        notes.append(
            f"new offsets: the log ends groupscope holds, {when}; the broker uses the log end at reset time."
        )
    elif how == "shift":
        notes.append(f"new offsets: committed {shift_by:+d}, kept within 0 and the known log end.")
    else:
        notes.append(
            f"new offsets: the log end at {iso_utc(to_datetime or 0)}, an estimate from groupscope's"
            " samples of each partition's log end; kafka-consumer-groups.sh --to-datetime resolves it"
            " exactly (from the records' timestamps)."
        )
    if any(r["new_offset"] is None for r in rows):
        notes.append(
            "'-': not known to groupscope (no commit, or no log-end sample then); the broker decides."
        )
    bootstrap = _bootstrap(c, where, bootstrap_servers)
    cmd = [
        "kafka-consumer-groups.sh",
        "--bootstrap-server",
        bootstrap or "HOST:PORT",
        "--group",
        group,
        "--reset-offsets",
    ]
    if how == "datetime":
        cmd += ["--to-datetime", iso_utc(to_datetime or 0)]
    elif how == "shift":
        cmd += ["--shift-by", str(shift_by)]
    else:
        cmd.append(f"--to-{how}")
    if topics:
        for t in topics:
            cmd += ["--topic", t]
    else:
        cmd.append("--all-topics")
    cmd.append("--execute")
    command = " ".join(shlex.quote(x) for x in cmd)
    warnings = []
    if doc.members:
        warnings.append(
            f"group {group!r} has {len(doc.members)} member(s) (state {doc.state or '-'}): Kafka"
            " refuses to reset the offsets of an active group; stop its consumers first."
        )
    if bootstrap is None:
        warnings.append("no bootstrap servers known: replace HOST:PORT (or pass --bootstrap-servers).")
    if _kafka_settings(c, where):
        warnings.append(
            "your Kafka client settings (SASL/SSL) go in a file given with --command-config FILE."
        )
    if as_json:
        out = {
            "group": group,
            "cluster": where,
            "mode": how,
            "plan": rows,
            "notes": notes,
            "warnings": warnings,
            "command": command,
        }
        json.dump(out, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return
    cells = [
        [r["group"], r["topic"], str(r["partition"]), cell(r["current_offset"]), cell(r["new_offset"])]
        for r in rows
    ]
    cols: list[tuple[str, int | None]] = [
        ("GROUP", None),
        ("TOPIC", None),
        ("PARTITION", 10),
        ("CURRENT-OFFSET", 15),
        ("NEW-OFFSET", None),
    ]
    click.echo("\n".join(table(cols, cells)))
    click.echo("")
    for n in notes:
        click.echo(f"note: {n}")
    for w in warnings:
        click.echo(f"warning: {w}")
    click.echo("groupscope does not change offsets. To reset them, run:")
    click.echo(f"  {command}")
    click.echo("(with --dry-run instead of --execute, Kafka prints its own plan first)")


def _kafka_settings(c: Clusters, where: str) -> bool:
    """Whether the cluster's Kafka client settings carry more than the bootstrap servers."""
    try:
        return bool(c.settings.for_cluster(where).kafka)
    except ConfigError:
        return False
