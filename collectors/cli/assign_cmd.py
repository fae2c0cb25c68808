"""`groupscope assign` and `groupscope whatif`: filled in by the assignors issue."""

import click

from collectors.cli.options import not_finished


@click.command()
@click.option("--assignor", required=True, help="range, roundrobin, sticky, cooperative-sticky, uniform.")
@click.argument("file", type=click.Path(allow_dash=True))
def assign(assignor: str, file: str) -> None:
    """Run one assignor over a group description (JSON FILE) and print the assignment."""
    not_finished("assign")()


@click.command()
@click.argument("file", type=click.Path(allow_dash=True))
def whatif(file: str) -> None:
    """Compare assignors and changes for a group description (JSON FILE)."""
    not_finished("whatif")()
