"""Kafka's own decoding of `__consumer_offsets`: `kafka-dump-log --offsets-decoder` (DumpLogSegments,
from the same Maven Central jars as the broker) over a broker's log segments, parsed into the shape of
a capture's expected.jsonl: {"partition", "offset", "key": {...}, "value": {...} | None}.

The golden test holds `groupscope decode` against this on every record the embedded broker wrote.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from collectors.demo.servers.kafka.broker import java_binary
from collectors.demo.servers.kafka.jars import classpath, ensure_jars, kafka_version

_OFFSET = re.compile(r"^\| offset: (\d+) ")


def dump_main_class(version: str) -> str:
    """kafka-dump-log's class: Java in kafka-tools from 4.1, Scala in the broker's core before."""
    import zipfile

    java_class = "org/apache/kafka/tools/DumpLogSegments.class"
    for jar in ensure_jars(version).glob("kafka-tools-*.jar"):
        with zipfile.ZipFile(jar) as z:
            if java_class in z.namelist():
                return "org.apache.kafka.tools.DumpLogSegments"
    return "kafka.tools.DumpLogSegments"


def offsets_segments(data_dir: Path, topic: str = "__consumer_offsets") -> list[tuple[int, Path]]:
    """(partition, segment file) of every log segment of the topic, in partition and offset order."""
    out = []
    for part_dir in data_dir.glob(f"{topic}-*"):
        partition = int(part_dir.name.rsplit("-", 1)[1])
        out += [(partition, seg) for seg in sorted(part_dir.glob("*.log"))]
    return sorted(out)


def _parse_record(line: str) -> tuple[int, Any, Any] | None:
    m = _OFFSET.match(line)
    if not m or " key: " not in line:
        return None
    # "... key: {json} payload: {json}|null": a key's JSON may itself hold " payload: " (a group
    # named so), so try each occurrence until both sides are valid JSON.
    rest = line.partition(" key: ")[2]
    idx = rest.find(" payload: ")
    while idx != -1:
        try:
            key = json.loads(rest[:idx])
            payload_text = rest[idx + len(" payload: ") :].strip()
            value = None if payload_text in ("", "null", "<DELETE>") else json.loads(payload_text)
            return int(m.group(1)), key, value
        except json.JSONDecodeError:
            idx = rest.find(" payload: ", idx + 1)
    return None


def dump_offsets(
    data_dir: Path, version: str | None = None, timeout_s: float = 300.0
) -> list[dict[str, Any]]:
    """Every record of `__consumer_offsets` under a broker's log dir, as Kafka's decoder prints it."""
    version = version or kafka_version()
    segments = offsets_segments(data_dir)
    if not segments:
        return []
    argv = [java_binary(), "-cp", classpath(version), dump_main_class(version), "--offsets-decoder"]
    argv += ["--deep-iteration", "--files", ",".join(str(seg) for _, seg in segments)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"kafka-dump-log failed: {proc.stderr[-2000:]}")
    by_path = {str(seg): p for p, seg in segments}
    records: list[dict[str, Any]] = []
    partition = -1
    for line in proc.stdout.splitlines():
        if line.startswith("Dumping "):
            partition = by_path.get(line[len("Dumping ") :].strip(), -1)
            continue
        parsed = _parse_record(line)
        if parsed is not None:
            offset, key, value = parsed
            records.append({"partition": partition, "offset": offset, "key": key, "value": value})
    return records
