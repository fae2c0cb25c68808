"""`--master` takes any Spark master: a real standalone cluster (master + worker started with the
`spark-class` launcher that PySpark ships, on loopback free ports) runs `groupscope replay`, and the
result equals `groupscope model`. The replay is its own driver process (a second SparkContext cannot
live in the test process next to the shared `spark` fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import CAPTURES

from collectors.cli.main import cli
from collectors.demo.servers.processes import free_port, wait_for_port

pytestmark = [pytest.mark.servers, pytest.mark.slow]


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


@pytest.fixture()
def standalone_cluster(tmp_path):
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,  # the workers' interpreter, with groupscope installed
        "SPARK_WORKER_DIR": str(tmp_path / "work"),
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
    }
    port, ui, wui = free_port(), free_port(), free_port()
    procs = []
    logs = []
    try:
        for name, args in (
            ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]),
            (
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "1500m",
                    "--webui-port",
                    str(wui),
                ],
            ),
        ):
            if name == "master":
                args += ["--webui-port", str(ui)]
            log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed below
            logs.append(log)
            procs.append(
                subprocess.Popen([spark_class(), *args], env=env, stdout=log, stderr=subprocess.STDOUT)
            )
            if name == "master":
                wait_for_port("127.0.0.1", port, 120, procs[-1])
        # wait until the worker has registered with the master
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as resp:
                    if json.load(resp).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-2000:]
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}", env
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        for log in logs:
            log.close()


def test_replay_on_a_standalone_cluster(standalone_cluster, redis_server, redis_client, tmp_path):
    master, env = standalone_cluster
    cap = CAPTURES / "lag-ramp"
    exe = str(Path(sys.executable).parent / "groupscope")
    res = subprocess.run(
        [exe, "replay", str(cap), "--master", master, "--redis", redis_server.url, "--no-progress"],
        env={**env, "GROUPSCOPE_CHECKPOINT_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    model = CliRunner().invoke(cli, ["model", str(cap), "--json"])
    docs = json.loads(model.stdout)["groups"]
    assert docs
    for want in docs:
        got = CliRunner().invoke(cli, ["group", want["group"], "--json", "--redis", redis_server.url])
        assert got.exit_code == 0, got.output
        assert json.loads(got.stdout) == want
