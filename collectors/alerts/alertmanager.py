"""A notifier that hands groupscope's alerts to Prometheus Alertmanager (its API v2), which then does
the routing, grouping, silences, inhibition and the receivers (PagerDuty, Opsgenie, Slack, e-mail...).

An alert is posted to `POST {url}/api/v2/alerts` as Alertmanager's PostableAlert:

- labels: `alertname` (the rule: `lag`, `rebalance_storm`, ...), `cluster`, `group`, `severity`,
  `source="groupscope"`, and the notifier's own static `labels`;
- annotations: `summary` (the rule's summary), `description` (rule, group, cluster, severity, since),
  `alert_id` (groupscope's id of the episode) and `evidence` (its JSON, cut at 4,000 characters);
- `startsAt`: the alert's `since`; `endsAt`: its `until` once resolved; while it fires, now plus
  four resend periods, as Prometheus does: an alert groupscope stops re-posting (the worker stopped)
  resolves by itself in Alertmanager after that, instead of firing forever;
- `generatorURL`: the group's page on the dashboard when `dashboard_url` is configured.

Alertmanager considers an alert resolved when nobody re-posts it (`resolve_timeout`, or the endsAt
given), so firing alerts must be re-sent: the worker re-posts every active alert of every cluster
(one batch per notifier) after an evaluation cycle, at most every `resend_s` (default 60 s)
(`resend_in_background`, called by the worker's evaluation task), and `groupscope alerts evaluate`
(cron) posts them all at each run. Transitions (firing, resolved) go out at once, each its own
Celery task retried like every notifier's.

Configuration (a notifier of `alerts.notifiers`, checked with every notifier's settings by
coordinator_model/alert_rules/alertmanager_spec.py):

    - name: alertmanager
      type: alertmanager
      url: http://alertmanager.example.com:9093   # /api/v2/alerts is added; a path prefix is kept
      username: groupscope            # basic auth (or user:password@ in the URL), or
      bearer_token: s3cret            # Authorization: Bearer
      verify_tls: true                # false: do not check the certificate (https only)
      ca_file: /etc/ssl/private-ca.pem
      timeout_s: 5
      resend_s: 60                    # re-post firing alerts at least this often
      dashboard_url: https://groupscope.example.com   # generatorURL: the group's page
      labels: {team: kafka}           # added to every alert's labels

Secrets: the URL's userinfo and secret query values are masked (collectors/redact.py) in every error
and log line; the password and bearer token travel in headers only and are never shown.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from collectors.alerts.notify import Notifier, NotifyError, cluster_of, make_event
from collectors.redact import redact

log = logging.getLogger(__name__)

API_PATH = "/api/v2/alerts"
BATCH = 500  # alerts per POST when re-sending
EVIDENCE_CHARS = 4000


def _rfc3339(ms: int | float) -> str:
    return (
        datetime.fromtimestamp(ms / 1000.0, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class AlertmanagerNotifier(Notifier):
    """POSTs groupscope's alerts to Alertmanager's API v2 (see the module's docstring)."""

    url: str = ""
    username: str | None = None
    password: str | None = None
    bearer_token: str | None = None
    verify_tls: bool = True
    ca_file: str | None = None
    resend_s: float = 60.0
    dashboard_url: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    _last_resend: float | None = field(default=None, repr=False, compare=False)
    _resending: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        # user:password@ in the URL is basic auth (urllib would not send it): taken out of the URL.
        parts = urlsplit(self.url)
        if parts.username is not None and self.username is None:
            self.username = unquote(parts.username)
            self.password = unquote(parts.password or "")
            host = parts.hostname or ""
            if ":" in host:
                host = f"[{host}]"
            netloc = host + (f":{parts.port}" if parts.port else "")
            self.url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    # ---- what is sent ------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        parts = urlsplit(self.url)
        path = parts.path.rstrip("/")
        if not path.endswith(API_PATH):
            path += API_PATH
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))

    @property
    def validity_ms(self) -> int:
        """How long a firing alert holds in Alertmanager without being re-posted."""
        return int(4 * self.resend_s * 1000)

    def generator_url(self, alert: dict[str, Any], cluster: str) -> str | None:
        if not self.dashboard_url:
            return None
        from dashboard.urls import group_url

        return self.dashboard_url.rstrip("/") + group_url(alert["group"], cluster)

    def payload(self, event: dict[str, Any], now_ms: int | None = None) -> dict[str, Any]:
        """The PostableAlert of one event (`{"event", "cluster", "alert"}`, notify.make_event)."""
        now = _now_ms() if now_ms is None else now_ms
        a = event["alert"]
        cluster = cluster_of(event)
        severity = str(a.get("severity") or "warning")
        resolved = event["event"] == "resolved" or a.get("state") == "resolved"
        labels = {str(k): str(v) for k, v in self.labels.items()}
        labels.update(
            {
                "alertname": str(a["rule"]),
                "cluster": cluster,
                "group": str(a["group"]),
                "severity": severity,
                "source": "groupscope",
            }
        )
        evidence = json.dumps(a.get("evidence") or {}, sort_keys=True, default=str)
        if len(evidence) > EVIDENCE_CHARS:
            evidence = evidence[: EVIDENCE_CHARS - 3] + "..."
        description = (
            f"{a['rule']} on consumer group {a['group']} in Kafka cluster {cluster} ({severity}), "
            f"since {_rfc3339(int(a['since']))}"
        )
        if resolved and a.get("until") is not None:
            description += f", resolved {_rfc3339(int(a['until']))}"
        body: dict[str, Any] = {
            "labels": labels,
            "annotations": {
                "summary": str(a.get("summary") or ""),
                "description": description,
                "alert_id": str(a.get("id") or ""),
                "evidence": evidence,
            },
            "startsAt": _rfc3339(int(a["since"])),
        }
        # Never before startsAt (Alertmanager refuses that): a worker's clock behind the collector's.
        since = int(a["since"])
        if resolved:
            until = a.get("until")
            body["endsAt"] = _rfc3339(max(since, int(until) if until is not None else now))
        else:
            body["endsAt"] = _rfc3339(max(since, now) + self.validity_ms)
        gen = self.generator_url(a, cluster)
        if gen:
            body["generatorURL"] = gen
        return body

    # ---- how it is sent ----------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.username is not None:
            token = base64.b64encode(f"{self.username}:{self.password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        elif self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        return headers

    def _context(self) -> ssl.SSLContext | None:
        if urlsplit(self.url).scheme != "https":
            return None
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify_tls:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def post(self, alerts: list[dict[str, Any]]) -> None:
        """POST a list of PostableAlerts; NotifyError (the URL redacted) on any failure."""
        if not alerts:
            return
        shown = redact(self.endpoint)
        req = urllib.request.Request(
            self.endpoint, data=json.dumps(alerts).encode(), method="POST", headers=self._headers()
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=self._context()) as resp:
                if resp.status >= 300:
                    raise NotifyError(f"{self.name}: HTTP {resp.status} from {shown}")
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode(errors="replace").strip()
            raise NotifyError(redact(f"{self.name}: HTTP {e.code} from {shown}: {detail}")) from e
        except (urllib.error.URLError, OSError, ssl.SSLError) as e:
            raise NotifyError(redact(f"{self.name}: cannot reach {shown}: {getattr(e, 'reason', e)}")) from e

    def send(self, event: dict[str, Any]) -> None:
        self.post([self.payload(event)])

    def resend(self, alerts: Iterable[dict[str, Any]], now_ms: int | None = None) -> int:
        """Re-post the firing `alerts` (AlertStore.active() rows) this notifier wants, in batches;
        returns how many. NotifyError when a batch cannot be posted."""
        now = _now_ms() if now_ms is None else now_ms
        events = [make_event("firing", a) for a in alerts]
        wanted = [self.payload(e, now) for e in events if self.wants(e)]
        for i in range(0, len(wanted), BATCH):
            self.post(wanted[i : i + BATCH])
        return len(wanted)

    def resend_when_free(self, alerts: list[dict[str, Any]]) -> int | None:
        """`resend` unless a re-send of this notifier is under way (then None); the time of a
        re-send that went through is kept for `resend_due`, so after a failure the next cycle tries
        again. NotifyError when a batch cannot be posted."""
        if not self._resending.acquire(blocking=False):
            return None
        try:
            n = self.resend(alerts)
            self._last_resend = time.monotonic()
            return n
        finally:
            self._resending.release()

    def resend_due(self, now: float | None = None) -> bool:
        """Whether `resend_s` has passed since the last re-send (always, the first time)."""
        t = time.monotonic() if now is None else now
        return self._last_resend is None or t - self._last_resend >= self.resend_s


def build(common: dict[str, Any], spec: dict[str, Any]) -> AlertmanagerNotifier:
    """The notifier from its validated mapping (`common`: the keys every notifier has)."""
    return AlertmanagerNotifier(
        **common,
        url=spec["url"],
        username=spec.get("username"),
        password=spec.get("password"),
        bearer_token=spec.get("bearer_token"),
        verify_tls=bool(spec.get("verify_tls", True)),
        ca_file=spec.get("ca_file"),
        resend_s=float(spec.get("resend_s", 60.0)),
        dashboard_url=spec.get("dashboard_url"),
        labels={str(k): str(v) for k, v in (spec.get("labels") or {}).items()},
    )


def resend_active(
    client: Any,
    notifiers: Iterable[Notifier],
    clusters: Iterable[str],
    base: str = "gs",
    force: bool = False,
) -> dict[str, int]:
    """Re-post every firing alert of `clusters` to each Alertmanager notifier whose `resend_s` has
    passed (every one with `force`). Returns notifier name -> alerts posted; a notifier that fails is
    logged (redacted) and left out: the next cycle tries again."""
    from collectors.storage.alerts import AlertStore
    from collectors.storage.clusters import cluster_prefix

    due = [n for n in notifiers if isinstance(n, AlertmanagerNotifier) and (force or n.resend_due())]
    if not due:
        return {}
    active: list[dict[str, Any]] = []
    for name in clusters:
        active += AlertStore(client, prefix=cluster_prefix(name, base), cluster=name).active()
    out: dict[str, int] = {}
    for n in due:
        try:
            posted = n.resend_when_free(active)
        except NotifyError as e:
            log.warning(
                "notifier %s: re-sending %d firing alert(s) failed: %s", n.name, len(active), redact(str(e))
            )
            continue
        if posted is not None:  # None: the previous re-send of this notifier is still under way
            out[n.name] = posted
    return out


def resend_in_background(client: Any, notifiers: Iterable[Notifier], clusters: list[str], base: str) -> None:
    """`resend_active` in a thread of its own, when a notifier is due: the worker's evaluation task
    calls it after each cycle, and a slow Alertmanager never holds up the worker's pool."""
    due = [n for n in notifiers if isinstance(n, AlertmanagerNotifier) and n.resend_due()]
    if not due:
        return

    def run() -> None:
        try:
            resend_active(client, due, clusters, base)
        except Exception as e:  # never let a thread die with a traceback that names a secret
            log.warning("alertmanager re-send failed: %s", redact(f"{type(e).__name__}: {e}"))

    threading.Thread(target=run, name="alertmanager-resend", daemon=True).start()
