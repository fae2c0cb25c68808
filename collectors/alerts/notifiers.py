"""A notifier from its configuration mapping: each kind's class in notify.py, Alertmanager's in
alertmanager.py (which builds on notify.py: a factory in either would import the other)."""

from __future__ import annotations

from typing import Any

from collectors.alerts import alertmanager
from collectors.alerts.notify import EmailNotifier, Notifier, SlackNotifier, WebhookNotifier


def build_notifier(spec: dict[str, Any], default_timeout_s: float = 5.0) -> Notifier:
    """A notifier from its configuration mapping (validated by parse_alert_config)."""
    common: dict[str, Any] = {
        "name": spec["name"],
        "timeout_s": float(spec.get("timeout_s", default_timeout_s)),
        "events": tuple(spec.get("events") or ("firing", "resolved")),
        "rules": tuple(spec.get("rules") or ()),
        "min_severity": spec.get("min_severity", "info"),
        "clusters": tuple(spec.get("clusters") or ()),
    }
    kind = spec["type"]
    if kind == "webhook":
        return WebhookNotifier(**common, url=spec["url"], headers=dict(spec.get("headers") or {}))
    if kind == "slack":
        return SlackNotifier(
            **common,
            url=spec["url"],
            channel=spec.get("channel"),
            username=spec.get("username", "groupscope"),
        )
    if kind == "email":
        to = spec["to"]
        return EmailNotifier(
            **common,
            host=spec["host"],
            port=int(spec.get("port", 25)),
            sender=spec.get("from", "groupscope@localhost"),
            to=tuple([to] if isinstance(to, str) else to),
            starttls=bool(spec.get("starttls", False)),
            ssl=bool(spec.get("ssl", False)),
            username=spec.get("username"),
            password=spec.get("password"),
        )
    if kind == "alertmanager":
        return alertmanager.build(common, spec)
    raise ValueError(f"unknown notifier type {kind!r}")
