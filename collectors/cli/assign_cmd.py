"""`groupscope assign` and `groupscope whatif`: run the assignors and the what-if engine over a JSON
group description (format: docs/assign-format.md). Bad input: one line on stderr, exit status 2."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

_PAIR = re.compile(r'\[\s+("(?:[^"\\]|\\.)*"),\s+(-?\d+)\s+\]')


def _fail(message: str) -> None:
    click.echo(f"groupscope: {message}", err=True)
    raise SystemExit(2)


def _load(file: str) -> Any:
    try:
        if file == "-":
            text = sys.stdin.read()
        else:
            with open(file, encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        _fail(f"cannot read {file}: {e.strerror or e}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        _fail(f"{file}: malformed JSON: {e.msg} at line {e.lineno} column {e.colno}")


@click.command()
@click.option(
    "--assignor",
    required=True,
    help="range, roundrobin, sticky, cooperative-sticky, uniform or server-range.",
)
@click.argument("file", type=click.Path(allow_dash=True))
def assign(assignor: str, file: str) -> None:
    """Run one assignor over a group description (JSON FILE, '-' for stdin) and print the assignment."""
    from coordinator_model.assignors import AssignorError
    from coordinator_model.assignors import assign as run_assignor
    from coordinator_model.assignors.description import parse_group

    doc = _load(file)
    try:
        result = run_assignor(assignor, parse_group(doc))
    except AssignorError as e:
        _fail(str(e))
    out = {m: [list(tp) for tp in tps] for m, tps in result.items()}
    click.echo(json.dumps({"assignment": out}, sort_keys=True))


@click.command()
@click.argument("file", type=click.Path(allow_dash=True))
def whatif(file: str) -> None:
    """Compare assignors and changes for a group description (JSON FILE, '-' for stdin)."""
    from coordinator_model.assignors import AssignorError
    from coordinator_model.whatif import run_whatif

    doc = _load(file)
    try:
        report = run_whatif(doc)
    except AssignorError as e:
        _fail(str(e))
    text = json.dumps(report, indent=2, sort_keys=True)
    # [topic, partition] pairs on one line each: the report stays readable at thousands of partitions
    click.echo(_PAIR.sub(r"[\1, \2]", text))
