"""Debian's Prometheus and Alertmanager (packages `prometheus` and `prometheus-alertmanager`), each on a
free loopback port with its own temporary data directory, for the tests: never the system services
(those packages' units are left alone), never a user's Prometheus.

`PrometheusServer` starts with the configuration it is given (by default one that scrapes nothing)
and with `--web.enable-lifecycle`, so a test can write its own scrape targets and rules later
(`configure`, which reloads it). `AlertmanagerServer` runs one Alertmanager alone (its gossip
cluster off: no port on any other address) with a configuration whose only receiver takes nothing.
Both are `_Proc`s (processes.py): stopped with SIGTERM, then SIGKILL, and gone with their owner.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from collectors.demo.servers.processes import ServerError, _Proc, free_port, wait_for_port

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
AMTOOL = "/usr/bin/amtool"

EMPTY_PROMETHEUS_CONFIG = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs: []\n"

# One receiver that sends nowhere: the tests read the alerts back from Alertmanager's API.
DEFAULT_ALERTMANAGER_CONFIG = """\
global:
  resolve_timeout: 5m
route:
  receiver: nowhere
  group_by: [alertname, cluster, group]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: nowhere
"""


def binary(path: str, name: str, package: str) -> str:
    """The binary's path; ServerError naming the Debian package when it is not installed."""
    found = path if os.path.exists(path) else shutil.which(name)
    if not found:
        raise ServerError(f"{name} is not installed (Debian package '{package}'; `make test` installs it)")
    return found


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, body) of a GET; status 0 when the server cannot be reached."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def get_json(url: str, timeout: float = 5.0) -> Any:
    status, body = http_get(url, timeout)
    if status != 200:
        raise ServerError(f"GET {url}: HTTP {status}: {body[:500]!r}")
    return json.loads(body)


@dataclass
class _PromProc(_Proc):
    """What Prometheus and Alertmanager share: a loopback HTTP server on a free port, a temporary
    working directory, and /-/ready to say it is up."""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _prepare(self, prefix: str) -> Path:
        """The port and the working directory (made when none was given)."""
        self.port = self.port or free_port(self.host)
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=prefix))
            self._own_dir = True
        return self.workdir

    def _run(self, argv: list[str], what: str, timeout: float) -> None:
        """Spawn `argv` and wait until /-/ready answers 200; stopped, with its log's tail in the
        error, when it exits or is not ready within `timeout`."""
        self._spawn(argv, what)
        try:
            wait_for_port(self.host, self.port, timeout, self.proc)
            deadline = time.monotonic() + timeout
            while http_get(f"{self.url}/-/ready", 2.0)[0] != 200:
                if not self.running:
                    code = self.proc.returncode if self.proc else "?"
                    raise ServerError(f"{what} exited with status {code}")
                if time.monotonic() > deadline:
                    raise ServerError(f"{what}: {self.url}/-/ready not ready within {timeout:.0f} s")
                time.sleep(0.1)
        except ServerError as e:
            tail = self.log_tail()
            self.stop()
            raise ServerError(f"{what}: {e}\n{tail}") from e


@dataclass
class PrometheusServer(_PromProc):
    """Debian's prometheus on 127.0.0.1:<free port>, TSDB in its temporary directory."""

    config_text: str = EMPTY_PROMETHEUS_CONFIG

    @property
    def config_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "prometheus.yml"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        exe = binary(PROMETHEUS, "prometheus", "prometheus")
        self._prepare("groupscope-prometheus-")
        self.config_path.write_text(self.config_text)
        argv = [
            exe,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address={self.host}:{self.port}",
            "--web.enable-lifecycle",  # POST /-/reload: a test's own scrape targets and rules
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]
        self._run(argv, "prometheus", timeout)
        return self

    def configure(self, config_text: str, timeout: float = 30.0) -> None:
        """Replace the configuration and reload it (ServerError when Prometheus refuses it)."""
        self.config_text = config_text
        self.config_path.write_text(config_text)
        req = urllib.request.Request(f"{self.url}/-/reload", method="POST", data=b"")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                resp.read()
        except urllib.error.HTTPError as e:
            why = e.read().decode(errors="replace")
            raise ServerError(f"prometheus refused the configuration: {why}") from e

    def query(self, expr: str, timeout: float = 10.0) -> dict[str, Any]:
        """/api/v1/query's `data` (ServerError when Prometheus answers with an error)."""
        status, body = http_get(f"{self.url}/api/v1/query?{urlencode({'query': expr})}", timeout)
        answer = json.loads(body) if body else {}
        if status != 200 or answer.get("status") != "success":
            raise ServerError(f"query {expr!r}: HTTP {status}: {answer.get('error') or body[:300]!r}")
        return answer["data"]

    def api(self, path: str, timeout: float = 10.0) -> Any:
        """The `data` of a GET under /api/v1/ (`rules`, `targets`, `alerts`, ...)."""
        answer = get_json(f"{self.url}/api/v1/{path}", timeout)
        return answer["data"]


@dataclass
class AlertmanagerServer(_PromProc):
    """Debian's prometheus-alertmanager on 127.0.0.1:<free port>, alone (no gossip cluster)."""

    config_text: str = DEFAULT_ALERTMANAGER_CONFIG

    def start(self, timeout: float = 60.0) -> AlertmanagerServer:
        exe = binary(ALERTMANAGER, "prometheus-alertmanager", "prometheus-alertmanager")
        config = self._prepare("groupscope-alertmanager-") / "alertmanager.yml"
        config.write_text(self.config_text)
        argv = [
            exe,
            f"--config.file={config}",
            f"--storage.path={self.workdir / 'data'}",
            f"--web.listen-address={self.host}:{self.port}",
            "--cluster.listen-address=",  # no gossip: nothing listens beyond the loopback port
            "--log.level=warn",
        ]
        self._run(argv, "alertmanager", timeout)
        return self

    def alerts(self, **filters: Any) -> list[dict[str, Any]]:
        """GET /api/v2/alerts (`filter` label matchers as a list, `active`, `silenced`, ...)."""
        query = urlencode(
            [(k, str(v).lower() if isinstance(v, bool) else v) for k, v in filters.items() if k != "filter"]
            + [("filter", m) for m in filters.get("filter", [])]
        )
        return get_json(f"{self.url}/api/v2/alerts" + (f"?{query}" if query else ""))
