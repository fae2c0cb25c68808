"""`groupscope alerts` and `groupscope worker`: filled in by the alerting issue."""

import click

from collectors.cli.options import not_finished, redis_option


@click.group()
def alerts() -> None:
    """Evaluate and list alerts."""


@alerts.command("evaluate")
@redis_option
@click.option("--at", "at_ms", type=int, default=None)
def evaluate(redis_url: str | None, at_ms: int | None) -> None:
    """Run one evaluation cycle now (or as of --at MS)."""
    not_finished("alerts evaluate")()


@alerts.command("list")
@redis_option
@click.option("--json", "as_json", is_flag=True)
def list_(redis_url: str | None, as_json: bool) -> None:
    """Print active alerts and history."""
    not_finished("alerts list")()


@click.command()
@redis_option
def worker(redis_url: str | None) -> None:
    """Run the Celery worker and beat."""
    not_finished("worker")()
