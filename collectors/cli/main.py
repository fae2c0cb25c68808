"""The `groupscope` command line. Subcommands live in their own modules and are imported lazily,
so `groupscope decode` does not pay for importing Spark or Dash."""

from __future__ import annotations

import importlib
import os

import click

# name -> (module, attribute, one-line help shown in `groupscope --help`); the modules are imported
# only when their command runs. `dashboard` lives with the dashboard it serves and is imported plainly
# (`load_command`).
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "decode": ("collectors.cli.decode_cmd", "decode", "Decode __consumer_offsets capture lines to JSON."),
    "model": ("collectors.cli.model_cmd", "model", "Rebuild every group of a capture folder."),
    "assign": ("collectors.cli.assign_cmd", "assign", "Run one assignor over a group description."),
    "whatif": ("collectors.cli.assign_cmd", "whatif", "Compare assignors and changes for a group."),
    "collect": ("collectors.cli.pipeline_cmd", "collect", "Run the live collector pipeline on Spark."),
    "replay": ("collectors.cli.pipeline_cmd", "replay", "Run the pipeline over a capture folder."),
    "groups": ("collectors.cli.read_cmd", "groups", "List the groups the collector keeps in Redis."),
    "group": ("collectors.cli.read_cmd", "group", "Print one group's reconstruction from Redis."),
    "describe": ("collectors.cli.describe_cmd", "describe", "Describe groups like kafka-consumer-groups.sh."),
    "reset-offsets": (
        "collectors.cli.describe_cmd",
        "reset_offsets",
        "Plan an offset reset (never applies it).",
    ),
    "topics": ("collectors.cli.topics_cmd", "topics", "List the topics groups read, with their lag."),
    "topic": ("collectors.cli.topics_cmd", "topic", "Print every group that reads a topic, with its lag."),
    "alerts": ("collectors.cli.alerts_cmd", "alerts", "Evaluate and list alerts."),
    "acls": ("collectors.cli.acls_cmd", "acls", "Print the Kafka ACLs groupscope needs."),
    "worker": ("collectors.cli.alerts_cmd", "worker", "Run the Celery worker and beat."),
    "dashboard": ("dashboard.serve", "dashboard", "Serve the dashboard."),
    "demo": ("collectors.cli.demo_cmd", "demo", "Run a live demo: broker, workload, collector, UI."),
}


def load_command(name: str) -> click.Command:
    """The subcommand `name`, importing its module now."""
    if name == "dashboard":
        from dashboard.serve import dashboard

        return dashboard
    module, attr, _ = SUBCOMMANDS[name]
    return getattr(importlib.import_module(module), attr)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS:
            return None
        return load_command(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help without importing every module.
        rows = [(name, help_) for name, (_, _, help_) in SUBCOMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML configuration file (also GROUPSCOPE_CONFIG). Environment variables GROUPSCOPE_* "
    "override it; flags override both.",
)
@click.version_option(package_name="groupscope")
def cli(config_file: str | None) -> None:
    """groupscope: watch Kafka consumer groups live.

    Every command that reads or writes Redis takes --redis URL (default GROUPSCOPE_REDIS_URL, else
    redis://127.0.0.1:6379/0); every command that talks to Kafka takes --bootstrap-servers (default
    GROUPSCOPE_BOOTSTRAP_SERVERS). Other settings: see README.md, "Configuration".
    """
    if config_file:
        os.environ["GROUPSCOPE_CONFIG"] = config_file


def main() -> None:
    cli(prog_name="groupscope")


if __name__ == "__main__":
    main()
