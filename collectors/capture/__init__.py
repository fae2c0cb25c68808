"""Capture folders: their files and lines (files.py), the `offsets.jsonl` line format
(offsets_lines.py), and the evidence a folder holds (evidence.py)."""

from collectors.capture.evidence import Capture, offsets_line_to_evidence, read_capture
from collectors.capture.files import CAPTURE_FILES

__all__ = ["CAPTURE_FILES", "Capture", "offsets_line_to_evidence", "read_capture"]
