"""Celery entry point for the dashboard's background callbacks:

    celery -A dashboard.celery_app:celery_app worker -Q groupscope-dashboard

The worker builds the same Dash app as the web server (so the background callbacks are registered as
tasks under the same names) from the same settings (GROUPSCOPE_* environment / config file)."""

from __future__ import annotations

from dashboard.app import create_app

dash_app = create_app(background_mode="celery")
celery_app = dash_app._background_manager.handle
app = celery_app
