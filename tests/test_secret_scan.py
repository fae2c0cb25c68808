"""The secret scan itself (tests/secret_scan.py) finds what it is there to find."""

from __future__ import annotations

from pathlib import Path

from secret_scan import find_secrets, scan_files, suite_secrets


def test_the_runs_passwords_are_all_known_to_the_scan() -> None:
    from conftest import SASL_USERS

    secrets = suite_secrets()
    assert set(SASL_USERS.values()) <= set(secrets.values())
    assert all(len(s) >= 8 for s in secrets.values())  # none so short that any text would hold it


def test_a_password_in_text_or_in_a_file_is_found_and_named_not_shown(tmp_path: Path) -> None:
    secrets = suite_secrets()
    who, pw = next(iter(secrets.items()))
    assert find_secrets(f"cannot reach Redis at redis://:{pw}@127.0.0.1:6379/0", secrets) == [who]
    assert find_secrets("cannot reach Redis at redis://:***@127.0.0.1:6379/0", secrets) == []
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "collector.log").write_bytes(b"sasl.password=" + pw.encode() + b"\n")
    (tmp_path / "clean.json").write_text('{"group": "orders"}')
    assert scan_files(tmp_path, secrets) == [(str(tmp_path / "sub" / "collector.log"), who)]
    assert scan_files(tmp_path / "missing", secrets) == []
