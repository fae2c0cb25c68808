"""`groupscope assign` through click, in-process: the output format, stdin, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.cli.main import cli

GROUP = {
    "members": [
        {"member_id": "c1", "topics": ["t0", "t1"]},
        {"member_id": "c0", "topics": ["t0", "t1"], "owned": [["t0", 0]], "generation": 3, "rack": None},
    ],
    "partitions": {"t0": 3, "t1": 3},
}


def run(args: list[str], stdin: str | None = None):
    return CliRunner().invoke(cli, args, input=stdin)


def write(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "group.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_assign_prints_sorted_assignment_for_every_member(tmp_path: Path) -> None:
    result = run(["assign", "--assignor", "range", write(tmp_path, GROUP)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "assignment": {"c0": [["t0", 0], ["t0", 1], ["t1", 0], ["t1", 1]], "c1": [["t0", 2], ["t1", 2]]}
    }


def test_assign_reads_stdin_and_accepts_kafka_class_names() -> None:
    result = run(
        ["assign", "--assignor", "org.apache.kafka.clients.consumer.RoundRobinAssignor", "-"],
        stdin=json.dumps(GROUP),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["assignment"]["c0"] == [["t0", 0], ["t0", 2], ["t1", 1]]


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky", "uniform", "server-range"])
def test_assign_sticky_family_keeps_owned(tmp_path: Path, name: str) -> None:
    result = run(["assign", "--assignor", name, write(tmp_path, GROUP)])
    assert result.exit_code == 0, result.output
    assert ["t0", 0] in json.loads(result.output)["assignment"]["c0"]


BAD = [
    ({**GROUP}, "nosuch", "unknown assignor"),
    ({"members": [{"member_id": "a", "topics": ["x"]}], "partitions": {}}, "range", "no partition count"),
    ({"members": [{"member_id": "a", "topics": ["x"]}], "partitions": {"x": -1}}, "range", "negative"),
    ({"members": [{"member_id": "a", "topics": ["x"]}] * 2, "partitions": {"x": 1}}, "range", "duplicate"),
    ("{not json", "range", "malformed JSON"),
    ([1, 2], "range", "JSON object"),
    ({"members": [{"topics": ["x"]}], "partitions": {"x": 1}}, "range", "member_id"),
    ({"members": [{"member_id": "a", "topics": "x"}], "partitions": {"x": 1}}, "range", "topics"),
    (
        {"members": [{"member_id": "a", "topics": ["x"], "owned": [["x"]]}], "partitions": {"x": 1}},
        "sticky",
        "owned",
    ),
    ({"members": [], "partitions": {"x": 1.5}}, "range", "integer"),
]


@pytest.mark.parametrize(("doc", "assignor", "message"), BAD)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, doc: object, assignor: str, message: str) -> None:
    result = run(["assign", "--assignor", assignor, write(tmp_path, doc)])
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_assign_reads_partition_racks(tmp_path: Path) -> None:
    doc = {
        "members": [
            {"member_id": "a", "topics": ["t"], "rack": "r1"},
            {"member_id": "b", "topics": ["t"], "rack": "r2"},
        ],
        "partitions": {"t": 4},
        "partition_racks": {"t": [["r2"], ["r1"], ["r2"], ["r1"]]},
    }
    result = run(["assign", "--assignor", "range", write(tmp_path, doc)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["assignment"] == {"a": [["t", 1], ["t", 3]], "b": [["t", 0], ["t", 2]]}
    result = run(["assign", "--assignor", "range", write(tmp_path, {**doc, "partition_racks": {"t": "r1"}})])
    assert result.exit_code == 2 and "partition_racks" in result.output


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    result = run(["assign", "--assignor", "range", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.output


def test_empty_group_gives_empty_assignment(tmp_path: Path) -> None:
    result = run(["assign", "--assignor", "sticky", write(tmp_path, {"members": [], "partitions": {"t": 3}})])
    assert result.exit_code == 0
    assert json.loads(result.output) == {"assignment": {}}
