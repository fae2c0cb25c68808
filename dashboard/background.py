"""The background-callback manager for the what-if page's heavy computations.

Production: Celery with Redis as broker and result backend (``celery -A dashboard.celery_app
worker``; `groupscope dashboard` starts one next to the web server). Dash registers each background
callback as a Celery task when the app is built, so the worker builds the same app to know them.
"""

from __future__ import annotations

from typing import Any

CELERY_QUEUE = "groupscope-dashboard"


def make_celery(redis_url: str) -> Any:
    """Celery on `redis_url` as broker and result backend; a `rediss://` URL gets TLS with the
    server's certificate verified, as redis-py does (collectors/redis_tls.py)."""
    from celery import Celery

    from collectors.redis_tls import celery_tls_conf

    app = Celery("groupscope-dashboard", broker=redis_url, backend=redis_url)
    app.conf.update(
        task_default_queue=CELERY_QUEUE,
        result_expires=3600,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_prefetch_multiplier=1,
        **celery_tls_conf(redis_url),
    )
    return app


def make_manager(redis_url: str, mode: str = "auto") -> Any:
    if mode in ("auto", "celery"):
        from dash import CeleryManager

        return CeleryManager(make_celery(redis_url), expire=3600)
    if mode == "diskcache":
        import tempfile

        import diskcache
        from dash import DiskcacheManager

        return DiskcacheManager(diskcache.Cache(tempfile.mkdtemp(prefix="groupscope-dash-")), expire=3600)
    raise ValueError(f"unknown background mode {mode!r}: use celery or diskcache")
