"""`groupscope acls`: the Kafka ACLs groupscope needs (collectors/kafka_acls.py), as `kafka-acls.sh`
commands to grant them; docs/security.md says what each one is for."""

from __future__ import annotations

import shlex

import click

from collectors.kafka_acls import needed


@click.command()
@click.option("--principal", default="User:groupscope", show_default=True, help="Who the collector is.")
@click.option(
    "--bootstrap-servers", default="BROKER:9092", show_default=True, help="Put in the printed commands."
)
@click.option(
    "--command-config",
    default="admin.properties",
    show_default=True,
    help="The admin client settings file of whoever grants them (kafka-acls.sh --command-config).",
)
@click.option(
    "--no-offsets-topic",
    is_flag=True,
    help="Leave out Read on __consumer_offsets (managed clusters that forbid it: Admin API only).",
)
@click.option("--heartbeat-topic", default="groupscope.heartbeats", show_default=True)
def acls(
    principal: str, bootstrap_servers: str, command_config: str, no_offsets_topic: bool, heartbeat_topic: str
) -> None:
    """Print the kafka-acls.sh commands that grant groupscope exactly what it needs."""
    if not principal.startswith("User:"):
        raise click.BadParameter("a Kafka principal looks like User:NAME", param_hint="--principal")
    feature = None
    for acl in needed(read_offsets=not no_offsets_topic, heartbeat_topic=heartbeat_topic):
        if acl.feature != feature:
            feature = acl.feature
            click.echo(f"# {feature}")
        argv = ["kafka-acls.sh", "--bootstrap-server", bootstrap_servers, "--command-config", command_config]
        click.echo(shlex.join(argv + acl.cli_args(principal)))
