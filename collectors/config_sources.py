"""Where the settings come from besides the defaults and the flags: the YAML file and the
environment, each checked so that a key or a GROUPSCOPE_* variable that names no setting is an error
naming the nearest one (a misspelt setting never falls back to its default in silence). The
environment variables other parts of groupscope read themselves (`OTHER_ENV`) are let through."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource


class ConfigError(ValueError):
    """The configuration cannot be used; the message says which setting and why."""


ENV_PREFIX = "GROUPSCOPE_"
# GROUPSCOPE_* variables that are not settings: read directly where they are used.
OTHER_ENV = {
    "GROUPSCOPE_CONFIG": "the YAML configuration file (--config)",
    "GROUPSCOPE_SPARK_CONF": "Spark settings, key=value,... (collectors/spark_session.py)",
    "GROUPSCOPE_PROGRESS_LOG": "a file for one JSON line per micro-batch (collectors/pipeline/job.py)",
    "GROUPSCOPE_KAFKA_VERSION": "the Apache Kafka release of the embedded broker's jars",
    "GROUPSCOPE_DEMO_ID": "the mark of the demo's processes (collectors/demo/supervisor.py)",
}
# The YAML file's top-level keys that are not settings: read by another part of groupscope.
OTHER_KEYS = {"alerts": "the alert rules (collectors/alerts/config.py, docs/alerts.md)"}


def nearest(name: str, known: list[str]) -> str:
    """The known name most like `name` (difflib's ratio), for an error to suggest."""
    return (difflib.get_close_matches(name, known, n=1, cutoff=0.0) or [""])[0]


class _CheckedSource(PydanticBaseSettingsSource):
    """A source that knows the settings (`settings_cls`) and those of one cluster of the `clusters:`
    mapping (`cluster_cls`), to check names against both; it gives its values whole from __call__."""

    def __init__(self, settings_cls: type[BaseSettings], cluster_cls: type[BaseModel]) -> None:
        super().__init__(settings_cls)
        self.cluster_cls = cluster_cls

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False


class YamlSource(_CheckedSource):
    """Reads the YAML file named by GROUPSCOPE_CONFIG (set by ``--config`` too)."""

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
        # YAML may spell keys with dashes or dots; settings use underscores (not librdkafka's keys
        # under `kafka:`, which keep their dots).
        out = {_setting_name(k): v for k, v in data.items()}
        _check_keys(data, list(self.settings_cls.model_fields), f"config file {path}: ", extra=OTHER_KEYS)
        for key in OTHER_KEYS:
            out.pop(key, None)
        clusters = out.get("clusters")
        if isinstance(clusters, dict):
            for name, c in clusters.items():
                if isinstance(c, dict):
                    _check_keys(
                        c, list(self.cluster_cls.model_fields), f"config file {path}: clusters.{name}: "
                    )
            out["clusters"] = {
                str(name): {_setting_name(k): v for k, v in c.items()} if isinstance(c, dict) else c
                for name, c in clusters.items()
            }
        return out


def _check_keys(
    data: dict[Any, Any], known: list[str], where: str, extra: dict[str, str] | None = None
) -> None:
    """ConfigError for the first key of `data` that names no setting of `known` (nor of `extra`),
    naming the nearest one."""
    allowed = [*known, *(extra or {})]
    for key in data:
        if _setting_name(key) not in allowed:
            raise ConfigError(
                f"{where}unknown setting {str(key)!r}; did you mean {nearest(_setting_name(key), allowed)!r}?"
            )


class EnvCheck(_CheckedSource):
    """Refuses a GROUPSCOPE_* environment variable that names no setting (nor one of OTHER_ENV),
    naming the nearest; gives no values itself (the environment source reads them)."""

    def __call__(self) -> dict[str, Any]:
        for var in sorted(os.environ):
            if var.upper().startswith(ENV_PREFIX):
                why = env_problem(var, self.settings_cls, self.cluster_cls)
                if why:
                    raise ConfigError(why)
        return {}


# Settings that hold a mapping, set item by item from the environment (GROUPSCOPE_KAFKA__<name>,
# GROUPSCOPE_CLUSTERS__<cluster>__<setting>).
_NESTED = ("kafka", "clusters")


def env_problem(var: str, settings_cls: type[BaseModel], cluster_cls: type[BaseModel]) -> str | None:
    """Why the environment variable `var` (GROUPSCOPE_...) names no setting of `settings_cls` (a
    cluster's: of `cluster_cls`), or None when it does (or is one of OTHER_ENV). Names are matched
    without case, as pydantic-settings reads them."""
    upper = var.upper()
    if upper in OTHER_ENV:
        return None
    fields = list(settings_cls.model_fields)
    known = [ENV_PREFIX + f.upper() for f in fields] + list(OTHER_ENV)
    top, _, rest = upper[len(ENV_PREFIX) :].partition("__")
    field = top.lower()
    if field not in fields:
        guess = nearest(ENV_PREFIX + top, known)
        return f"environment variable {var} names no setting; did you mean {guess}?"
    if not rest:
        return None
    if field not in _NESTED:
        return (
            f"environment variable {var}: {field} holds no settings of its own; "
            f"did you mean {ENV_PREFIX}{top}?"
        )
    if field == "clusters":
        name, _, setting = rest.partition("__")
        head = setting.partition("__")[0].lower()
        cluster_fields = list(cluster_cls.model_fields)
        if setting and head not in cluster_fields:
            guess = nearest(head, cluster_fields).upper()
            return (
                f"environment variable {var}: a cluster has no setting {head}; "
                f"did you mean {ENV_PREFIX}CLUSTERS__{name}__{guess}?"
            )
        if setting and "__" in setting and head != "kafka":
            return f"environment variable {var}: {head} holds no settings of its own"
    return None


def _setting_name(key: Any) -> str:
    return str(key).replace("-", "_").replace(".", "_")
