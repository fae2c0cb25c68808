"""`groupscope decode`: error lines, stdin, missing file, streaming."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from click.testing import CliRunner

from collectors.cli.decode_cmd import decode, decode_lines
from collectors.codec import records as r
from collectors.codec.encoder import encode_key, encode_value

CAPTURE = Path(__file__).parent / "fixtures" / "real-kafka-4.0" / "lag-ramp" / "offsets.jsonl"


def _line(key: bytes, value: bytes | None, partition: int = 3, offset: int = 9) -> str:
    return json.dumps(
        {
            "topic": "__consumer_offsets",
            "partition": partition,
            "offset": offset,
            "timestamp": 1700000000000,
            "timestamp_type": 1,
            "key": base64.b64encode(key).decode(),
            "value": None if value is None else base64.b64encode(value).decode(),
        }
    )


KEY = encode_key(r.OffsetCommitKey("g", "t", 0))
VALUE = encode_value(1, r.OffsetCommitValue(offset=5, leader_epoch=0, metadata="m\x00", commit_timestamp=7))


def test_good_bad_and_garbage_lines_each_give_one_output_line() -> None:
    lines = [
        _line(KEY, VALUE, offset=1),
        "this is not json",
        "",
        _line(KEY, VALUE[:-3], offset=2),
        json.dumps({"partition": 4, "offset": 5, "key": "!!!not base64", "value": None}),
        json.dumps([1, 2]),
        _line(KEY, None, offset=3),
    ]
    out = [json.loads(x) for x in decode_lines(lines)]
    assert len(out) == 6
    assert out[0]["value"] == {
        "version": "3",
        "data": {"offset": 5, "leaderEpoch": 0, "metadata": "m\x00", "commitTimestamp": 7},
    }
    assert out[0]["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 0}}
    assert out[0]["timestamp"] == 1700000000000
    assert out[1]["partition"] is None and out[1]["line"] == 2 and "not JSON" in out[1]["error"]
    assert out[2] == {"partition": 3, "offset": 2, "error": out[2]["error"]}
    assert "record 3/2, value" in out[2]["error"] and "commitTimestamp" in out[2]["error"]
    assert (out[3]["partition"], out[3]["offset"]) == (4, 5) and "base64" in out[3]["error"]
    assert "not a JSON object" in out[4]["error"]
    assert out[5]["value"] is None and out[5]["offset"] == 3


def test_cli_reads_a_file_and_stdin() -> None:
    runner = CliRunner()
    from_file = runner.invoke(decode, [str(CAPTURE)])
    assert from_file.exit_code == 0
    data = CAPTURE.read_bytes()
    from_stdin = runner.invoke(decode, ["-"], input=data)
    assert from_stdin.exit_code == 0
    assert from_file.output == from_stdin.output
    assert len(from_file.output.splitlines()) == len(data.splitlines())


def test_cli_missing_file_is_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    res = CliRunner().invoke(decode, [str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2
    assert "no such file" in res.output


def test_cli_directory_is_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(decode, [str(tmp_path)])
    assert res.exit_code == 2


def test_cli_decoding_errors_do_not_change_the_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(_line(b"\x00", b"\x00") + "\n" + _line(KEY, VALUE) + "\n")
    res = CliRunner().invoke(decode, [str(path)])
    assert res.exit_code == 0
    first, second = (json.loads(x) for x in res.output.splitlines())
    assert "error" in first and "key" in second


def test_decode_lines_is_lazy() -> None:
    def endless():
        while True:
            yield _line(KEY, VALUE)

    it = decode_lines(endless())
    assert [json.loads(next(it))["value"]["data"]["offset"] for _ in range(3)] == [5, 5, 5]
