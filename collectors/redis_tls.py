"""`rediss://` (Redis over TLS) for Celery, as redis-py reads it.

redis-py's `Redis.from_url` takes a `rediss://` URL as it is: TLS, the server's certificate
verified (`ssl_cert_reqs=required`) unless the URL's query says otherwise. Celery does not: its
Redis result backend refuses a `rediss://` URL without `ssl_cert_reqs` in the query, and kombu (the
broker) then connects without verifying the certificate at all. `celery_tls_conf(url)` gives the
Celery settings that make both behave as redis-py does, so the one `redis_url` of the README
(`rediss://:password@host:6380/0`) works for the collector, the dashboard, the alert worker and the
dashboard's Celery worker alike.
"""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import parse_qs, urlsplit

from collectors.config import ConfigError

_CERT_REQS = {
    "required": ssl.CERT_REQUIRED,
    "cert_required": ssl.CERT_REQUIRED,
    "optional": ssl.CERT_OPTIONAL,
    "cert_optional": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
    "cert_none": ssl.CERT_NONE,
}
# the TLS settings of a rediss:// query that Celery's backend and kombu both take
_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")


def redis_tls_options(url: str) -> dict[str, Any] | None:
    """The TLS options of a `rediss://` URL (None for any other scheme): `ssl_cert_reqs` from its
    query (`required`, `optional`, `none`, or CERT_*; default `required`, as redis-py), and the CA,
    certificate and key files when the query names them."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "rediss":
        return None
    query = parse_qs(parts.query)
    reqs = query.get("ssl_cert_reqs", ["required"])[-1]
    if reqs.lower() not in _CERT_REQS:
        raise ConfigError(
            f"redis_url: ssl_cert_reqs={reqs!r} is not one of required, optional, none "
            "(or CERT_REQUIRED, CERT_OPTIONAL, CERT_NONE)"
        )
    options: dict[str, Any] = {"ssl_cert_reqs": _CERT_REQS[reqs.lower()]}
    for key in _FILES:
        if query.get(key):
            options[key] = query[key][-1]
    return options


def celery_tls_conf(url: str) -> dict[str, Any]:
    """Celery settings for a Redis broker and result backend at `url`: `broker_use_ssl` and
    `redis_backend_use_ssl` for a `rediss://` URL, nothing for another."""
    options = redis_tls_options(url)
    if options is None:
        return {}
    return {"broker_use_ssl": dict(options), "redis_backend_use_ssl": dict(options)}
