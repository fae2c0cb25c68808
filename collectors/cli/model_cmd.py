"""`groupscope model CAPTURE_DIR [--json] [--at MS]`: rebuild every group of a capture folder."""

from __future__ import annotations

import json
import sys

import click


@click.command()
@click.argument("capture_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document {'groups': [...]}.")
@click.option("--at", "at_ms", type=int, default=None, help="Rebuild as of this moment (epoch ms).")
def model(capture_dir: str, as_json: bool, at_ms: int | None) -> None:
    """Rebuild every group of a capture folder in one process and print it."""
    from collectors.capture import read_capture
    from coordinator_model.rebuild import rebuild
    from coordinator_model.render import render_text

    cap = read_capture(capture_dir)
    if not cap.files:
        raise click.ClickException(f"{capture_dir}: none of the capture files is there")
    engines = rebuild(cap.evidence, at_ms=at_ms)
    docs = [engines[g].document(at_ms) for g in sorted(engines)]
    for name, line, msg in cap.errors[:20]:
        click.echo(f"warning: {name}:{line}: {msg}", err=True)
    if len(cap.errors) > 20:
        click.echo(f"warning: {len(cap.errors) - 20} more unreadable lines", err=True)
    if as_json:
        json.dump({"groups": [d.to_json() for d in docs]}, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        click.echo(render_text(docs, cap.files))
