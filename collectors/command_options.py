"""Options shared by the `groupscope` subcommands, those of collectors/cli/ and `groupscope dashboard`
(dashboard/serve.py), so every command spells --redis and --bootstrap-servers alike. Outside both,
so that neither the command line nor the dashboard imports the other for them."""

from __future__ import annotations

from typing import Any

import click

from collectors.config import ConfigError, Settings, load_settings

redis_option = click.option(
    "--redis",
    "redis_url",
    metavar="URL",
    default=None,
    help="Redis URL (redis:// or rediss:// with password). Default: GROUPSCOPE_REDIS_URL, "
    "else redis://127.0.0.1:6379/0.",
)
bootstrap_option = click.option(
    "--bootstrap-servers",
    "bootstrap_servers",
    metavar="HOST:PORT[,...]",
    default=None,
    help="Kafka bootstrap servers. Default: GROUPSCOPE_BOOTSTRAP_SERVERS. Other librdkafka settings "
    "(SASL, SSL) come from GROUPSCOPE_KAFKA__<name> or the 'kafka:' mapping of the config file.",
)


def settings_from(**overrides: Any) -> Settings:
    """Load settings, turning a configuration problem into a clean CLI error (exit 2)."""
    try:
        return load_settings(**overrides)
    except ConfigError as e:
        raise click.UsageError(str(e)) from e
