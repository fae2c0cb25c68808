"""docs/configuration.md is generated from the settings (collectors/config_reference.py): it must be
what the generator prints now, so the reference cannot drift from collectors/config.py. No servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.config import ClusterSettings, Settings
from collectors.config_reference import GENERATOR, _commands, flags_of, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_configuration_md_is_what_the_generator_prints() -> None:
    assert DOC.read_text() == render(), (
        f"docs/configuration.md is out of date with collectors/config.py: run `{GENERATOR}` (or `make docs`)"
    )


@pytest.mark.parametrize("model", [Settings, ClusterSettings])
def test_every_setting_has_help_text(model: type) -> None:
    missing = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert not missing, f"settings without a description in collectors/config.py: {missing}"


def test_every_flag_named_by_a_setting_exists() -> None:
    commands = _commands()
    for name, field in Settings.model_fields.items():
        for flag, cmds in flags_of(name, field, commands):  # raises on a flag no command has
            assert flag.startswith("--") and cmds


def test_a_flag_no_command_has_is_refused() -> None:
    from pydantic.fields import FieldInfo

    field = FieldInfo(default=None, json_schema_extra={"flags": ["collect --no-such-flag"]})
    with pytest.raises(ValueError, match="no-such-flag"):
        flags_of("x", field, _commands())


def test_the_page_does_not_depend_on_who_renders_it(tmp_path: Path) -> None:
    """Another home folder (checkpoint_dir's default is under it) renders the same page."""
    env = {**os.environ, "HOME": str(tmp_path)}
    env = {k: v for k, v in env.items() if not k.startswith("GROUPSCOPE_")}
    out = subprocess.run(
        [sys.executable, "-m", "collectors.config_reference"],
        cwd=DOC.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out == render()
