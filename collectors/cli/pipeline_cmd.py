"""`groupscope collect` and `groupscope replay`: filled in by the pipeline issue."""

import click

from collectors.cli.options import bootstrap_option, not_finished, redis_option


@click.command()
@bootstrap_option
@redis_option
@click.option("--master", default=None, help="Spark master URL (default GROUPSCOPE_SPARK_MASTER, local[*]).")
def collect(bootstrap_servers: str | None, redis_url: str | None, master: str | None) -> None:
    """Run the live collector pipeline on Spark: Kafka -> coordinator model -> Redis."""
    not_finished("collect")()


@click.command()
@click.argument("capture_dir", type=click.Path(exists=True, file_okay=False))
@redis_option
@click.option("--master", default=None, help="Spark master URL.")
@click.option(
    "--speed", type=float, default=None, help="Replay at N x real time (default: as fast as possible)."
)
def replay(capture_dir: str, redis_url: str | None, master: str | None, speed: float | None) -> None:
    """Run the pipeline over a capture folder into Redis."""
    not_finished("replay")()
