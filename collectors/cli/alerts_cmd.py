"""`groupscope alerts evaluate|list` and `groupscope worker` (Celery worker with embedded beat)."""

from __future__ import annotations

import json
import sys

import click

from collectors.command_options import redis_option, settings_from
from collectors.endpoints import OPEN_FLAG, OPEN_HELP, is_loopback, open_bind_error
from collectors.redact import redact


def _client(url: str):  # type: ignore[no-untyped-def]
    import redis

    return redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5)


def _fail(msg: str) -> None:
    # a message may name the Redis URL, password and all (redis://:PASSWORD@host): never print that
    click.echo(f"groupscope: {redact(msg)}", err=True)
    raise SystemExit(1)


@click.group()
def alerts() -> None:
    """Evaluate and list alerts."""


cluster_option = click.option(
    "--cluster",
    "cluster",
    metavar="NAME",
    default=None,
    help="Only this Kafka cluster. Default: every cluster (with data in Redis, or configured).",
)


def _clusters(client, settings, cluster: str | None) -> list[str]:  # type: ignore[no-untyped-def]
    """The clusters a command works on: `--cluster NAME`, else every known one. A name that is
    neither known to the registry nor configured is refused (a typo would show nothing)."""
    from collectors.alerts.clusters import cluster_names
    from collectors.config import ConfigError, check_cluster_name

    known = cluster_names(client, settings.cluster_names())
    if cluster is None:
        return known
    try:
        check_cluster_name(cluster)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    if cluster not in known:
        raise click.UsageError(
            f"no cluster {cluster!r} in Redis or the configuration (known: {', '.join(known)})"
        )
    return [cluster]


@alerts.command("evaluate")
@redis_option
@cluster_option
@click.option("--at", "at_ms", type=int, default=None, metavar="MS", help="Evaluate as of this moment.")
@click.option("--full", is_flag=True, help="Re-judge every group, not only the ones that changed.")
@click.option("--no-notify", is_flag=True, help="Record transitions without sending notifications.")
@click.option("--json", "as_json", is_flag=True, help="Print the cycle summary and transitions as JSON.")
def evaluate(
    redis_url: str | None, cluster: str | None, at_ms: int | None, full: bool, no_notify: bool, as_json: bool
) -> None:
    """Run one evaluation cycle now (or as of --at MS, epoch milliseconds, over the stored history),
    over every Kafka cluster (or --cluster NAME). A cluster whose data cannot be read is reported and
    the others are evaluated all the same (exit status 1)."""
    import redis

    from collectors.alerts.cluster_cycle import ClusterEvaluator
    from collectors.alerts.config import load_alert_config
    from collectors.alerts.notifiers import build_notifier
    from collectors.alerts.notify import ThreadDispatcher, make_event
    from collectors.storage.alerts import AlertStore
    from collectors.storage.clusters import cluster_prefix

    settings = settings_from(redis_url=redis_url)
    try:
        config = load_alert_config(settings)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    if at_ms is not None and at_ms < 0:
        raise click.UsageError("--at must be epoch milliseconds (>= 0)")
    client = _client(settings.redis_url)
    try:
        only = _clusters(client, settings, cluster)[0] if cluster is not None else None
        evaluator = ClusterEvaluator(
            client,
            config,
            configured=settings.cluster_names(),
            only=only,
            history_retention_ms=settings.retention_s * 1000,
        )
        result = evaluator.run_cycle(at_ms=at_ms, full=full)
    except redis.RedisError as e:
        _fail(f"cannot evaluate: Redis at {settings.redis_url}: {e}")
        return
    events = [make_event(t.event, t.alert) for t in result.transitions]
    if not config.notify.get("resolved", True):
        events = [e for e in events if e["event"] == "firing"]
    undelivered: dict[str, int] = {}
    timeout = float(config.notify.get("timeout_s", 5.0))
    notifiers = [build_notifier(n, timeout) for n in config.notifiers] if not no_notify else []
    # The clusters that were evaluated notify even when another one failed or was locked.
    if events and notifiers:
        dispatcher = ThreadDispatcher(
            notifiers,
            retries=int(config.notify.get("retries", 5)),
            backoff_s=float(config.notify.get("backoff_s", 1.0)),
        )
        dispatcher.dispatch(events)
        dispatcher.join(timeout_s=float(config.notify.get("cli_wait_s", 60.0)))
        undelivered = dict(dispatcher.failed)
        for name in dispatcher.pending():
            click.echo(
                f"groupscope: notifier {name}: still retrying when the command gave up waiting", err=True
            )
    if notifiers:
        from collectors.alerts.alertmanager import resend_active

        # Alertmanager forgets a firing alert nobody posts again: each run (cron) posts them all
        resend_active(client, notifiers, list(result.cycles), evaluator.base, force=True)
    summary = result.summary()
    if as_json:
        click.echo(json.dumps({"cycle": summary, "transitions": events}, default=str))
    else:
        for name, c in result.cycles.items():
            if c.skipped_locked:
                continue
            click.echo(
                f"cluster {name}: evaluated {c.evaluated}/{c.groups_total} groups at {c.now_ms} in "
                f"{c.duration_s * 1000:.0f} ms: {c.fired} fired, {c.resolved} resolved, {c.active} active"
            )
    for name, n in undelivered.items():
        click.echo(f"groupscope: notifier {name}: {n} notification(s) not delivered", err=True)
    for name, why in result.errors.items():
        click.echo(f"groupscope: cluster {name}: cannot evaluate: {why}", err=True)
    for name in result.locked:
        click.echo(
            f"groupscope: cluster {name}: another evaluation cycle is running "
            f"(lock {AlertStore(client, prefix=cluster_prefix(name)).lock_key}); try again",
            err=True,
        )
    if result.errors or result.locked:
        raise SystemExit(1)


@alerts.command("list")
@redis_option
@cluster_option
@click.option("--json", "as_json", is_flag=True, help='Print {"active": [...], "history": [...]}.')
@click.option("--group", default=None, help="Only this group.")
@click.option("--rule", default=None, help="Only this rule.")
@click.option("--state", type=click.Choice(["firing", "resolved"]), default=None, help="History filter.")
@click.option("--limit", type=click.IntRange(min=1), default=500, show_default=True)
def list_(
    redis_url: str | None,
    cluster: str | None,
    as_json: bool,
    group: str | None,
    rule: str | None,
    state: str | None,
    limit: int,
) -> None:
    """Print active alerts and history of every Kafka cluster (or --cluster NAME), newest first; each
    alert carries its `cluster`."""
    import redis

    from collectors.storage.alerts import AlertStore
    from collectors.storage.clusters import cluster_prefix

    settings = settings_from(redis_url=redis_url)
    client = _client(settings.redis_url)
    active: list[dict] = []
    history: list[dict] = []
    failed: dict[str, str] = {}
    try:
        names = _clusters(client, settings, cluster)
    except redis.RedisError as e:
        _fail(f"cannot read alerts: Redis at {settings.redis_url}: {e}")
        return
    for name in names:
        store = AlertStore(client, prefix=cluster_prefix(name), cluster=name)
        try:
            active += [] if state == "resolved" else store.active(group=group, rule=rule)
            history += store.history(group=group, rule=rule, state=state, limit=limit)
        except (redis.RedisError, ValueError) as e:  # one cluster's broken keys: list the others
            failed[name] = str(e)
    if failed and len(failed) == len(names):
        _fail("cannot read alerts: " + "; ".join(f"cluster {n}: {why}" for n, why in failed.items()))
        return
    # Newest first across clusters, as each store gives its own.
    active.sort(key=lambda a: (-int(a["since"]), a["cluster"], a["group"], a["rule"]))
    history.sort(key=lambda a: -int(a["since"]))
    history = history[:limit]
    if as_json:
        click.echo(json.dumps({"active": active, "history": history}, default=str))
    else:
        width = max([7, *(len(a["cluster"]) for a in active + history)])
        click.echo(f"active ({len(active)}):")
        if active:
            click.echo(f"  {'CLUSTER':{width}} {'SEVERITY':8} {'RULE':16} GROUP  SINCE  SUMMARY")
        for a in active:
            click.echo(
                f"  {a['cluster']:{width}} {a['severity']:8} {a['rule']:16} {a['group']}  "
                f"since {a['since']}  {a['summary']}"
            )
        click.echo(f"history ({len(history)}):")
        if history:
            click.echo(f"  {'CLUSTER':{width}} {'STATE':8} {'RULE':16} GROUP  SINCE .. UNTIL  SUMMARY")
        for a in history:
            click.echo(
                f"  {a['cluster']:{width}} {a['state']:8} {a['rule']:16} {a['group']}  {a['since']} .. "
                f"{a.get('until') or '-'}  {a['summary']}"
            )
    for name, why in failed.items():
        click.echo(f"groupscope: cluster {name}: cannot read alerts: {why}", err=True)
    if failed:
        raise SystemExit(1)


@click.command()
@redis_option
@click.option(
    "--interval", "interval_s", type=float, default=None, help="Seconds between cycles (default 5)."
)
@click.option("--metrics-port", type=int, default=None, help="Serve Prometheus /metrics on this port.")
@click.option(
    "--metrics-host",
    metavar="HOST",
    default=None,
    help="Address /metrics listens on (default: metrics_host, 127.0.0.1). Any other address needs "
    "dashboard_user and dashboard_password (basic authentication, then asked of every scrape) or "
    f"{OPEN_FLAG}.",
)
@click.option(OPEN_FLAG, "allow_open_bind", is_flag=True, help=OPEN_HELP)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--loglevel", default="INFO", show_default=True)
def worker(
    redis_url: str | None,
    interval_s: float | None,
    metrics_port: int | None,
    metrics_host: str | None,
    allow_open_bind: bool,
    concurrency: int,
    loglevel: str,
) -> None:
    """Run the Celery worker with embedded beat: evaluate alerts of every Kafka cluster every few
    seconds, send notifications, and optionally serve /metrics (every cluster, labelled).

    /metrics listens on 127.0.0.1 by default and asks for basic authentication when dashboard_user
    and dashboard_password are set; another address needs them, or --allow-open-bind."""
    from collectors.alerts.config import load_alert_config
    from collectors.alerts.tasks import run_worker

    settings = settings_from(
        redis_url=redis_url, metrics_host=metrics_host, allow_open_bind=True if allow_open_bind else None
    )
    auth = settings.basic_auth()
    if metrics_port is not None:
        why = open_bind_error(
            settings.metrics_host, what="/metrics", auth=auth is not None, allow_open=settings.allow_open_bind
        )
        if why:
            raise click.UsageError(why)
    try:
        config = load_alert_config(settings)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    interval = interval_s if interval_s is not None else settings.alerts_interval_s
    if interval <= 0:
        raise click.UsageError("--interval must be positive")
    if metrics_port is not None:
        from collectors.exporter.server import start_metrics_server

        host = settings.metrics_host
        try:
            start_metrics_server(
                metrics_port,
                settings.redis_url,
                addr=host,
                per_partition=settings.metrics_per_partition,
                clusters=settings.cluster_names(),
                basic_auth=auth,
                config=config,  # the statuses (storm, flapping, lagging) are these rules'
            )
        except OSError as e:
            raise click.UsageError(f"cannot serve metrics on {host} port {metrics_port}: {e.strerror}") from e
        where = f"[{host}]" if ":" in host else host
        guard = "basic authentication" if auth else "no authentication"
        click.echo(f"groupscope: metrics on http://{where}:{metrics_port}/metrics ({guard})", err=True)
        if auth is None and not is_loopback(host):
            click.echo(f"groupscope: /metrics is open to anyone who can reach {host} ({OPEN_FLAG})", err=True)
    sys.exit(
        run_worker(
            settings.redis_url,
            config,
            interval_s=interval,
            concurrency=concurrency,
            loglevel=loglevel,
            retention_ms=settings.retention_s * 1000,
            clusters=settings.cluster_names(),
        )
    )
