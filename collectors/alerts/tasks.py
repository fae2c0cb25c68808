"""The Celery app of `groupscope worker`: beat schedules an evaluation cycle every few seconds, and each
notification is its own task, retried with exponential backoff, so a failing channel holds up nothing.

Redis is the broker (the same Redis the collector writes). Tasks go to the `groupscope-alerts` queue,
so a Celery worker of the dashboard (background callbacks) on the same Redis never takes them.

A cycle evaluates every Kafka cluster of that Redis (collectors/alerts/cluster_cycle.py, ClusterEvaluator):
the registry's clusters, read again each cycle, and the configured ones.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable
from typing import Any

from celery import Celery

from collectors.alerts.cluster_cycle import ClusterEvaluator
from collectors.alerts.notifiers import build_notifier
from collectors.alerts.notify import Notifier, NotifyError, backoff_delay, make_event
from collectors.redis_tls import celery_tls_conf
from coordinator_model.alert_rules import AlertConfig

log = logging.getLogger(__name__)

QUEUE = "groupscope-alerts"
EVALUATE = "groupscope.alerts.evaluate"
NOTIFY = "groupscope.alerts.notify"

app = Celery("groupscope")
app.conf.update(
    task_default_queue=QUEUE,
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    worker_prefetch_multiplier=4,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    timezone="UTC",
)


class _Runtime:
    """What the tasks need, set once by `configure` in the worker process."""

    redis_url: str = ""
    prefix: str = "gs"  # the base prefix: cluster NAME's keys are under gs@NAME
    clusters: tuple[str, ...] = ()  # the configured clusters (the registry adds the others)
    config: AlertConfig = AlertConfig()
    notifiers: dict[str, Notifier] = {}  # noqa: RUF012 - replaced as a whole by configure()
    evaluator: ClusterEvaluator | None = None
    retention_ms: int = 7 * 24 * 3600 * 1000


def configure(
    redis_url: str,
    config: AlertConfig,
    interval_s: float = 5.0,
    prefix: str = "gs",
    retention_ms: int = 7 * 24 * 3600 * 1000,
    clusters: Iterable[str] = (),
) -> Celery:
    app.conf.broker_url = redis_url
    # rediss:// gets TLS with the certificate verified, as redis-py does (kombu alone would not verify)
    tls = celery_tls_conf(redis_url)
    app.conf.broker_use_ssl = tls.get("broker_use_ssl", False)
    app.conf.beat_schedule = {
        "groupscope-evaluate": {
            "task": EVALUATE,
            "schedule": float(interval_s),
            # A cycle that could not start within two intervals is stale: the next one replaces it.
            "options": {"queue": QUEUE, "expires": max(2.0, 2 * float(interval_s))},
        }
    }
    _Runtime.redis_url = redis_url
    _Runtime.prefix = prefix
    _Runtime.clusters = tuple(clusters)
    _Runtime.retention_ms = retention_ms
    _Runtime.config = config
    _Runtime.notifiers = {
        n["name"]: build_notifier(n, float(config.notify.get("timeout_s", 5.0))) for n in config.notifiers
    }
    _Runtime.evaluator = None
    return app


def _evaluator() -> ClusterEvaluator:
    if _Runtime.evaluator is None:
        import redis

        client = redis.Redis.from_url(_Runtime.redis_url, socket_timeout=30, socket_connect_timeout=5)
        _Runtime.evaluator = ClusterEvaluator(
            client,
            _Runtime.config,
            configured=_Runtime.clusters,
            base=_Runtime.prefix,
            history_retention_ms=_Runtime.retention_ms,
        )
    return _Runtime.evaluator


def enqueue_notifications(transitions: list[Any]) -> int:
    """One notify task per (channel, event) the channel wants."""
    sent = 0
    for t in transitions:
        event = make_event(t.event, t.alert)
        if t.event == "resolved" and not _Runtime.config.notify.get("resolved", True):
            continue
        for name, n in _Runtime.notifiers.items():
            if n.wants(event):
                notify_task.apply_async(args=(name, event), queue=QUEUE)
                sent += 1
    return sent


@app.task(name=EVALUATE, ignore_result=True)
def evaluate_task(at_ms: int | None = None) -> dict[str, Any]:
    from collectors.alerts.alertmanager import resend_in_background

    evaluator = _evaluator()
    result = evaluator.run_cycle(at_ms=at_ms)
    summary = result.summary()
    summary["notifications"] = enqueue_notifications(result.transitions)
    # Alertmanager forgets a firing alert not posted again within its endsAt: each Alertmanager
    # notifier posts every firing alert again every `resend_s`
    resend_in_background(evaluator.r, _Runtime.notifiers.values(), list(result.cycles), evaluator.base)
    if summary["fired"] or summary["resolved"] or result.errors:
        log.info("alerts: %s", summary)
    return summary


@app.task(name=NOTIFY, bind=True, ignore_result=True, max_retries=None)
def notify_task(self: Any, channel: str, event: dict[str, Any]) -> bool:
    notifier = _Runtime.notifiers.get(channel)
    if notifier is None:
        log.error("notify: no channel named %s in the configuration", channel)
        return False
    try:
        notifier.send(event)
        return True
    except NotifyError as e:
        retries = int(_Runtime.config.notify.get("retries", 5))
        attempt = self.request.retries
        if attempt >= retries:
            log.error("notify %s: gave up after %d attempts: %s", channel, attempt + 1, e)
            return False
        delay = backoff_delay(attempt, float(_Runtime.config.notify.get("backoff_s", 1.0)))
        log.warning("notify %s failed (%s); retry %d in %.1f s", channel, e, attempt + 1, delay)
        raise self.retry(exc=e, countdown=delay) from e


def run_worker(
    redis_url: str,
    config: AlertConfig,
    interval_s: float = 5.0,
    concurrency: int = 4,
    loglevel: str = "INFO",
    prefix: str = "gs",
    retention_ms: int = 7 * 24 * 3600 * 1000,
    clusters: Iterable[str] = (),
) -> int:
    """Run the worker with embedded beat until stopped (SIGTERM/SIGINT: warm shutdown)."""
    configure(redis_url, config, interval_s, prefix, retention_ms, clusters)
    schedule_dir = tempfile.mkdtemp(prefix="groupscope-beat-")
    worker = app.Worker(
        beat=True,
        pool="threads",
        concurrency=concurrency,
        loglevel=loglevel,
        queues=[QUEUE],
        schedule_filename=os.path.join(schedule_dir, "schedule"),
        without_gossip=True,
        without_mingle=True,
        quiet=True,
    )
    worker.start()
    return int(worker.exitcode or 0)
