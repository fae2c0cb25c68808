"""`groupscope groups` and `groupscope group NAME`: what the collector keeps in Redis."""

from __future__ import annotations

import json
import sys
import time

import click

from collectors.cli.options import redis_option, settings_from
from collectors.storage.redis_store import SORT_KEYS, RedisStore


def _store(redis_url: str | None) -> RedisStore:
    import redis

    s = settings_from(redis_url=redis_url)
    store = RedisStore.from_url(s.redis_url, retention_ms=s.retention_s * 1000)
    try:
        store.r.ping()
    except redis.RedisError as e:
        raise click.ClickException(f"cannot reach Redis at {s.redis_url}: {e}") from e
    return store


def _age(ms: int | None) -> str:
    if not ms:
        return "-"
    s = max(0, time.time() - ms / 1000)
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.0f}h"


@click.command()
@redis_option
@click.option("--json", "as_json", is_flag=True, help="One JSON document: counts, freshness and rows.")
@click.option("--sort", "sort_by", type=click.Choice(SORT_KEYS), default="name", show_default=True)
@click.option("--desc", is_flag=True, help="Sort descending.")
@click.option("--state", default=None, help="Only groups in this state (e.g. Stable).")
@click.option("--name", "name_contains", default=None, help="Only groups whose name contains this.")
@click.option("--type", "type_", default=None, help="Only groups of this type (classic, consumer).")
@click.option("--limit", type=click.IntRange(0), default=1000, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
def groups(
    redis_url: str | None,
    as_json: bool,
    sort_by: str,
    desc: bool,
    state: str | None,
    name_contains: str | None,
    type_: str | None,
    limit: int,
    offset: int,
) -> None:
    """List the groups kept in Redis."""
    store = _store(redis_url)
    total, rows = store.list_groups(sort_by, desc, state, name_contains, type_, offset, limit)
    if as_json:
        out = {"total": total, "counts": store.fleet_counts(), "freshness": store.freshness(), "groups": rows}
        json.dump(out, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return
    if not total:
        click.echo("no groups in Redis yet: is the collector running (groupscope collect / replay)?")
        return
    hdr = (
        f"{'GROUP':<40} {'TYPE':<8} {'STATE':<20} {'MEMB':>4} {'GEN':>5} {'PROTOCOL':<18} "
        f"{'LAG':>10} {'LAG_S':>8} {'REB/H':>5} {'REFRESHED':>9}"
    )
    click.echo(hdr)
    for r in rows:
        gen = r["generation"] if r["generation"] is not None else r.get("group_epoch")
        click.echo(
            f"{r['name'][:40]:<40} {r['type'] or '-'!s:<8} {r['state']:<20} {r['members']:>4} "
            f"{'-' if gen is None else gen:>5} {str(r['protocol'] or '-')[:18]:<18} {r['lag']:>10} "
            f"{r['lag_seconds']:>8.1f} {r['rebalances_1h']:>5} {_age(r['last_refreshed']):>9}"
        )
    if total > len(rows):
        click.echo(f"... {total - offset - len(rows)} more (use --offset/--limit)")


@click.command()
@click.argument("name")
@redis_option
@click.option(
    "--json", "as_json", is_flag=True, help="The same JSON document `groupscope model --json` prints."
)
def group(name: str, redis_url: str | None, as_json: bool) -> None:
    """Print one group's reconstruction from Redis."""
    store = _store(redis_url)
    doc = store.get_group(name)
    if doc is None:
        raise click.ClickException(f"group {name!r} is not in Redis (see `groupscope groups`)")
    if as_json:
        json.dump(doc, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return
    from coordinator_model.render import render_group

    click.echo(render_group(doc))
    fresh = store.freshness([name])
    click.echo(f"last refreshed: {_age(fresh['groups'].get(name))} ago")
