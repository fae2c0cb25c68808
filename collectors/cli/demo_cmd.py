"""`groupscope demo`: filled in by the demo issue."""

import click

from collectors.cli.options import bootstrap_option, not_finished, redis_option


@click.command()
@bootstrap_option
@redis_option
@click.option("--duration", type=float, default=None, help="Stop everything after SECONDS.")
def demo(bootstrap_servers: str | None, redis_url: str | None, duration: float | None) -> None:
    """Run the demo."""
    not_finished("demo")()
