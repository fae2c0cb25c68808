"""`groupscope groups` and `groupscope group NAME`: what the collector keeps in Redis.

The statuses they show (in a rebalance storm, flapping, lagging) are the alert rules', under the
alert configuration (alerts_file, or the config file's `alerts:`): coordinator_model/statuses.py."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import click

from collectors.cli.times import ago
from collectors.command_options import redis_option, settings_from
from collectors.config import DEFAULT_CLUSTER, ConfigError, Settings, check_cluster_name, one_cluster
from collectors.redact import redact
from collectors.storage.clusters import ClusterRegistry, cluster_prefix, list_groups_across
from collectors.storage.fleet_rows import SORT_KEYS
from collectors.storage.redis_store import RedisStore

cluster_option = click.option(
    "--cluster",
    default=None,
    metavar="NAME",
    help="Only this Kafka cluster (default: every cluster with data in this Redis).",
)
# one group's command: the cluster it is looked up in (`_find_group`)
group_cluster_option = click.option(
    "--cluster",
    default=None,
    metavar="NAME",
    help="The group's cluster (default: the only cluster that has a group of that name, else `default`).",
)


@dataclass
class Clusters:
    """The clusters a read command sees: registry (collectors that ran) and configured ones."""

    settings: Settings
    client: Any
    names: list[str]
    _alert_config: Any = field(default=None, repr=False)

    def alert_config(self, cluster: str) -> Any:
        """The alert rules of `cluster` (AlertConfig.for_cluster), which define the statuses."""
        if self._alert_config is None:
            from collectors.alerts.config import load_alert_config

            try:
                self._alert_config = load_alert_config(self.settings)
            except ConfigError as e:
                raise click.UsageError(str(e)) from e
        return self._alert_config.for_cluster(cluster)

    def statuses(self, stores: dict[str, RedisStore], now_ms: int) -> dict[str, Any]:
        """cluster -> its FleetStatuses at now_ms (collectors/alerts/fleet_statuses.py)."""
        from collectors.alerts.fleet_statuses import read_statuses

        return {n: read_statuses(st, self.alert_config(n), now_ms) for n, st in stores.items()}

    def store(self, name: str) -> RedisStore:
        return RedisStore(
            self.client, prefix=cluster_prefix(name), retention_ms=self.settings.retention_s * 1000
        )

    def stores(self, only: str | None = None) -> dict[str, RedisStore]:
        return {n: self.store(n) for n in ([only] if only else self.names)}

    def one(self, name: str | None) -> str:
        """The cluster a single-cluster command reads: `name`, the `cluster` setting, the only one,
        else `default`."""
        found = one_cluster(self.names, name or self.settings.cluster)
        if found is not None:
            return found
        raise click.UsageError(f"several clusters ({', '.join(self.names)}): choose one with --cluster NAME")


def _clusters(redis_url: str | None, only: str | None = None) -> Clusters:
    import redis

    s = settings_from(redis_url=redis_url)
    if only is not None:
        try:
            check_cluster_name(only)
        except ConfigError as e:
            raise click.BadParameter(str(e), param_hint="--cluster") from e
    client = redis.Redis.from_url(s.redis_url, socket_timeout=10, socket_connect_timeout=5)
    try:
        names = ClusterRegistry(client).names(s.configured_clusters()) or [DEFAULT_CLUSTER]
    except redis.RedisError as e:
        # the URL may carry the password (redis://:PASSWORD@host): never print it
        raise click.ClickException(redact(f"cannot reach Redis at {s.redis_url}: {e}")) from e
    if only is not None and only not in names:
        known = ", ".join(names)
        raise click.ClickException(f"no cluster {only!r} in Redis or the configuration (known: {known})")
    return Clusters(s, client, names)


def _store(redis_url: str | None, cluster: str | None = None) -> RedisStore:
    """The store of one cluster (see Clusters.one)."""
    c = _clusters(redis_url, cluster)
    return c.store(c.one(cluster))


@click.command()
@redis_option
@cluster_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON document: per cluster counts and freshness, and the rows (each with its cluster).",
)
@click.option("--sort", "sort_by", type=click.Choice(SORT_KEYS), default="name", show_default=True)
@click.option("--desc", is_flag=True, help="Sort descending.")
@click.option("--state", default=None, help="Only groups in this state (e.g. Stable).")
@click.option("--name", "name_contains", default=None, help="Only groups whose name contains this.")
@click.option(
    "--type", "type_", default=None, help="Only groups of this type (classic, consumer, share, streams)."
)
@click.option("--limit", type=click.IntRange(0), default=1000, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0)
def groups(
    redis_url: str | None,
    cluster: str | None,
    as_json: bool,
    sort_by: str,
    desc: bool,
    state: str | None,
    name_contains: str | None,
    type_: str | None,
    limit: int,
    offset: int,
) -> None:
    """List the groups kept in Redis, of every cluster or one (--cluster)."""
    from coordinator_model.statuses import LABELS, STATUSES, definitions

    c = _clusters(redis_url, cluster)
    stores = c.stores(cluster)
    total, rows = list_groups_across(stores, sort_by, desc, state, name_contains, type_, offset, limit)
    found = c.statuses(stores, int(time.time() * 1000))
    for r in rows:
        r["statuses"] = [s for s in STATUSES if r["name"] in found[r["cluster"]].groups[s]]
    if as_json:
        out = {
            "total": total,
            "clusters": {
                n: {
                    "counts": _counts(st.fleet_counts(), found[n]),
                    "statuses": {s: sorted(found[n].groups[s]) for s in STATUSES},
                    "definitions": definitions(c.alert_config(n)),
                    "freshness": st.freshness(),
                }
                for n, st in stores.items()
            },
            "groups": rows,
        }
        json.dump(out, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return
    if not total:
        click.echo("no groups in Redis yet: is the collector running (groupscope collect / replay)?")
        return
    width = max([7, *(len(r["cluster"]) for r in rows)])
    hdr = (
        f"{'CLUSTER':<{width}} {'GROUP':<40} {'TYPE':<8} {'STATE':<20} {'MEMB':>4} {'GEN':>5} "
        f"{'PROTOCOL':<18} {'LAG':>10} {'LAG_S':>8} {'REB/H':>5} {'REFRESHED':>9} STATUS"
    )
    click.echo(hdr)
    provisional = 0
    for r in rows:
        gen = r["generation"] if r["generation"] is not None else r.get("group_epoch")
        # a group known only from the Admin API's first answers while the collector starts: its state
        # is marked, and its lag is not known yet
        mark = "*" if r.get("provisional") else ""
        provisional += bool(mark)
        lag, lag_s = (f"{r['lag']}", f"{r['lag_seconds']:.1f}") if not mark else ("-", "-")
        click.echo(
            f"{r['cluster']:<{width}} {r['name'][:40]:<40} {r['type'] or '-'!s:<8} {r['state'] + mark:<20} "
            f"{r['members']:>4} {'-' if gen is None else gen:>5} {str(r['protocol'] or '-')[:18]:<18} "
            f"{lag:>10} {lag_s:>8} {r['rebalances_1h']:>5} {ago(r['last_refreshed']):>9} "
            f"{','.join(r['statuses']) or '-'}"
        )
    if total > offset + len(rows):
        click.echo(f"... {total - offset - len(rows)} more (use --offset/--limit)")
    if provisional:
        click.echo(
            f"* {provisional} provisional: from the Admin API while the collector starts "
            "(history and lag follow with the pipeline's documents)"
        )
    for n, st in found.items():
        where = f"cluster {n}: " if len(found) > 1 else ""
        counts = ", ".join(f"{st.count(s)} {LABELS[s]}" for s in STATUSES)
        click.echo(f"{where}{counts} (the alert rules' definitions: `groupscope groups --json`)")


@click.command()
@click.argument("name")
@redis_option
@group_cluster_option
@click.option(
    "--json", "as_json", is_flag=True, help="The same JSON document `groupscope model --json` prints."
)
def group(name: str, redis_url: str | None, cluster: str | None, as_json: bool) -> None:
    """Print one group's reconstruction from Redis."""
    c = _clusters(redis_url, cluster)
    where, doc = _find_group(c, name, cluster)
    store = c.store(where)
    if as_json:
        json.dump(doc, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return
    from coordinator_model.document import DocumentError, GroupDocument
    from coordinator_model.render import render_group

    if len(c.names) > 1:
        click.echo(f"cluster {where}")
    from coordinator_model.statuses import LABELS, group_statuses

    try:
        typed = GroupDocument.from_json(doc)
        click.echo(render_group(typed))
    except DocumentError as exc:
        raise click.ClickException(f"{exc} (groupscope group {name} --json prints it as stored)") from exc
    st = group_statuses(typed, int(time.time() * 1000), c.alert_config(where))
    said = "; ".join(f"{LABELS[s]}: {st.found[s].summary}" for s in st.names)
    click.echo(f"status: {said or 'no storm, no flapping, not lagging'} (the alert rules)")
    fresh = store.freshness([name])
    click.echo(f"last refreshed: {ago(fresh['groups'].get(name))} ago")


def _counts(counts: dict[str, Any], found: Any) -> dict[str, Any]:
    """The store's fleet counts with its storms and lagging replaced by the statuses' (the alert
    rules', coordinator_model/statuses.py), and flapping added."""
    out = dict(counts)
    out.update(storms=found.count("storm"), flapping=found.count("flapping"), lagging=found.count("lagging"))
    return out


def _find_group(c: Clusters, name: str, cluster: str | None) -> tuple[str, dict[str, Any]]:
    """(cluster, document) of the group: in `cluster` when given; else in the only cluster that has
    it, or `default` (saying on stderr which other clusters have one too)."""
    if cluster or c.settings.cluster:
        where = c.one(cluster)
        doc = c.store(where).get_group(name)
        if doc is None:
            raise click.ClickException(f"group {name!r} is not in cluster {where} (see `groupscope groups`)")
        return where, doc
    found = {n: d for n in c.names if (d := c.store(n).get_group(name)) is not None}
    if not found:
        raise click.ClickException(f"group {name!r} is not in Redis (see `groupscope groups`)")
    if len(found) == 1:
        return next(iter(found.items()))
    if DEFAULT_CLUSTER not in found:
        raise click.UsageError(
            f"group {name!r} is in clusters {', '.join(found)}: choose one with --cluster NAME"
        )
    others = ", ".join(n for n in found if n != DEFAULT_CLUSTER)
    click.echo(f"groupscope: showing cluster {DEFAULT_CLUSTER}; also in {others} (--cluster NAME)", err=True)
    return DEFAULT_CLUSTER, found[DEFAULT_CLUSTER]
