"""An Alertmanager notifier's settings, checked where every notifier's are (config.py): the keys
it takes, and the labels groupscope sets itself. collectors/alerts/alertmanager.py sends."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from coordinator_model.errors import AlertConfigError

SPEC_KEYS = frozenset(
    {
        "name",
        "type",
        "url",
        "timeout_s",
        "events",
        "rules",
        "min_severity",
        "clusters",
        "username",
        "password",
        "bearer_token",
        "verify_tls",
        "ca_file",
        "resend_s",
        "dashboard_url",
        "labels",
    }
)
# Labels groupscope sets itself: a static label of the same name would change what an alert is.
OWN_LABELS = frozenset({"alertname", "cluster", "group", "severity", "source"})


class SpecError(AlertConfigError):
    """An Alertmanager notifier's configuration is wrong (the message names the key)."""


def validate_spec(spec: dict[str, Any], where: str) -> dict[str, Any]:
    """The notifier's mapping, checked (`where`: `notifiers[2]`); SpecError on the first problem."""
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise SpecError(
            f"{where} (alertmanager): unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
            f"known: {', '.join(sorted(SPEC_KEYS))}"
        )
    url = spec.get("url")
    if not isinstance(url, str) or not url:
        raise SpecError(f"{where} (alertmanager) needs a url (http(s)://host:9093)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError(f"{where}.url must be an http:// or https:// URL, not {_shown(url)}")
    for key in ("username", "password", "bearer_token", "ca_file", "dashboard_url"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise SpecError(f"{where}.{key} must be a string")
    basic = spec.get("username") is not None or parts.username is not None
    if basic and spec.get("bearer_token"):
        raise SpecError(f"{where}: give either basic auth (username/password) or bearer_token, not both")
    if spec.get("password") is not None and spec.get("username") is None:
        raise SpecError(f"{where}.password needs a username")
    if "verify_tls" in spec and not isinstance(spec["verify_tls"], bool):
        raise SpecError(f"{where}.verify_tls must be true or false")
    for key in ("timeout_s", "resend_s"):
        v = spec.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
            raise SpecError(f"{where}.{key} must be a positive number of seconds")
    labels = spec.get("labels") or {}
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str | int | float) and not isinstance(v, bool)
        for k, v in labels.items()
    ):
        raise SpecError(f"{where}.labels must map label names to strings")
    clash = OWN_LABELS & set(labels)
    if clash:
        raise SpecError(f"{where}.labels: {', '.join(sorted(clash))} set by groupscope itself")
    return spec


def _shown(url: str) -> str:
    """A URL as an error may show it: scheme, host and port, never its user, password or query."""
    p = urlsplit(url)
    return (
        f"{p.scheme}://{p.hostname or '?'}{f':{p.port}' if p.port else ''}/..." if p.scheme else "(not a URL)"
    )
