"""`groupscope dashboard`: filled in by the dashboard issue."""

import click

from collectors.cli.options import not_finished, redis_option


@click.command()
@redis_option
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
def dashboard(redis_url: str | None, host: str | None, port: int | None) -> None:
    """Serve the dashboard."""
    not_finished("dashboard")()
