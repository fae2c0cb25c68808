"""`groupscope decode`: filled in by the codec issue."""

import click

from collectors.cli.options import not_finished


@click.command()
@click.argument("source", required=False, default="-")
def decode(source: str) -> None:
    """Decode capture lines (FILE or - for stdin) of __consumer_offsets records to JSON lines."""
    not_finished("decode")()
