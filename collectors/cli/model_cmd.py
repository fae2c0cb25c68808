"""`groupscope model`: filled in by the coordinator-model issue."""

import click

from collectors.cli.options import not_finished


@click.command()
@click.argument("capture_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document {'groups': [...]}.")
@click.option("--at", "at_ms", type=int, default=None, help="Rebuild as of this moment (epoch ms).")
def model(capture_dir: str, as_json: bool, at_ms: int | None) -> None:
    """Rebuild every group of a capture folder in one process and print it."""
    not_finished("model")()
