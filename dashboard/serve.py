"""`groupscope dashboard`: serve the dashboard with gunicorn (a production WSGI server), plus a Celery
worker for the what-if page's background computations unless --no-worker says one runs elsewhere.

The command lives with the dashboard it serves; the `groupscope` command line (collectors/cli/main.py)
imports it when it runs. The options it shares with the other commands are in
collectors/command_options.py, so the dashboard does not import the command line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import click

from collectors.command_options import redis_option, settings_from
from collectors.config import Settings
from collectors.endpoints import DASHBOARD_TIMEOUT_S, OPEN_FLAG, OPEN_HELP, dashboard_bind_error, is_loopback

# The dashboard's own log records (groupscope.* and collectors.* loggers), on stderr beside
# gunicorn's: a handler of their own, so that the level POST /v3/admin/loglevel sets (the root
# logger's, dashboard/api_burrow.py) shows info and debug records too, which Python's last-resort
# handler drops below WARNING.
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(name)s: %(message)s"


def celery_worker_argv(concurrency: int = 2) -> list[str]:
    from dashboard.background import CELERY_QUEUE

    return [
        sys.executable,
        "-m",
        "celery",
        "--quiet",
        "-A",
        "dashboard.celery_app:celery_app",
        "worker",
        "-Q",
        CELERY_QUEUE,
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def check_bind(settings: Settings) -> None:
    """Refuse (a usage error, exit 2) a non-loopback dashboard without authentication, unless
    allow_open_bind says it is meant to be open."""
    why = dashboard_bind_error(settings)
    if why:
        raise click.UsageError(why)


def serve(host: str, port: int, workers: int, threads: int) -> None:
    from gunicorn.app.base import BaseApplication

    class _App(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            # an IPv6 address is bracketed ([::1]:8050), as gunicorn reads it
            self.cfg.set("bind", f"[{host}]:{port}" if ":" in host and "[" not in host else f"{host}:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("threads", threads)
            self.cfg.set("timeout", DASHBOARD_TIMEOUT_S)
            self.cfg.set("accesslog", None)
            self.cfg.set("errorlog", "-")
            self.cfg.set("loglevel", "warning")

        def load(self) -> Any:
            from dashboard.app import create_app

            # in each worker (load runs there): WARNING, as before, until /v3/admin/loglevel says
            logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
            return create_app().server

    _App().run()


@click.command()
@redis_option
@click.option(
    "--host",
    default=None,
    help="Address to listen on (default: dashboard_host, 127.0.0.1). Any other address needs "
    f"dashboard_user and dashboard_password, or {OPEN_FLAG}.",
)
@click.option("--port", type=int, default=None, help="Port to listen on (default: dashboard_port, 8050).")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="gunicorn workers.")
@click.option(
    "--threads", type=click.IntRange(1, 64), default=4, show_default=True, help="Threads per worker."
)
@click.option(
    "--no-worker",
    is_flag=True,
    help="Do not start a Celery worker for the what-if computations (one runs elsewhere: "
    "celery -A dashboard.celery_app:celery_app worker -Q groupscope-dashboard).",
)
@click.option(OPEN_FLAG, "allow_open_bind", is_flag=True, help=OPEN_HELP)
def dashboard(
    redis_url: str | None,
    host: str | None,
    port: int | None,
    workers: int,
    threads: int,
    no_worker: bool,
    allow_open_bind: bool,
) -> None:
    """Serve the dashboard (fleet, groups, what-if, alerts) from the collector's Redis.

    Host, port and basic authentication (dashboard_user and dashboard_password, both or neither)
    come from the configuration (GROUPSCOPE_DASHBOARD_* or the config file); --host/--port override
    them. It listens on 127.0.0.1 by default; another address needs authentication or
    --allow-open-bind.
    """
    settings = settings_from(
        redis_url=redis_url,
        dashboard_host=host,
        dashboard_port=port,
        allow_open_bind=True if allow_open_bind else None,
    )
    check_bind(settings)
    from collectors.alerts.config import load_alert_config
    from collectors.config import ConfigError

    try:
        load_alert_config(settings)  # the pages' storm, flapping and lagging: a bad file fails here
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    # gunicorn's workers and the Celery worker load the settings themselves: hand them the same values.
    os.environ["GROUPSCOPE_REDIS_URL"] = settings.redis_url
    os.environ["GROUPSCOPE_DASHBOARD_HOST"] = settings.dashboard_host
    os.environ["GROUPSCOPE_DASHBOARD_PORT"] = str(settings.dashboard_port)
    worker: subprocess.Popen | None = None
    if not no_worker:
        worker = subprocess.Popen(celery_worker_argv(), env=os.environ.copy())
    click.echo(
        f"groupscope dashboard on http://{settings.dashboard_host}:{settings.dashboard_port}/ "
        f"(Redis {settings.redis_url.split('@')[-1]})",
        err=True,
    )
    if settings.basic_auth() is None and not is_loopback(settings.dashboard_host):
        click.echo(
            f"groupscope: the dashboard is open to anyone who can reach {settings.dashboard_host} "
            f"({OPEN_FLAG}, no authentication)",
            err=True,
        )
    try:
        serve(settings.dashboard_host, settings.dashboard_port, workers, threads)
    finally:
        if worker is not None and worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(10)
            except subprocess.TimeoutExpired:
                worker.kill()
