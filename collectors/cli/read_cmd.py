"""`groupscope groups` and `groupscope group`: filled in by the pipeline issue."""

import click

from collectors.cli.options import not_finished, redis_option


@click.command()
@redis_option
@click.option("--json", "as_json", is_flag=True)
def groups(redis_url: str | None, as_json: bool) -> None:
    """List the groups kept in Redis."""
    not_finished("groups")()


@click.command()
@click.argument("name")
@redis_option
@click.option("--json", "as_json", is_flag=True)
def group(name: str, redis_url: str | None, as_json: bool) -> None:
    """Print one group's reconstruction from Redis."""
    not_finished("group")()
