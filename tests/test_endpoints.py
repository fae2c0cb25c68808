"""Who may reach the dashboard and the worker's /metrics: loopback by default; another address only
with basic authentication or --allow-open-bind, else the command refuses to start; basic auth half
configured is an error wherever it is read. The refusals go through the real command line; the
allowed cases start the real worker and dashboard processes and talk HTTP to them. No Redis is
needed: the URLs name a closed port, and neither command reads Redis before it listens."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.cli.main import cli
from collectors.config import ConfigError, Settings, load_settings
from collectors.demo.servers.processes import free_port, wait_for_port
from collectors.endpoints import basic_auth_ok, is_loopback, open_bind_error
from collectors.exporter.server import make_wsgi_app, start_metrics_server

ROOT = Path(__file__).resolve().parent.parent
NO_REDIS = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
GOOD = "Basic " + base64.b64encode(b"ops:s3cret").decode()
BAD = "Basic " + base64.b64encode(b"ops:wrong").decode()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("GROUPSCOPE_"):
            monkeypatch.delenv(k)


def _run(args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, args, env=env)


def _get(url: str, auth: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Authorization": auth} if auth else {})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# ---- defaults --------------------------------------------------------------------------------------


def test_defaults_are_loopback_and_closed() -> None:
    s = load_settings()
    assert s.dashboard_host == "127.0.0.1" and s.metrics_host == "127.0.0.1"
    assert s.allow_open_bind is False and s.basic_auth() is None
    httpd, _ = start_metrics_server(free_port(), NO_REDIS)
    try:
        assert httpd.server_address[0] == "127.0.0.1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
        ("dashboard.example.com", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    refused = open_bind_error(host, what="x", auth=False, allow_open=False)
    assert (refused is None) is loopback
    # authentication, or the open bind asked for, lets any address through
    assert open_bind_error(host, what="x", auth=True, allow_open=False) is None
    assert open_bind_error(host, what="x", auth=False, allow_open=True) is None


def test_basic_auth_header_check() -> None:
    assert basic_auth_ok(GOOD, "ops", "s3cret")
    assert basic_auth_ok("basic " + GOOD.split()[1], "ops", "s3cret")  # the scheme has no case
    for header in (None, "", BAD, "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"ops").decode()):
        assert not basic_auth_ok(header, "ops", "s3cret"), header


# ---- refused ---------------------------------------------------------------------------------------


def _refused(result, what: str) -> None:
    assert result.exit_code == 2, result.output
    line = [x for x in result.output.splitlines() if "refusing" in x]
    assert len(line) == 1, result.output
    assert f"refusing to serve {what} on" in line[0]
    assert "--allow-open-bind" in line[0] and "dashboard_user and dashboard_password" in line[0]


def test_dashboard_refuses_a_non_loopback_host_without_auth(tmp_path: Path, monkeypatch) -> None:
    _refused(_run(["dashboard", "--host", "0.0.0.0", "--redis", NO_REDIS]), "the dashboard")
    _refused(_run(["dashboard"], env={"GROUPSCOPE_DASHBOARD_HOST": "10.0.0.7"}), "the dashboard")
    cfg = tmp_path / "gs.yaml"
    cfg.write_text("dashboard_host: '::'\n")
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    _refused(_run(["dashboard"]), "the dashboard")


def test_worker_refuses_non_loopback_metrics_without_auth(tmp_path: Path, monkeypatch) -> None:
    port = str(free_port())
    args = ["worker", "--redis", NO_REDIS, "--metrics-port", port]
    _refused(_run([*args, "--metrics-host", "0.0.0.0"]), "/metrics")
    _refused(_run(args, env={"GROUPSCOPE_METRICS_HOST": "0.0.0.0"}), "/metrics")
    cfg = tmp_path / "gs.yaml"
    cfg.write_text("metrics_host: 0.0.0.0\n")
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    _refused(_run(args), "/metrics")


def test_demo_refuses_before_starting_anything() -> None:
    _refused(_run(["demo", "--no-browser"], env={"GROUPSCOPE_DASHBOARD_HOST": "0.0.0.0"}), "the dashboard")


# ---- half-configured authentication ----------------------------------------------------------------


def test_half_configured_auth_is_an_error_from_flags_env_and_file(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="dashboard_user is set but dashboard_password is not"):
        load_settings(dashboard_user="ops")
    with pytest.raises(ConfigError, match="dashboard_password is set but dashboard_user is not"):
        load_settings(dashboard_password="s3cret")
    with pytest.raises(ConfigError, match="dashboard_password is not"):
        load_settings(dashboard_user="ops", dashboard_password="")  # empty is not a password
    with pytest.raises(ValueError, match="dashboard_user is not"):
        Settings(dashboard_password="s3cret")  # built directly, as the dashboard's tests do
    monkeypatch.setenv("GROUPSCOPE_DASHBOARD_USER", "ops")
    with pytest.raises(ConfigError, match="GROUPSCOPE_DASHBOARD_PASSWORD"):
        load_settings()
    monkeypatch.delenv("GROUPSCOPE_DASHBOARD_USER")
    cfg = tmp_path / "gs.yaml"
    cfg.write_text("dashboard_password: s3cret\n")
    monkeypatch.setenv("GROUPSCOPE_CONFIG", str(cfg))
    with pytest.raises(ConfigError, match="dashboard_password is set but dashboard_user is not"):
        load_settings()
    # the commands that read it say so and stop (exit 2), whatever the bind
    for args in (["dashboard", "--redis", NO_REDIS], ["worker", "--redis", NO_REDIS]):
        result = _run(args)
        assert result.exit_code == 2, result.output
        assert "dashboard_password is set but dashboard_user is not" in result.output
    # both set, or neither: fine
    monkeypatch.setenv("GROUPSCOPE_DASHBOARD_USER", "ops")
    assert load_settings().basic_auth() == ("ops", "s3cret")
    monkeypatch.delenv("GROUPSCOPE_CONFIG")
    monkeypatch.delenv("GROUPSCOPE_DASHBOARD_USER")
    assert load_settings().basic_auth() is None


# ---- allowed: authentication, or the open bind asked for -------------------------------------------


def test_metrics_app_asks_for_the_configured_credentials() -> None:
    def call(auth: str | None) -> str:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/metrics"}
        if auth:
            environ["HTTP_AUTHORIZATION"] = auth
        status: list[str] = []
        app(environ, lambda s, headers: status.append(s))
        return status[0]

    app = make_wsgi_app(NO_REDIS, basic_auth=("ops", "s3cret"))
    assert call(None).startswith("401") and call(BAD).startswith("401")
    assert call(GOOD).startswith("200")  # Redis unreachable: an answer with groupscope_scrape_errors
    app = make_wsgi_app(NO_REDIS)
    assert call(None).startswith("200")
    with pytest.raises(ValueError, match="both"):
        make_wsgi_app(NO_REDIS, basic_auth=("ops", ""))


@contextmanager
def _process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_")}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "collectors.cli.main", *args],
            cwd=ROOT,
            env={**base, **env, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _wait_for_line(log: Path, proc: subprocess.Popen, needle: str, timeout: float = 50.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if needle in line:
                return line
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.1)
    raise AssertionError(f"no {needle!r} in {log.read_text()[-3000:]}")


@pytest.mark.parametrize(
    ("extra", "env", "needs_auth"),
    [
        ([], {}, False),  # default: loopback, no authentication needed
        (["--metrics-host", "0.0.0.0"], {"GROUPSCOPE_DASHBOARD_USER": "ops"}, True),
        (["--metrics-host", "0.0.0.0", "--allow-open-bind"], {}, False),
    ],
    ids=["default-loopback", "any-address-with-auth", "any-address-open"],
)
def test_worker_serves_metrics_where_allowed(tmp_path: Path, extra, env, needs_auth) -> None:
    if env:
        env = {**env, "GROUPSCOPE_DASHBOARD_PASSWORD": "s3cret"}
    port = free_port()
    log = tmp_path / "worker.log"
    args = ["worker", "--redis", NO_REDIS, "--metrics-port", str(port), *extra]
    with _process(args, env, log) as proc:
        line = _wait_for_line(log, proc, "metrics on http://")
        url = f"http://127.0.0.1:{port}/metrics"
        if not extra:
            assert f"http://127.0.0.1:{port}/metrics (no authentication)" in line
        if needs_auth:
            assert "(basic authentication)" in line
            assert _get(url)[0] == 401 and _get(url, BAD)[0] == 401
            status, body = _get(url, GOOD)
        else:
            status, body = _get(url)
        assert status == 200 and b"groupscope_scrape_errors" in body
        warned = "open to anyone who can reach 0.0.0.0" in log.read_text()
        assert warned is ("--allow-open-bind" in extra)


@pytest.mark.parametrize("with_auth", [True, False], ids=["with-auth", "open"])
def test_dashboard_on_any_address_with_auth_or_the_flag(tmp_path: Path, with_auth: bool) -> None:
    port = free_port()
    log = tmp_path / "dashboard.log"
    args = ["dashboard", "--redis", NO_REDIS, "--host", "0.0.0.0", "--port", str(port)]
    args += ["--no-worker", "--workers", "1", "--threads", "2"]
    if with_auth:
        env = {"GROUPSCOPE_DASHBOARD_USER": "ops", "GROUPSCOPE_DASHBOARD_PASSWORD": "s3cret"}
    else:
        env, args = {}, [*args, "--allow-open-bind"]
    with _process(args, env, log) as proc:
        wait_for_port("127.0.0.1", port, timeout=50.0, proc=proc)
        url = f"http://127.0.0.1:{port}"
        if with_auth:
            assert _get(f"{url}/")[0] == 401
            assert _get(f"{url}/_dash-layout", BAD)[0] == 401
            assert _get(f"{url}/", GOOD)[0] == 200
        else:
            assert _get(f"{url}/")[0] == 200
        warned = "open to anyone who can reach 0.0.0.0" in log.read_text()
        assert warned is not with_auth
