"""`groupscope collect` (live, against a Kafka cluster) and `groupscope replay CAPTURE_DIR` (the same
pipeline over a capture folder): sources -> decode -> coordinator model per group -> Redis, on Spark."""

from __future__ import annotations

import contextlib
import logging
import shutil

import click

from collectors.command_options import bootstrap_option, redis_option, settings_from


def _quiet_spark_logs() -> None:
    logging.basicConfig(level=logging.WARNING, format="groupscope: %(message)s")
    logging.getLogger("py4j").setLevel(logging.ERROR)


cluster_option = click.option(
    "--cluster",
    default=None,
    metavar="NAME",
    help="The cluster of the `clusters:` settings to watch (default GROUPSCOPE_CLUSTER, else the only "
    "one configured, else `default`: the top-level bootstrap servers).",
)


@click.command()
@bootstrap_option
@redis_option
@cluster_option
@click.option(
    "--all-clusters",
    is_flag=True,
    help="Watch every configured cluster from this one Spark application: a streaming query, "
    "checkpoint and Admin poller per cluster, each restarted if it fails, so a cluster that is down "
    "never holds up the others.",
)
@click.option("--master", default=None, help="Spark master URL (default GROUPSCOPE_SPARK_MASTER, local[*]).")
@click.option(
    "--checkpoint",
    "checkpoint_dir",
    default=None,
    metavar="DIR",
    help="Where Spark keeps offsets and per-group state (default GROUPSCOPE_CHECKPOINT_DIR/collect, "
    "collect@CLUSTER for a cluster other than `default`). Restarting with the same folder resumes "
    "where it stopped.",
)
@click.option("--duration", type=float, default=None, help="Stop after this many seconds (default: run).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def collect(
    bootstrap_servers: str | None,
    redis_url: str | None,
    cluster: str | None,
    all_clusters: bool,
    master: str | None,
    checkpoint_dir: str | None,
    duration: float | None,
    no_progress: bool,
) -> None:
    """Run the live collector pipeline on Spark: Kafka -> coordinator model -> Redis.

    With several clusters configured, run one collector per cluster (--cluster NAME: its own Spark
    application), or one for them all (--all-clusters: one application, a query per cluster)."""
    from collectors.config import ConfigError
    from collectors.pipeline.job import live_config, run_pipeline

    # --bootstrap-servers is the top-level setting: the cluster `default`, unless --cluster names another
    base = settings_from(bootstrap_servers=bootstrap_servers, redis_url=redis_url, spark_master=master)
    if all_clusters:
        if cluster or bootstrap_servers or checkpoint_dir:
            raise click.UsageError("--all-clusters takes each cluster's settings from the configuration")
        from collectors.cli.collect_all import run_all_clusters

        _quiet_spark_logs()
        _exit(run_all_clusters(base, duration_s=duration))
    names = base.cluster_names()
    if cluster is None and base.cluster is None and len(names) > 1 and not bootstrap_servers:
        raise click.UsageError(
            f"{len(names)} clusters are configured ({', '.join(names)}): choose one with --cluster NAME, "
            "or run them all with --all-clusters"
        )
    try:
        s = base.for_cluster(cluster)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
    if bootstrap_servers:
        s.bootstrap_servers = bootstrap_servers
    if not s.bootstrap_servers:
        raise click.UsageError("--bootstrap-servers (or GROUPSCOPE_BOOTSTRAP_SERVERS) is required")
    name = s.chosen_cluster()
    _quiet_spark_logs()
    cfg = live_config(s, checkpoint_dir)
    try:
        res = run_pipeline(cfg, master=s.spark_master, duration_s=duration, progress=not no_progress)
    except KeyboardInterrupt:
        click.echo(f"groupscope: collector of cluster {name} stopped", err=True)
        _exit(0)
    click.echo(
        f"groupscope: collector of cluster {name} ran {res.batches} batches in {res.seconds:.0f} s", err=True
    )
    _exit(0)


def _exit(code: int) -> None:
    """End the process once the collector has stopped, without the interpreter's teardown.

    Everything that must be written is by then (Spark stopped, Redis written, the Kafka threads
    joined). What teardown would still do is free librdkafka handles that outlive their owners: an
    AdminClient held in a reference cycle by its futures (confluent-kafka-python #975), a client of a
    thread that did not finish within its join. Freed while the interpreter is half torn down, their
    callbacks into Python crash the process (seen: SIGSEGV after a run against a broker that refused
    the login), and a successful run would exit with a crash."""
    import os
    import sys

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


@click.command()
@click.argument("capture_dir", type=click.Path(exists=True, file_okay=False))
@redis_option
@click.option(
    "--cluster",
    default="default",
    show_default=True,
    metavar="NAME",
    help="The cluster the capture's groups are shown under.",
)
@click.option("--master", default=None, help="Spark master URL.")
@click.option(
    "--speed", type=float, default=None, help="Replay at N x real time (default: as fast as possible)."
)
@click.option(
    "--checkpoint",
    "checkpoint_dir",
    default=None,
    metavar="DIR",
    help="Checkpoint folder (default: temporary).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def replay(
    capture_dir: str,
    redis_url: str | None,
    cluster: str,
    master: str | None,
    speed: float | None,
    checkpoint_dir: str | None,
    no_progress: bool,
) -> None:
    """Run the pipeline over a capture folder into Redis."""
    from collectors.pipeline.job import PipelineConfig, run_pipeline, temp_checkpoint

    if speed is not None and speed <= 0:
        raise click.BadParameter("must be > 0", param_hint="--speed")
    from collectors.config import ConfigError, check_cluster_name

    try:
        check_cluster_name(cluster)
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="--cluster") from e
    s = settings_from(redis_url=redis_url, spark_master=master)
    _quiet_spark_logs()
    ckpt = checkpoint_dir or temp_checkpoint()
    cfg = PipelineConfig(
        redis_url=s.redis_url,
        checkpoint_dir=ckpt,
        mode="replay",
        cluster=cluster,
        capture_dir=capture_dir,
        speed=speed,
        max_records_per_batch=s.max_records_per_batch,
        retention_ms=s.retention_s * 1000,
    )
    try:
        res = run_pipeline(cfg, master=s.spark_master, progress=not no_progress)
    finally:
        if checkpoint_dir is None:
            shutil.rmtree(ckpt, ignore_errors=True)
    click.echo(f"groupscope: replayed {capture_dir} in {res.batches} batches, {res.seconds:.1f} s", err=True)
