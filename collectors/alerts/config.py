"""Load the alert rules: `alerts_file` (GROUPSCOPE_ALERTS_FILE or `alerts_file:` in the config), else
the `alerts:` section of the main config file (--config / GROUPSCOPE_CONFIG), else the defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from collectors.config import ConfigError, Settings
from coordinator_model.alert_rules import AlertConfig, AlertConfigError, parse_alert_config


def _read_yaml(path: str) -> Any:
    try:
        return yaml.safe_load(Path(path).read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read alerts file {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"alerts file {path} is not valid YAML: {e}") from e


def load_alert_config(settings: Settings) -> AlertConfig:
    data: Any = None
    source = "defaults"
    if settings.alerts_file:
        data, source = _read_yaml(settings.alerts_file), settings.alerts_file
    elif os.environ.get("GROUPSCOPE_CONFIG"):
        main = _read_yaml(os.environ["GROUPSCOPE_CONFIG"])
        if isinstance(main, dict) and isinstance(main.get("alerts"), dict):
            data, source = main["alerts"], os.environ["GROUPSCOPE_CONFIG"]
    try:
        return parse_alert_config(data)
    except AlertConfigError as e:
        raise ConfigError(f"alerts configuration ({source}): {e}") from e
