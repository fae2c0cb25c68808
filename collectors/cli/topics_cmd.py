"""`groupscope topics` and `groupscope topic NAME`: the topic index the collector keeps in Redis (every
topic a group commits to or is assigned, with the groups that read it and their lag)."""

from __future__ import annotations

import json
import sys

import click

from collectors.cli.read_cmd import _store
from collectors.command_options import redis_option
from collectors.storage.topics import TOPIC_SORT_KEYS, owners


def _print_json(obj: object) -> None:
    json.dump(obj, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


one_cluster = click.option(
    "--cluster",
    default=None,
    metavar="NAME",
    help="The cluster (default: the only one with data, else `default`).",
)


@click.command()
@redis_option
@one_cluster
@click.option("--json", "as_json", is_flag=True, help="One JSON document: counts and rows.")
@click.option("--sort", "sort_by", type=click.Choice(TOPIC_SORT_KEYS), default="name", show_default=True)
@click.option("--desc", is_flag=True, help="Sort descending.")
@click.option("--name", "name_contains", default=None, help="Only topics whose name contains this.")
@click.option("--limit", type=click.IntRange(0), default=1000, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
def topics(
    redis_url: str | None,
    cluster: str | None,
    as_json: bool,
    sort_by: str,
    desc: bool,
    name_contains: str | None,
    limit: int,
    offset: int,
) -> None:
    """List the topics groups read, with their worst lag."""
    store = _store(redis_url, cluster)
    total, rows = store.topics.list_topics(sort_by, desc, name_contains, offset, limit)
    if as_json:
        counts = store.topics.counts()
        _print_json({"total": total, "counts": counts, "topics": [r.to_json() for r in rows]})
        return
    if not total:
        click.echo("no topics in Redis yet: is the collector running (groupscope collect / replay)?")
        return
    click.echo(
        f"{'TOPIC':<50} {'PARTS':>5} {'END OFFSETS':>14} {'GROUPS':>6} {'WORST LAG':>12} "
        f"{'LAG_S':>9} {'REBAL':>5}"
    )
    for r in rows:
        click.echo(
            f"{r.name[:50]:<50} {r.partitions:>5} {r.end_offsets:>14,} {r.groups:>6} {r.lag:>12,} "
            f"{r.lag_seconds:>9.1f} {r.rebalancing:>5}"
        )
    if total > offset + len(rows):
        click.echo(f"... {total - offset - len(rows)} more (use --offset/--limit)")


@click.command()
@click.argument("name")
@redis_option
@one_cluster
@click.option("--json", "as_json", is_flag=True, help="The topic, its groups and their partitions' lag.")
def topic(name: str, redis_url: str | None, cluster: str | None, as_json: bool) -> None:
    """Print every group that reads a topic, with its lag per partition."""
    store = _store(redis_url, cluster)
    view = store.topics.get_topic(name)
    if view is None:
        raise click.ClickException(
            f"no group reads topic {name!r} as far as Redis knows (see `groupscope topics`)"
        )
    if as_json:
        _print_json(view.to_json())
        return
    t = view.row
    click.echo(
        f"topic {t.name}: {t.partitions} partitions, end offsets {t.end_offsets:,}, {t.groups} groups, "
        f"worst lag {t.lag:,} offsets / {t.lag_seconds:.1f} s, {t.rebalancing} rebalancing"
    )
    click.echo(f"{'GROUP':<40} {'STATE':<20} {'PARTS':>5} {'LAG':>12} {'LAG_S':>9}  MEMBERS")
    for g in view.groups:
        click.echo(
            f"{str(g['group'])[:40]:<40} {g['state']:<20} {g['partitions']:>5} {g['lag']:>12,} "
            f"{g['lag_seconds']:>9.1f}  {', '.join(owners(g)) or '-'}"
        )
    click.echo("")
    click.echo(f"{'PARTITION':>9}  " + "  ".join(f"{str(g['group'])[:14]:>14}" for g in view.groups[:8]))
    parts = sorted({r[0] for g in view.groups[:8] for r in view.partitions.get(g["group"], [])})
    for p in parts:
        cells = []
        for g in view.groups[:8]:
            row = next((r for r in view.partitions.get(g["group"], []) if r[0] == p), None)
            cells.append(f"{'-' if row is None or row[3] is None else format(row[3], ','):>14}")
        click.echo(f"{p:>9}  " + "  ".join(cells))
    if len(view.groups) > 8:
        click.echo(f"(lag per partition of the 8 worst groups; --json has all {len(view.groups)})")
