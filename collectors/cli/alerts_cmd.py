"""`groupscope alerts evaluate|list` and `groupscope worker` (Celery worker with embedded beat)."""

from __future__ import annotations

import json
import sys

import click

from collectors.cli.options import redis_option, settings_from


def _client(url: str):  # type: ignore[no-untyped-def]
    import redis

    return redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5)


def _fail(msg: str) -> None:
    click.echo(f"groupscope: {msg}", err=True)
    raise SystemExit(1)


@click.group()
def alerts() -> None:
    """Evaluate and list alerts."""


@alerts.command("evaluate")
@redis_option
@click.option("--at", "at_ms", type=int, default=None, metavar="MS", help="Evaluate as of this moment.")
@click.option("--full", is_flag=True, help="Re-judge every group, not only the ones that changed.")
@click.option("--no-notify", is_flag=True, help="Record transitions without sending notifications.")
@click.option("--json", "as_json", is_flag=True, help="Print the cycle summary and transitions as JSON.")
def evaluate(redis_url: str | None, at_ms: int | None, full: bool, no_notify: bool, as_json: bool) -> None:
    """Run one evaluation cycle now (or as of --at MS, epoch milliseconds, over the stored history)."""
    import redis

    from collectors.alerts.config import load_alert_config
    from collectors.alerts.evaluate import Evaluator
    from collectors.alerts.notify import ThreadDispatcher, build_notifier

    settings = settings_from(redis_url=redis_url)
    try:
        config = load_alert_config(settings)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    if at_ms is not None and at_ms < 0:
        raise click.UsageError("--at must be epoch milliseconds (>= 0)")
    try:
        evaluator = Evaluator(
            _client(settings.redis_url), config, history_retention_ms=settings.retention_s * 1000
        )
        result = evaluator.run_cycle(at_ms=at_ms, full=full)
    except redis.RedisError as e:
        _fail(f"cannot evaluate: Redis at {settings.redis_url}: {e}")
        return
    if result.skipped_locked:
        _fail("another evaluation cycle is running (lock gs:alerts:lock); try again")
    events = [{"event": t.event, "alert": t.alert} for t in result.transitions]
    if not config.notify.get("resolved", True):
        events = [e for e in events if e["event"] == "firing"]
    undelivered: dict[str, int] = {}
    if events and config.notifiers and not no_notify:
        timeout = float(config.notify.get("timeout_s", 5.0))
        dispatcher = ThreadDispatcher(
            [build_notifier(n, timeout) for n in config.notifiers],
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
    summary = result.summary()
    if as_json:
        click.echo(json.dumps({"cycle": summary, "transitions": events}, default=str))
    else:
        click.echo(
            f"evaluated {result.evaluated}/{result.groups_total} groups at {result.now_ms} in "
            f"{result.duration_s * 1000:.0f} ms: {result.fired} fired, {result.resolved} resolved, "
            f"{result.active} active"
        )
    for name, n in undelivered.items():
        click.echo(f"groupscope: notifier {name}: {n} notification(s) not delivered", err=True)


@alerts.command("list")
@redis_option
@click.option("--json", "as_json", is_flag=True, help='Print {"active": [...], "history": [...]}.')
@click.option("--group", default=None, help="Only this group.")
@click.option("--rule", default=None, help="Only this rule.")
@click.option("--state", type=click.Choice(["firing", "resolved"]), default=None, help="History filter.")
@click.option("--limit", type=click.IntRange(min=1), default=500, show_default=True)
def list_(
    redis_url: str | None, as_json: bool, group: str | None, rule: str | None, state: str | None, limit: int
) -> None:
    """Print active alerts and history."""
    import redis

    from collectors.alerts.store import AlertStore

    settings = settings_from(redis_url=redis_url)
    store = AlertStore(_client(settings.redis_url))
    try:
        active = [] if state == "resolved" else store.active(group=group, rule=rule)
        history = store.history(group=group, rule=rule, state=state, limit=limit)
    except redis.RedisError as e:
        _fail(f"cannot read alerts: Redis at {settings.redis_url}: {e}")
        return
    if as_json:
        click.echo(json.dumps({"active": active, "history": history}, default=str))
        return
    click.echo(f"active ({len(active)}):")
    for a in active:
        click.echo(f"  {a['severity']:8} {a['rule']:16} {a['group']}  since {a['since']}  {a['summary']}")
    click.echo(f"history ({len(history)}):")
    for a in history:
        click.echo(
            f"  {a['state']:8} {a['rule']:16} {a['group']}  {a['since']} .. {a.get('until') or '-'}  "
            f"{a['summary']}"
        )


@click.command()
@redis_option
@click.option(
    "--interval", "interval_s", type=float, default=None, help="Seconds between cycles (default 5)."
)
@click.option("--metrics-port", type=int, default=None, help="Serve Prometheus /metrics on this port.")
@click.option("--metrics-host", default="0.0.0.0", show_default=True)
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--loglevel", default="INFO", show_default=True)
def worker(
    redis_url: str | None,
    interval_s: float | None,
    metrics_port: int | None,
    metrics_host: str,
    concurrency: int,
    loglevel: str,
) -> None:
    """Run the Celery worker with embedded beat: evaluate alerts every few seconds, send notifications,
    and optionally serve /metrics."""
    from collectors.alerts.config import load_alert_config
    from collectors.alerts.tasks import run_worker

    settings = settings_from(redis_url=redis_url)
    try:
        config = load_alert_config(settings)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    interval = interval_s if interval_s is not None else settings.alerts_interval_s
    if interval <= 0:
        raise click.UsageError("--interval must be positive")
    if metrics_port is not None:
        from collectors.alerts.metrics import start_metrics_server

        try:
            start_metrics_server(
                metrics_port,
                settings.redis_url,
                addr=metrics_host,
                per_partition=settings.metrics_per_partition,
            )
        except OSError as e:
            raise click.UsageError(f"cannot serve metrics on port {metrics_port}: {e.strerror}") from e
        click.echo(f"groupscope: metrics on http://{metrics_host}:{metrics_port}/metrics", err=True)
    sys.exit(
        run_worker(
            settings.redis_url,
            config,
            interval_s=interval,
            concurrency=concurrency,
            loglevel=loglevel,
            retention_ms=settings.retention_s * 1000,
        )
    )
