"""The secret scan: no password the suite uses may appear in anything the suite outputs.

The run's secrets are known (the broker's SASL users' passwords, the test client key's password, the
wrong password the security tests try). Two hooks, imported by conftest.py:
- after each test phase, its captured stdout, stderr and log records, and its failure report, are
  searched for each secret;
- at the end of the session, every file under test-artifacts/ (the screenshots, captures, logs and
  documents the suite leaves for people to read) is searched the same way, as bytes.
A secret found fails the run, and the report names the test or file and whose secret it is, never
the secret itself. Files under a test's own temporary folder (a broker's JAAS file, a config file a
test wrote) are inputs, not outputs, and are not searched.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts"
_found: list[tuple[str, str]] = []  # (where, whose secret)


@cache
def suite_secrets() -> dict[str, str]:
    """whose secret -> the secret, for every password this run hands out."""
    from conftest import SASL_USERS
    from test_security_live import WRONG

    from collectors.demo.servers.kafka.tls import CLIENT_PASSWORD

    out = {f"the SASL password of {user}": pw for user, pw in SASL_USERS.items()}
    out["the test client key's password"] = CLIENT_PASSWORD
    out["the wrong password the security tests try"] = WRONG
    return out


def find_secrets(text: str | bytes, secrets: dict[str, str]) -> list[str]:
    """Whose secrets `text` holds."""
    if isinstance(text, bytes):
        return [who for who, s in secrets.items() if s.encode() in text]
    return [who for who, s in secrets.items() if s in text]


def pytest_runtest_logreport(report: Any) -> None:
    secrets = suite_secrets()
    texts = [content for _, content in report.sections]
    if report.failed and report.longrepr is not None:
        texts.append(str(report.longrepr))
    for text in texts:
        for who in find_secrets(text, secrets):
            # a phase's report carries the earlier phases' output too: each test and secret once
            if not any(where.startswith(f"{report.nodeid} (") and w == who for where, w in _found):
                _found.append((f"{report.nodeid} ({report.when})", who))


def scan_files(root: Path, secrets: dict[str, str]) -> list[tuple[str, str]]:
    """(file, whose secret) for every file under `root` that holds one."""
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        out += [(str(path), who) for who in find_secrets(data, secrets)]
    return out


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    found = _found + scan_files(ARTIFACTS, suite_secrets())
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["", "secret scan: a password of this run appears in what the suite output:"]
    lines += [f"  {where}: {who}" for where, who in found]
    if reporter is not None:
        reporter.write_line("\n".join(lines), red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
