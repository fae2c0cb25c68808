"""The files of a capture folder (tests/fixtures/real-kafka-4.0/<scenario>/), and its lines.

All files are optional: `offsets.jsonl` (raw `__consumer_offsets` records, see offsets_lines.py),
`broker.log` (the broker's server.log), `describe.jsonl`, `end_offsets.jsonl` and `heartbeats.jsonl`.
`CAPTURE_FILES` is also the order in which a folder is read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import AnyStr

OFFSETS_FILE = "offsets.jsonl"
BROKER_LOG = "broker.log"
CAPTURE_FILES = (OFFSETS_FILE, BROKER_LOG, "describe.jsonl", "end_offsets.jsonl", "heartbeats.jsonl")


def capture_files(folder: str | Path, without: Collection[str] = ()) -> list[str]:
    """The capture files that `folder` holds, in `CAPTURE_FILES` order, less those named in `without`."""
    folder = Path(folder)
    return [name for name in CAPTURE_FILES if name not in without and (folder / name).is_file()]


def numbered_lines(lines: Iterable[AnyStr]) -> Iterator[tuple[int, AnyStr]]:
    """(1-based line number, line) for each non-blank line; blank lines are counted, not given."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield number, line


def folder_lines(folder: str | Path, without: Collection[str] = ()) -> Iterator[tuple[str, int, bytes]]:
    """(file name, line number, raw line) for every non-blank line of the folder's capture files, file
    after file in `CAPTURE_FILES` order. A raw line is the file's bytes up to and with its b"\\n"."""
    folder = Path(folder)
    for name in capture_files(folder, without):
        with (folder / name).open("rb") as f:
            for number, raw in numbered_lines(f):
                yield name, number, raw
