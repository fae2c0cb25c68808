"""groupscope configuration: environment variables (GROUPSCOPE_*), an optional YAML file, then flags.

Precedence, lowest first: built-in defaults, the YAML file (``--config`` or ``GROUPSCOPE_CONFIG``),
environment variables, command-line flags. Kafka client settings are passed through to librdkafka
untouched, so SASL and SSL work exactly as librdkafka documents them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which setting and why."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GROUPSCOPE_", env_nested_delimiter="__", extra="ignore")

    # Kafka: bootstrap servers plus any librdkafka setting (security.protocol, sasl.*, ssl.*, ...).
    bootstrap_servers: str | None = None
    kafka: dict[str, str] = Field(default_factory=dict)
    offsets_topic: str = "__consumer_offsets"
    heartbeat_topic: str = "groupscope.heartbeats"
    broker_log_topic: str | None = None
    broker_log_files: list[str] = Field(default_factory=list)
    admin_poll_interval_s: float = 5.0
    admin_hot_interval_s: float = 0.3  # groups in motion are described this often (0: off)
    admin_resend_s: float = 60.0  # an unchanged Admin answer is sent on to the model again after this

    # Redis: any redis-py URL, e.g. rediss://:password@host:6380/0 for TLS with a password.
    redis_url: str = DEFAULT_REDIS_URL

    # Spark
    spark_master: str = "local[*]"
    checkpoint_dir: str = str(Path.home() / ".groupscope" / "checkpoints")
    trigger_interval_s: float = 1.0
    max_records_per_batch: int = 1_000_000
    # how far behind the newest evidence the model's timers run, so heartbeat events still in
    # transit are not taken for a member's silence (docs/running-on-a-cluster.md, timers)
    allowed_lateness_ms: int = 5000

    # History
    retention_s: int = 7 * 24 * 3600

    # Dashboard
    dashboard_host: str = "127.0.0.1"
    dashboard_port: int = 8050
    dashboard_refresh_s: float = 5.0
    dashboard_user: str | None = None
    dashboard_password: str | None = None

    # Alerting
    alerts_file: str | None = None
    alerts_interval_s: float = 5.0
    metrics_per_partition: bool = False

    @field_validator("dashboard_port")
    @classmethod
    def _port(cls, v: int) -> int:
        if not 0 < v < 65536:
            raise ValueError("must be between 1 and 65535")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlSource(settings_cls))

    def kafka_config(self, **extra: Any) -> dict[str, Any]:
        """librdkafka configuration for a client: the pass-through settings plus bootstrap servers."""
        conf: dict[str, Any] = dict(self.kafka)
        if self.bootstrap_servers:
            conf["bootstrap.servers"] = self.bootstrap_servers
        conf.update(extra)
        return conf


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the YAML file named by GROUPSCOPE_CONFIG (set by ``--config`` too)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("GROUPSCOPE_CONFIG")
        if not path:
            return {}
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {path} is not valid YAML: {e}") from e
        if not isinstance(data, dict):
            raise ConfigError(f"config file {path} must hold a mapping of settings")
        # YAML may spell keys with dashes or dots; settings use underscores.
        return {str(k).replace("-", "_").replace(".", "_"): v for k, v in data.items()}


def load_settings(**overrides: Any) -> Settings:
    """Settings from file and environment, with non-None overrides (from flags) on top."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ConfigError:
        raise
    except Exception as e:  # pydantic's ValidationError: keep it to one readable line per field
        errors = getattr(e, "errors", None)
        if callable(errors):
            msgs = [f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in errors()]
            raise ConfigError("invalid configuration: " + "; ".join(msgs)) from e
        raise ConfigError(f"invalid configuration: {e}") from e
