"""Notifiers: a generic JSON webhook, a Slack-compatible webhook, email over SMTP, and Prometheus
Alertmanager's API v2 (collectors/alerts/alertmanager.py), which is where routing, grouping, silences
and inhibition belong: these channels send every event they want, Alertmanager decides who hears it.

Each channel sends one event (an alert that started firing or was resolved) and raises on failure;
`send_with_retry` retries with exponential backoff. Channels never share a thread: under the worker
each (channel, event) is its own Celery task (collectors/alerts/tasks.py), and from the CLI
`ThreadDispatcher` gives each channel its own thread, so a dead webhook delays nobody else and never
the evaluation.

Every message names the Kafka cluster of its alert (the same group name can exist in two clusters):
in the title and text, and as `cluster` in structured payloads.
"""

from __future__ import annotations

import json
import logging
import smtplib
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from collectors.config import DEFAULT_CLUSTER
from collectors.redact import redact

log = logging.getLogger(__name__)


class NotifyError(RuntimeError):
    """A channel could not deliver an event (the message says which channel and why)."""


def make_event(event: str, alert: dict[str, Any]) -> dict[str, Any]:
    """What a channel sends for one transition: `{"event", "cluster", "alert"}`."""
    return {"event": event, "cluster": alert.get("cluster") or DEFAULT_CLUSTER, "alert": alert}


def cluster_of(event: dict[str, Any]) -> str:
    """The event's cluster (`default` for an event queued before alerts carried their cluster)."""
    return str(event.get("cluster") or event["alert"].get("cluster") or DEFAULT_CLUSTER)


def _title(event: dict[str, Any]) -> str:
    a = event["alert"]
    word = "FIRING" if event["event"] == "firing" else "RESOLVED"
    # "[groupscope]" first as before, so mail filters on it keep working; the cluster after the
    # group, which alone is ambiguous when two clusters have a group of that name.
    return (
        f"[groupscope] {word} {a['rule']} on {a['group']} in cluster {cluster_of(event)} "
        f"({a.get('severity', 'warning')})"
    )


def _text(event: dict[str, Any]) -> str:
    a = event["alert"]
    lines = [_title(event), "", a.get("summary", ""), f"cluster: {cluster_of(event)}", f"since: {a['since']}"]
    if a.get("until") is not None:
        lines.append(f"until: {a['until']}")
    lines += ["", "evidence:", json.dumps(a.get("evidence", {}), indent=2, sort_keys=True, default=str)]
    return "\n".join(lines)


@dataclass
class Notifier:
    name: str
    timeout_s: float = 5.0
    events: tuple[str, ...] = ("firing", "resolved")
    rules: tuple[str, ...] = ()  # only these rules (empty: all)
    min_severity: str = "info"
    clusters: tuple[str, ...] = ()  # only alerts of these Kafka clusters (empty: all)

    def wants(self, event: dict[str, Any]) -> bool:
        order = {"info": 0, "warning": 1, "critical": 2}
        a = event["alert"]
        return (
            event["event"] in self.events
            and (not self.rules or a["rule"] in self.rules)
            and (not self.clusters or cluster_of(event) in self.clusters)
            and order.get(a.get("severity", "warning"), 1) >= order.get(self.min_severity, 0)
        )

    def send(self, event: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _post_json(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float, name: str) -> None:
    data = json.dumps(body, default=str).encode()
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    # A webhook URL is a secret (Slack's path token, a ?token= query, user:password): the errors name
    # it redacted, and they reach logs, the CLI and Celery's task results.
    shown = redact(url)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            if resp.status >= 300:
                raise NotifyError(f"{name}: HTTP {resp.status} from {shown}")
    except urllib.error.HTTPError as e:
        raise NotifyError(f"{name}: HTTP {e.code} from {shown}") from e
    except (urllib.error.URLError, OSError) as e:
        # the reason too: an error of the URL's own parsing may quote it
        raise NotifyError(redact(f"{name}: cannot reach {shown}: {getattr(e, 'reason', e)}")) from e


@dataclass
class WebhookNotifier(Notifier):
    """POSTs `{"event": "firing"|"resolved", "cluster": ..., "alert": {..., "cluster": ...}}` as JSON."""

    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def send(self, event: dict[str, Any]) -> None:
        cluster = cluster_of(event)
        _post_json(
            self.url,
            {"event": event["event"], "cluster": cluster, "alert": {**event["alert"], "cluster": cluster}},
            self.headers,
            self.timeout_s,
            self.name,
        )


@dataclass
class SlackNotifier(Notifier):
    """Slack incoming-webhook payload (`text` plus one attachment); Mattermost and others accept it."""

    url: str = ""
    channel: str | None = None
    username: str = "groupscope"

    def send(self, event: dict[str, Any]) -> None:
        a = event["alert"]
        color = (
            "good"
            if event["event"] == "resolved"
            else ("danger" if a.get("severity") == "critical" else "warning")
        )
        body: dict[str, Any] = {
            "username": self.username,
            "text": _title(event),
            "attachments": [
                {
                    "color": color,
                    "title": f"{a['rule']} on {a['group']} in cluster {cluster_of(event)}",
                    "text": a.get("summary", ""),
                    "fields": [
                        {"title": "cluster", "value": cluster_of(event), "short": True},
                        {"title": "state", "value": a["state"], "short": True},
                        {"title": "since", "value": str(a["since"]), "short": True},
                    ],
                }
            ],
        }
        if self.channel:
            body["channel"] = self.channel
        _post_json(self.url, body, {}, self.timeout_s, self.name)


@dataclass
class EmailNotifier(Notifier):
    host: str = "localhost"
    port: int = 25
    sender: str = "groupscope@localhost"
    to: tuple[str, ...] = ()
    starttls: bool = False
    ssl: bool = False
    username: str | None = None
    password: str | None = None

    def send(self, event: dict[str, Any]) -> None:
        msg = EmailMessage()
        msg["Subject"] = _title(event)
        msg["From"] = self.sender
        msg["To"] = ", ".join(self.to)
        msg["X-Groupscope-Cluster"] = cluster_of(event)  # for mail rules that sort by cluster
        msg.set_content(_text(event))
        try:
            cls = smtplib.SMTP_SSL if self.ssl else smtplib.SMTP
            with cls(self.host, self.port, timeout=self.timeout_s) as smtp:
                if self.starttls:
                    smtp.starttls()
                if self.username:
                    smtp.login(self.username, self.password or "")
                smtp.send_message(msg)
        except (smtplib.SMTPException, OSError) as e:
            raise NotifyError(f"{self.name}: SMTP {self.host}:{self.port}: {e}") from e


def backoff_delay(attempt: int, base_s: float, cap_s: float = 300.0) -> float:
    """Seconds before retry number `attempt` (0-based): base, 2 base, 4 base, ... capped."""
    return min(cap_s, base_s * (2**attempt))


def send_with_retry(
    notifier: Notifier,
    event: dict[str, Any],
    retries: int,
    backoff_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Send, retrying up to `retries` times with exponential backoff. Returns attempts used; raises
    NotifyError after the last failure."""
    attempt = 0
    while True:
        try:
            notifier.send(event)
            return attempt + 1
        except NotifyError as e:
            if attempt >= retries:
                # redacted again: a channel's own NotifyError (not _post_json's) may name its URL
                log.error(
                    "notifier %s gave up after %d attempts: %s", notifier.name, attempt + 1, redact(str(e))
                )
                raise
            delay = backoff_delay(attempt, backoff_s)
            log.warning(
                "notifier %s failed (%s); retry %d in %.1f s",
                notifier.name,
                redact(str(e)),
                attempt + 1,
                delay,
            )
            sleep(delay)
            attempt += 1


class ThreadDispatcher:
    """Deliver events with one thread per channel (for the CLI, where there is no worker)."""

    def __init__(self, notifiers: list[Notifier], retries: int = 5, backoff_s: float = 1.0) -> None:
        self.notifiers = notifiers
        self.retries = retries
        self.backoff_s = backoff_s
        self.threads: list[threading.Thread] = []
        self.delivered: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self._lock = threading.Lock()

    def _run(self, notifier: Notifier, events: list[dict[str, Any]]) -> None:
        for event in events:
            try:
                send_with_retry(notifier, event, self.retries, self.backoff_s)
                outcome = self.delivered
            except NotifyError:
                outcome = self.failed
            with self._lock:
                outcome[notifier.name] = outcome.get(notifier.name, 0) + 1

    def dispatch(self, events: list[dict[str, Any]]) -> None:
        for n in self.notifiers:
            wanted = [e for e in events if n.wants(e)]
            if wanted:
                t = threading.Thread(target=self._run, args=(n, wanted), name=f"notify-{n.name}", daemon=True)
                t.start()
                self.threads.append(t)

    def pending(self) -> list[str]:
        """Channels still sending (retrying) now."""
        return [t.name.removeprefix("notify-") for t in self.threads if t.is_alive()]

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for every channel (at most timeout_s in all). True when all finished."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for t in self.threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)
