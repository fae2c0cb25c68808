"""docs/configuration.md, rendered from the settings themselves (collectors/config.py), so the
reference cannot drift from the code: every setting's YAML key, environment variable, command-line
flags, type, default and help text (the field's `description`).

    python -m collectors.config_reference > docs/configuration.md     # or: make docs

tests/test_config_reference.py fails when docs/configuration.md differs from what this prints.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

import click
from pydantic.fields import FieldInfo

from collectors.config import ClusterSettings, Settings
from collectors.config_sources import ENV_PREFIX, OTHER_ENV, OTHER_KEYS

GENERATOR = "python -m collectors.config_reference > docs/configuration.md"

INTRO = f"""\
# Configuration reference

<!-- Generated from collectors/config.py by `{GENERATOR}` (or `make docs`).
     Do not edit by hand: change the settings' descriptions in collectors/config.py. -->

Every setting can be given in four places. Lowest precedence first:

1. the built-in default;
2. a YAML file: `groupscope --config FILE COMMAND ...`, or `GROUPSCOPE_CONFIG=FILE`;
3. an environment variable `GROUPSCOPE_<SETTING>`;
4. a command-line flag, where the setting has one.

A YAML key or a `GROUPSCOPE_*` variable that names no setting is an error that names the nearest
one (`unknown setting 'redis_ur'; did you mean 'redis_url'?`). YAML keys may use `-` or `.` for
`_`. Environment variables take lists and mappings as JSON.

Example `groupscope.yaml`:

```yaml
bootstrap_servers: broker1:9093,broker2:9093
kafka:
  security.protocol: SASL_SSL
  sasl.mechanism: SCRAM-SHA-512
  sasl.username: groupscope
  sasl.password: change-me
redis_url: rediss://:secret@redis.internal:6380/0
retention_s: 1209600
```
"""


def _commands() -> dict[str, click.Command]:
    """Every `groupscope` command by its full name (`alerts evaluate` for a group's subcommand)."""
    from collectors.cli.main import SUBCOMMANDS, load_command

    out: dict[str, click.Command] = {}
    for name in SUBCOMMANDS:
        cmd = load_command(name)
        if isinstance(cmd, click.Group):
            for sub, sub_cmd in cmd.commands.items():
                out[f"{name} {sub}"] = sub_cmd
        else:
            out[name] = cmd
    return out


def _has_flag(cmd: click.Command, flag: str) -> bool:
    return any(isinstance(p, click.Option) and flag in p.opts for p in cmd.params)


def flags_of(name: str, field: FieldInfo, commands: dict[str, click.Command]) -> list[tuple[str, list[str]]]:
    """(flag, the commands that take it) for each flag the field's metadata names. A flag no named
    command has is an error: the metadata and the command line must agree."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    by_flag: dict[str, list[str]] = {}
    for spec in extra.get("flags", []) or []:
        command, _, flag = str(spec).rpartition(" ")
        if command == "*":
            found = [c for c, cmd in commands.items() if _has_flag(cmd, flag)]
        else:
            found = [command] if command in commands and _has_flag(commands[command], flag) else []
        if not found:
            raise ValueError(f"setting {name}: no command {command!r} has the flag {flag} ({spec!r})")
        by_flag.setdefault(flag, []).extend(c for c in found if c not in by_flag.get(flag, []))
    return list(by_flag.items())


def type_name(annotation: Any) -> str:
    """A reader's name for a setting's type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        base = " or ".join(type_name(a) for a in inner)
        return f"{base}, optional" if len(inner) < len(args) else base
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        if value is ClusterSettings:
            return "mapping: cluster name -> cluster settings"
        return f"mapping of {type_name(value)}s"
    if origin is list:
        return f"list of {type_name(args[0]) if args else 'value'}s"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, str(annotation))


def constraints(field: FieldInfo) -> str:
    words = {"gt": "greater than", "ge": "at least", "lt": "less than", "le": "at most"}
    out = []
    for m in field.metadata:
        for attr, word in words.items():
            value = getattr(m, attr, None)
            if value is not None:
                out.append(f"{word} {value:g}" if isinstance(value, int | float) else f"{word} {value}")
    return ", ".join(out)


def default_text(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, dict | list):
        return f"`{value!r}`"
    text = str(value)
    home = str(Path.home())
    if isinstance(value, str) and home not in ("", "/") and text.startswith(home + "/"):
        text = "~" + text[len(home) :]  # the same page whoever renders it
    return f"`{text}`"


def _env(name: str) -> str:
    var = f"{ENV_PREFIX}{name.upper()}"
    if name == "kafka":
        return f"`{var}__<name>` (one librdkafka setting), or `{var}` (JSON)"
    if name == "clusters":
        return f"`{var}__<NAME>__<SETTING>` (see below), or `{var}` (JSON)"
    return f"`{var}`"


def _entry(
    name: str,
    field: FieldInfo,
    commands: dict[str, click.Command],
    yaml_key: str,
    env: str,
) -> list[str]:
    rows = [f"### `{name}`", "", str(field.description or "").strip(), ""]
    rows.append(f"- YAML: `{yaml_key}`")
    rows.append(f"- Environment: {env}")
    flags = flags_of(name, field, commands)
    if flags:
        said = "; ".join(f"`{flag}` ({', '.join(f'`groupscope {c}`' for c in cmds)})" for flag, cmds in flags)
        rows.append(f"- Flag: {said}")
    kind = type_name(field.annotation)
    limits = constraints(field)
    rows.append(f"- Type: {kind}" + (f" ({limits})" if limits else ""))
    rows.append(f"- Default: {default_text(field)}")
    rows.append("")
    return rows


def render() -> str:
    """The whole of docs/configuration.md."""
    commands = _commands()
    lines = [INTRO, "## Settings", ""]
    lines.append("| setting | environment variable | default |")
    lines.append("|---|---|---|")
    for name, field in Settings.model_fields.items():
        lines.append(f"| [`{name}`](#{name}) | `{ENV_PREFIX}{name.upper()}` | {default_text(field)} |")
    lines.append("")
    for name, field in Settings.model_fields.items():
        lines += _entry(name, field, commands, f"{name}:", _env(name))
    lines += [
        "## Settings of one cluster (`clusters:`)",
        "",
        "Each entry of `clusters:` names a Kafka cluster and takes these keys. The top-level",
        "`bootstrap_servers` and `kafka` are the cluster named `default`.",
        "",
        "```yaml",
        "clusters:",
        "  prod:",
        "    bootstrap_servers: prod-1:9093,prod-2:9093",
        "    kafka: {security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512, "
        "sasl.username: gs, sasl.password: x}",
        "  staging:",
        "    bootstrap_servers: staging-1:9092",
        "```",
        "",
    ]
    for name, field in ClusterSettings.model_fields.items():
        env = f"`{ENV_PREFIX}CLUSTERS__<NAME>__{name.upper()}`"
        if name == "kafka":
            env = f"`{ENV_PREFIX}CLUSTERS__<NAME>__KAFKA__<name>` (one librdkafka setting)"
        lines += _entry(f"clusters.<name>.{name}", field, {}, f"clusters: {{<name>: {{{name}: ...}}}}", env)
    lines += [
        "## Not settings",
        "",
        "These are read where they are used, and let through by the checks above.",
        "",
        "| name | what |",
        "|---|---|",
    ]
    for key, what in OTHER_KEYS.items():
        lines.append(f"| YAML `{key}:` | {what} |")
    for var, what in OTHER_ENV.items():
        lines.append(f"| `{var}` | {what} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
