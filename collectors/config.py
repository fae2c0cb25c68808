"""groupscope configuration: environment variables (GROUPSCOPE_*), an optional YAML file, then flags.

Precedence, lowest first: built-in defaults, the YAML file (``--config`` or ``GROUPSCOPE_CONFIG``),
environment variables, command-line flags. Kafka client settings are passed through to librdkafka
untouched, so SASL and SSL work exactly as librdkafka documents them.

A key of the YAML file (at the top or in a cluster's section) or a GROUPSCOPE_* environment variable
that names no setting is an error naming the nearest one (config_sources.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from collectors.config_sources import ConfigError, EnvCheck, YamlSource

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
# The cluster that today's single-cluster settings (bootstrap_servers, kafka, ...) describe, and the
# one whose Redis keys keep the layout written before clusters existed (collectors/storage/clusters.py).
DEFAULT_CLUSTER = "default"
# Lower case because environment variables (GROUPSCOPE_CLUSTERS__PROD__...) do not keep case; no ':',
# '@' or braces, which would blur the Redis keys the name goes into.
CLUSTER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")


def check_cluster_name(name: str) -> str:
    if not CLUSTER_NAME.fullmatch(name):
        raise ConfigError(
            f"cluster name {name!r} is not valid: use 1-63 lower-case letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def check_timezone(name: str) -> ZoneInfo:
    """The time zone of an IANA name (UTC, Europe/Paris); ValueError naming the setting's form when
    there is no such zone, so an unknown one stops the dashboard at start, not at its first page."""
    try:
        return ZoneInfo(name)
    except Exception as e:  # ZoneInfoNotFoundError, ValueError (a path), OSError (a directory)
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA time zone name such as UTC, Europe/Paris "
            "or America/New_York"
        ) from e


def one_cluster(names: list[str], wanted: str | None = None) -> str | None:
    """The cluster a single-cluster read or command means among `names`: `wanted`, else the only
    one, else `default` when it is there; None when that leaves a choice to make."""
    if wanted:
        return wanted
    if len(names) == 1:
        return names[0]
    return DEFAULT_CLUSTER if DEFAULT_CLUSTER in names else None


class ClusterSettings(BaseModel):
    """One Kafka cluster of the `clusters:` mapping. Unset topics are the top-level ones; client
    settings (`kafka`: SASL, SSL, ...) are never inherited, so one cluster's credentials never go to
    another cluster's brokers."""

    model_config = ConfigDict(extra="forbid")

    bootstrap_servers: str = Field(description="This cluster's Kafka bootstrap servers, `host:port,...`.")
    kafka: dict[str, str] = Field(
        default_factory=dict,
        description="This cluster's librdkafka settings (SASL, SSL, ...). Never inherited from the "
        "top-level `kafka`.",
    )
    offsets_topic: str | None = Field(None, description="As the top-level setting; unset: the top-level one.")
    heartbeat_topic: str | None = Field(
        None, description="As the top-level setting; unset: the top-level one."
    )
    broker_log_topic: str | None = Field(None, description="As the top-level setting, for this cluster.")
    broker_log_files: list[str] = Field(
        default_factory=list, description="As the top-level setting, for this cluster's brokers."
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GROUPSCOPE_", env_nested_delimiter="__", extra="ignore")

    # Every field's `description` is its help text, and `json_schema_extra={"flags": ...}` names the
    # command-line flags that set it ("COMMAND --flag", "*" for every command that has the flag).
    # docs/configuration.md is generated from them (collectors/config_reference.py): edit them here.

    # Kafka: bootstrap servers plus any librdkafka setting (security.protocol, sasl.*, ssl.*, ...).
    bootstrap_servers: str | None = Field(
        None,
        description="Kafka bootstrap servers, `host:port,...`: the cluster named `default`. "
        "`groupscope collect` needs it, or `clusters:`.",
        json_schema_extra={"flags": ["collect --bootstrap-servers", "demo --bootstrap-servers"]},
    )
    kafka: dict[str, str] = Field(
        default_factory=dict,
        description="Any librdkafka client setting, passed through untouched (`security.protocol`, "
        "`sasl.mechanism`, `sasl.username`, `sasl.password`, `ssl.ca.location`, ...). From the "
        "environment: `GROUPSCOPE_KAFKA__<name>` per setting, or `GROUPSCOPE_KAFKA` as JSON.",
    )
    offsets_topic: str = Field(
        "__consumer_offsets",
        description="The group coordinator's offsets topic, read from its earliest offset.",
    )
    heartbeat_topic: str = Field(
        "groupscope.heartbeats",
        description="The topic the heartbeat probe in your applications writes. Created (3 partitions) "
        "when missing and its name starts with `groupscope.`.",
    )
    broker_log_topic: str | None = Field(
        None,
        description="A topic you fill with the brokers' group-coordinator log lines. Unset with "
        "`broker_log_files` set: the collector ships those files to `groupscope.broker-log` itself.",
    )
    broker_log_files: list[str] = Field(
        default_factory=list,
        description="Broker log files the collector tails and ships, so each rebalance shows the reason "
        "the broker logged. The files must be readable where the collector runs.",
    )
    admin_poll_interval_s: float = Field(
        5.0,
        description="Seconds between two full polls of the Admin API (ListGroups, describes, log-end "
        "offsets). Also the longest a group's timers wait when nothing else happens.",
    )
    admin_hot_interval_s: float = Field(
        0.1,
        description="A group in motion (rebalancing, or just changed) is described this often between "
        "full polls; a millisecond more per group beyond a hundred in motion. `0`: off.",
    )
    admin_resend_s: float = Field(
        60.0,
        description="An unchanged Admin API answer is sent to the model again about this often; a "
        "changed one at once.",
    )
    # every group's state, members and committed offsets from the Admin poller's first answers while
    # Spark starts, marked provisional until the pipeline's own (collectors/pipeline/provisional_heads.py)
    provisional_documents: bool = Field(
        True,
        description="While Spark starts, show every group from the Admin poller's first answers (state, "
        "members, committed offsets), marked provisional until the pipeline's own document replaces it.",
    )

    # Several clusters: name -> its settings (YAML `clusters:`, GROUPSCOPE_CLUSTERS__PROD__BOOTSTRAP_SERVERS).
    # The top-level Kafka settings above, when bootstrap_servers is set, are the cluster `default`.
    clusters: dict[str, ClusterSettings] = Field(
        default_factory=dict,
        description="Several Kafka clusters: name -> that cluster's settings (below). Names: lower-case "
        "letters, digits, `_`, `.`, `-`.",
    )
    # The cluster a command works on when it needs one (`--cluster`); None: the only one, or `default`.
    cluster: str | None = Field(
        None,
        description="The cluster a single-cluster command works on. Unset: the only configured one, "
        "else `default`.",
        json_schema_extra={"flags": ["collect --cluster"]},
    )

    # Redis: any redis-py URL, e.g. rediss://:password@host:6380/0 for TLS with a password.
    redis_url: str = Field(
        DEFAULT_REDIS_URL,
        description="Where the collector writes and every reader reads: any redis-py URL. "
        "`rediss://:password@host:6380/0` for TLS with a password.",
        json_schema_extra={"flags": ["* --redis"]},
    )

    # Spark
    spark_master: str = Field(
        "local[*]",
        description="The Spark master: `local[*]` (every core of this machine), `spark://host:7077`, "
        "`yarn`, `k8s://https://...`.",
        json_schema_extra={"flags": ["collect --master", "replay --master"]},
    )
    checkpoint_dir: str = Field(
        str(Path.home() / ".groupscope" / "checkpoints"),
        description="Where the collector keeps its Spark checkpoints (`collect`, `collect@CLUSTER`): the "
        "Kafka offsets read and each group's model state. Must persist across restarts. "
        "`collect --checkpoint DIR` names the folder itself instead.",
    )
    trigger_interval_s: float = Field(
        1.0, description="Seconds between two micro-batches of the collector (at least 0.1)."
    )
    # commits to partitions a group holds, applied as they arrive (collectors/pipeline/commit_lane.py)
    commit_lane: bool = Field(
        False,
        description="Apply offset commits to partitions a group already holds as they arrive, through "
        "one more Kafka consumer in the collector's driver, rather than at the next micro-batch: a "
        "commit shows within about 0.1 s instead of 0.5 s on a quiet cluster. It reads every commit a "
        "second time beside Spark: turn it on where the collector has a core to spare, not where it is "
        "short of CPU (there a busy cluster's commits show later with it than without).",
    )
    # the share of a core the collector's lag refresher may spend (collectors/pipeline/lag_refresh.py)
    lag_refresh_cpu_share: float = Field(
        0.2,
        gt=0,
        le=1,
        description="The share of a core the collector spends bringing lagging groups' fleet rows, "
        "alerts and lag history up to the log ends, each once a minute. A fleet too large for it is "
        "refreshed less often; `gs:collector:lag_refresh` says how far behind.",
    )
    max_records_per_batch: int = Field(
        1_000_000,
        description="The most records one micro-batch reads, so a large backlog reaches Redis in parts. "
        "Lower it when executors are short of memory.",
    )
    # how far behind the newest evidence the model's timers run, so heartbeat events still in
    # transit are not taken for a member's silence (docs/running-on-a-cluster.md, timers)
    allowed_lateness_ms: int = Field(
        5000,
        description="How far behind the newest evidence the model's timers run, so heartbeat events "
        "still in transit are not taken for a member's silence.",
    )

    # History
    retention_s: int = Field(
        7 * 24 * 3600,
        description="History kept in Redis (timelines, generations, lag history, resolved alerts), in "
        "seconds. Empty or Dead groups not refreshed within it are dropped.",
    )

    # Dashboard
    dashboard_host: str = Field(
        "127.0.0.1",
        description="Address the dashboard listens on. Any non-loopback address needs "
        "`dashboard_user` and `dashboard_password`, or `allow_open_bind`.",
        json_schema_extra={"flags": ["dashboard --host"]},
    )
    dashboard_port: int = Field(
        8050, description="Port the dashboard listens on.", json_schema_extra={"flags": ["dashboard --port"]}
    )
    dashboard_refresh_s: float = Field(5.0, description="The dashboard pages' default refresh interval.")
    dashboard_timezone: str = Field(
        "UTC",
        description="The time zone of every time the dashboard shows (tables, chart axes, hovers): an "
        "IANA name such as `UTC`, `Europe/Paris` or `America/New_York`. An unknown name stops the "
        "dashboard at start.",
    )
    # HTTP basic authentication of the dashboard and of the worker's /metrics: both or neither.
    dashboard_user: str | None = Field(
        None,
        description="User of the HTTP basic authentication that guards the dashboard, its API and the "
        "worker's `/metrics`. Set both user and password, or neither.",
    )
    dashboard_password: str | None = Field(
        None, description="Password of that basic authentication. Set both user and password, or neither."
    )

    # HTTP endpoints (the dashboard, the worker's /metrics) listen on loopback unless told otherwise;
    # any other address needs the basic authentication above, or this set to say the endpoint is
    # open to anyone who can reach it (collectors/endpoints.py).
    allow_open_bind: bool = Field(
        False,
        description="Serve the dashboard or `/metrics` on a non-loopback address without "
        "authentication: open to anyone who can reach it.",
        json_schema_extra={"flags": ["dashboard --allow-open-bind", "worker --allow-open-bind"]},
    )

    # Alerting
    alerts_file: str | None = Field(
        None,
        description="A YAML file of alert rules and notifiers (docs/alerts.md). Unset: the `alerts:` "
        "section of the config file, else the built-in rules.",
    )
    alerts_interval_s: float = Field(
        5.0,
        description="Seconds between two alert evaluation cycles of `groupscope worker`.",
        json_schema_extra={"flags": ["worker --interval"]},
    )
    metrics_per_partition: bool = Field(
        False, description="Also export lag per partition on `/metrics` (many more series)."
    )
    metrics_host: str = Field(
        "127.0.0.1",
        description="Address `groupscope worker --metrics-port` serves `/metrics` on. Any non-loopback "
        "address needs the basic authentication, or `allow_open_bind`.",
        json_schema_extra={"flags": ["worker --metrics-host"]},
    )

    @field_validator("dashboard_port")
    @classmethod
    def _port(cls, v: int) -> int:
        if not 0 < v < 65536:
            raise ValueError("must be between 1 and 65535")
        return v

    @field_validator("dashboard_timezone")
    @classmethod
    def _timezone(cls, v: str) -> str:
        check_timezone(v)
        return v

    @model_validator(mode="after")
    def _auth_whole(self) -> Settings:
        """Basic authentication half configured is a mistake to say, never a silent 'off'."""
        if bool(self.dashboard_user) != bool(self.dashboard_password):
            have, missing = (
                ("dashboard_user", "dashboard_password")
                if self.dashboard_user
                else ("dashboard_password", "dashboard_user")
            )
            raise ValueError(
                f"{have} is set but {missing} is not: basic authentication needs both "
                f"(GROUPSCOPE_{missing.upper()} or `{missing}:` in the config file); set it, or unset "
                f"{have} to turn authentication off"
            )
        return self

    def basic_auth(self) -> tuple[str, str] | None:
        """(user, password) of the dashboard's and /metrics' basic authentication, None when off."""
        if self.dashboard_user and self.dashboard_password:
            return self.dashboard_user, self.dashboard_password
        return None

    @field_validator("clusters")
    @classmethod
    def _cluster_names(cls, v: dict[str, ClusterSettings]) -> dict[str, ClusterSettings]:
        for name in v:
            check_cluster_name(name)
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
        return (
            init_settings,
            EnvCheck(settings_cls, ClusterSettings),
            env_settings,
            YamlSource(settings_cls, ClusterSettings),
        )

    def kafka_config(self, **extra: Any) -> dict[str, Any]:
        """librdkafka configuration for a client: the pass-through settings plus bootstrap servers."""
        conf: dict[str, Any] = dict(self.kafka)
        if self.bootstrap_servers:
            conf["bootstrap.servers"] = self.bootstrap_servers
        conf.update(extra)
        return conf

    # ---- clusters ----------------------------------------------------------------------------------
    def cluster_names(self) -> list[str]:
        """Every configured cluster: the `clusters:` mapping, plus `default` when the top-level
        bootstrap_servers is set (or when nothing is configured at all, as before clusters existed)."""
        names = list(self.clusters)
        if DEFAULT_CLUSTER not in self.clusters and (self.bootstrap_servers or not names):
            names.insert(0, DEFAULT_CLUSTER)
        return names

    def configured_clusters(self) -> list[str]:
        """The clusters these settings name: cluster_names() without the `default` it stands in
        when nothing is configured (a reader of a Redis holding only named clusters must not show an
        empty `default` nobody writes)."""
        return self.cluster_names() if self.bootstrap_servers or self.clusters else []

    def chosen_cluster(self, name: str | None = None) -> str:
        """The cluster a single-cluster command works on: `name` (or the `cluster` setting), else
        the only configured one, else `default`."""
        name = name or self.cluster
        if name is not None:
            check_cluster_name(name)
        return one_cluster(self.cluster_names(), name) or DEFAULT_CLUSTER

    def for_cluster(self, name: str | None = None) -> Settings:
        """These settings with one cluster's Kafka settings in the top-level fields, so everything
        that reads `bootstrap_servers`, `kafka_config()` and the topics works on that cluster."""
        name = self.chosen_cluster(name)
        c = self.clusters.get(name)
        if name not in self.cluster_names():
            known = ", ".join(self.cluster_names())
            raise ConfigError(f"cluster {name!r} is not configured (configured: {known})")
        if c is None:  # `default`: the top-level settings
            return self.model_copy(update={"cluster": name})
        return self.model_copy(
            update={
                "cluster": name,
                "bootstrap_servers": c.bootstrap_servers,
                "kafka": dict(c.kafka),
                "offsets_topic": c.offsets_topic or self.offsets_topic,
                "heartbeat_topic": c.heartbeat_topic or self.heartbeat_topic,
                "broker_log_topic": c.broker_log_topic,
                "broker_log_files": list(c.broker_log_files),
            }
        )


def load_settings(**overrides: Any) -> Settings:
    """Settings from file and environment, with non-None overrides (from flags) on top."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ConfigError:
        raise
    except Exception as e:  # pydantic's ValidationError: keep it to one readable line per field
        errors = getattr(e, "errors", None)
        if callable(errors):
            msgs = []
            for err in errors():
                where = ".".join(map(str, err["loc"]))
                msg = str(err["msg"]).removeprefix("Value error, ")
                msgs.append(f"{where}: {msg}" if where else msg)
            raise ConfigError("invalid configuration: " + "; ".join(msgs)) from e
        raise ConfigError(f"invalid configuration: {e}") from e
