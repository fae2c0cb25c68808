"""`groupscope decode [FILE|-]`: capture lines of `__consumer_offsets` records in, one JSON line per
record out, with the field names and values of `kafka-dump-log --offsets-decoder` (Kafka 4.3.1's
schemas):

    {"partition": P, "offset": O, "timestamp": T, "key": {"type": "1", "data": {...}},
     "value": {"version": "3", "data": {...}} | null}

A record that does not decode gives {"partition": P, "offset": O, "error": "..."} and decoding goes
on; so does a line that is not a capture record ("partition"/"offset" null when unknown, "line" its
1-based number). Exit 0 unless the input cannot be read (missing file: message on stderr, exit 2).
The input is streamed; output is written in blocks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO

import click

from collectors.capture.offsets_lines import CaptureLineError, iter_capture_lines
from collectors.codec.decoder import decode_record
from collectors.codec.errors import DecodeError
from collectors.codec.render import record_to_json

_dumps = json.JSONEncoder(separators=(",", ":")).encode


def decode_lines(lines: Iterable[bytes | str]) -> Iterator[str]:
    """One JSON string (no newline) per non-blank input line: the decoded record or an error."""
    for number, cap in iter_capture_lines(lines):
        if isinstance(cap, CaptureLineError):
            yield _dumps(
                {"partition": cap.partition, "offset": cap.offset, "line": number, "error": str(cap)}
            )
            continue
        try:
            rec = decode_record(cap.key, cap.value, cap.partition, cap.offset, cap.timestamp)
        except DecodeError as exc:
            yield _dumps({"partition": cap.partition, "offset": cap.offset, "error": str(exc)})
            continue
        yield _dumps(record_to_json(rec))


def _write_all(lines: Iterable[bytes | str], out: IO[str], block: int = 512) -> None:
    buf: list[str] = []
    for text in decode_lines(lines):
        buf.append(text)
        if len(buf) >= block:
            buf.append("")
            out.write("\n".join(buf))
            buf.clear()
    if buf:
        buf.append("")
        out.write("\n".join(buf))
    out.flush()


@click.command()
@click.argument("source", required=False, default="-")
def decode(source: str) -> None:
    """Decode capture lines (FILE or - for stdin) of __consumer_offsets records to JSON lines."""
    out = sys.stdout
    try:
        if source == "-":
            _write_all(sys.stdin.buffer, out)
        else:
            with open(source, "rb") as handle:
                _write_all(handle, out)
    except BrokenPipeError:
        # `groupscope decode x | head`: the reader went away; not an error of ours.
        sys.stderr.close()
    except FileNotFoundError:
        click.echo(f"groupscope decode: no such file: {source}", err=True)
        sys.exit(2)
    except IsADirectoryError:
        click.echo(f"groupscope decode: {source} is a directory (give its offsets.jsonl)", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"groupscope decode: cannot read {source}: {exc.strerror or exc}", err=True)
        sys.exit(2)
