"""Who may reach groupscope's HTTP endpoints: the dashboard and the worker's Prometheus /metrics.

Both listen on loopback (127.0.0.1) unless told otherwise. Any other address needs HTTP basic
authentication (`dashboard_user` and `dashboard_password`, which guard both) or `allow_open_bind`
(`--allow-open-bind`), which says out loud that the endpoint is open to anyone who can reach it;
without either the command refuses to start (`open_bind_error`).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
from typing import Any

# gunicorn's worker timeout for the dashboard: a request is answered within this or the worker is
# restarted (dashboard/serve.py sets it; Burrow's /v3/config reports it as the server's timeout)
DASHBOARD_TIMEOUT_S = 60
OPEN_FLAG = "--allow-open-bind"
OPEN_HELP = (
    "Listen on a non-loopback address without authentication: the endpoint is then open to anyone "
    "who can reach it (setting allow_open_bind). Not needed when dashboard_user and "
    "dashboard_password are set."
)


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach: localhost, 127.0.0.0/8, ::1. Anything else,
    host names and the empty "every address" included, may be reachable from elsewhere."""
    h = host.strip().removeprefix("[").removesuffix("]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def open_bind_error(host: str, *, what: str, auth: bool, allow_open: bool) -> str | None:
    """Why serving `what` on `host` is refused, as one line; None when it may start: a loopback
    address, or basic authentication configured, or the open bind asked for explicitly."""
    if is_loopback(host) or auth or allow_open:
        return None
    return (
        f"refusing to serve {what} on {host or 'every address'} without authentication: set "
        "dashboard_user and dashboard_password (GROUPSCOPE_DASHBOARD_USER, GROUPSCOPE_DASHBOARD_PASSWORD), "
        f"or pass {OPEN_FLAG} (allow_open_bind: true) to leave it open to anyone who can reach it, "
        "or listen on 127.0.0.1"
    )


def dashboard_bind_error(settings: Any) -> str | None:
    """`open_bind_error` for the dashboard as these settings (collectors.config.Settings) place it:
    `groupscope dashboard` and the demo, which starts it, refuse the same binds."""
    return open_bind_error(
        settings.dashboard_host,
        what="the dashboard",
        auth=settings.basic_auth() is not None,
        allow_open=settings.allow_open_bind,
    )


def basic_auth_ok(header: str | None, user: str, password: str) -> bool:
    """Whether an Authorization header carries exactly these basic-auth credentials (compared in
    constant time)."""
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(given, f"{user}:{password}".encode())


CHALLENGE = ("WWW-Authenticate", 'Basic realm="groupscope"')
