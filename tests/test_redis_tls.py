"""`rediss://` (Redis over TLS), the README's own example URL, everywhere a Redis URL is opened:
redis-py takes it as it is; both Celery apps (the dashboard's broker and result backend, the alert
worker's broker) get TLS with the server's certificate verified unless the URL's query says
otherwise. Nothing connects: building the configuration is what used to fail."""

from __future__ import annotations

import ssl

import pytest
import redis

from collectors.alerts import tasks
from collectors.config import ConfigError, Settings
from collectors.redis_tls import celery_tls_conf, redis_tls_options
from coordinator_model.alert_rules import AlertConfig
from dashboard.app import create_app
from dashboard.background import make_celery, make_manager

README_URL = "rediss://:secret@redis.internal:6380/0"  # README.md, "Configuration"


def test_the_dashboards_celery_takes_a_rediss_url() -> None:
    app = make_celery(README_URL)
    backend = app.backend.connparams  # Celery's Redis backend refused this URL before
    assert backend["connection_class"] is redis.SSLConnection
    assert backend["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    assert (backend["host"], backend["port"], backend["password"]) == ("redis.internal", 6380, "secret")
    # kombu alone would connect without checking the certificate (CERT_NONE)
    assert app.connection_for_write().ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    assert make_manager(README_URL).handle.conf.broker_use_ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    # and the whole dashboard app, as its Celery worker (dashboard/celery_app.py) builds it
    dash_app = create_app(Settings(redis_url=README_URL), background_mode="celery")
    assert dash_app._background_manager.handle.backend.connparams["ssl_cert_reqs"] == ssl.CERT_REQUIRED


def test_the_query_string_chooses_verification_and_files() -> None:
    url = README_URL + "?ssl_cert_reqs=none"
    app = make_celery(url)
    assert app.backend.connparams["ssl_cert_reqs"] == ssl.CERT_NONE
    assert app.connection_for_write().ssl == {"ssl_cert_reqs": ssl.CERT_NONE}
    url = README_URL + "?ssl_cert_reqs=CERT_OPTIONAL&ssl_ca_certs=/etc/ssl/ca.pem"
    assert redis_tls_options(url) == {"ssl_cert_reqs": ssl.CERT_OPTIONAL, "ssl_ca_certs": "/etc/ssl/ca.pem"}
    app = make_celery(url)
    assert app.backend.connparams["ssl_ca_certs"] == "/etc/ssl/ca.pem"
    assert app.connection_for_write().ssl["ssl_ca_certs"] == "/etc/ssl/ca.pem"
    with pytest.raises(ConfigError, match="ssl_cert_reqs='maybe'"):
        celery_tls_conf(README_URL + "?ssl_cert_reqs=maybe")


def test_plain_redis_urls_are_unchanged() -> None:
    assert redis_tls_options("redis://127.0.0.1:6379/0") is None
    assert celery_tls_conf("redis://127.0.0.1:6379/0") == {}
    app = make_celery("redis://127.0.0.1:6379/0")
    assert not app.connection_for_write().ssl and "connection_class" not in app.backend.connparams


def test_the_alert_workers_celery_takes_a_rediss_url() -> None:
    try:
        app = tasks.configure(README_URL, AlertConfig())
        assert app.connection_for_write().ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
        app = tasks.configure("redis://127.0.0.1:6379/0", AlertConfig())
        assert not app.connection_for_write().ssl
    finally:
        tasks.configure("redis://127.0.0.1:6379/0", AlertConfig())


def test_redis_py_takes_a_rediss_url_natively() -> None:
    # what every other reader uses (RedisStore.from_url, the CLI, /metrics, the dashboard's data)
    pool = redis.Redis.from_url(README_URL).connection_pool
    assert pool.connection_class is redis.SSLConnection
    conn = pool.connection_class(**pool.connection_kwargs)  # not connected
    assert conn.cert_reqs == ssl.CERT_REQUIRED and conn.check_hostname
