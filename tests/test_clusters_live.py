"""Two real Apache Kafka brokers watched at once, one collector pipeline each (as `groupscope collect
--cluster NAME` runs them), into one Redis.

The same group name lives on both brokers with different members; each is shown under its own
cluster. One broker is killed mid-test: its cluster's sources go down (and only its), while the other
cluster keeps updating; the broker comes back on the same port and data, and its collector picks up
from its checkpoint: a commit made then reaches Redis and the group's history is not lost."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

from collectors.cli.main import cli
from collectors.demo.servers.kafka import KafkaBroker
from collectors.storage.clusters import ClusterRegistry, cluster_prefix
from collectors.storage.redis_store import RedisStore
from dashboard.app import health_outputs
from dashboard.data import DashboardData
from tests.test_pipeline_live import (  # noqa: F401 - members and own_redis are fixtures
    Running,
    commit,
    create_topics,
    doc_members,
    live_cfg,
    members,
    own_redis,
    produce,
    stable_with,
    uid,
    wait_until,
)

pytestmark = [pytest.mark.servers, pytest.mark.slow]


def test_two_clusters_side_by_side_and_one_goes_away(spark, kafka_broker, own_redis, members, tmp_path: Path):  # noqa: F811
    west_dir = tmp_path / "west-kafka"
    west_dir.mkdir()
    west = KafkaBroker(workdir=west_dir).start()
    west_again: KafkaBroker | None = None
    try:
        east_bs, west_bs = kafka_broker.bootstrap_servers, west.bootstrap_servers
        u = uid()
        data, hb = f"data-{u}", f"hb-{u}"
        group = f"orders-{u}"  # the same name on both clusters
        idle = f"idle-{u}"  # commits only, on both
        for bs in (east_bs, west_bs):
            create_topics(bs, {data: 4, hb: 2})
            produce(bs, data, per_partition=5, partitions=4)
        east_admin, west_admin = (
            AdminClient({"bootstrap.servers": east_bs}),
            AdminClient({"bootstrap.servers": west_bs}),
        )
        commit(east_admin, idle, {(data, 0): 1})
        commit(west_admin, idle, {(data, 0): 2})
        # one member on east, two on west
        members(east_bs, group, data, f"east-{u}-1", hb)
        members(west_bs, group, data, f"west-{u}-1", hb)
        members(west_bs, group, data, f"west-{u}-2", hb)
        east_members = stable_with(east_admin, group, 1)
        west_members = stable_with(west_admin, group, 2)

        cfgs = {
            "east": live_cfg(own_redis.url, east_bs, str(tmp_path / "ckpt-east"), u, heartbeat_topic=hb),
            "west": live_cfg(
                own_redis.url,
                west_bs,
                str(tmp_path / "ckpt-west"),
                u,
                heartbeat_topic=hb,
                metadata_timeout_s=2.0,
            ),
        }
        for name, cfg in cfgs.items():
            cfg.cluster = name
        stores = {n: RedisStore.from_url(own_redis.url, prefix=cluster_prefix(n)) for n in cfgs}
        assert stores["east"].p == "gs@east" and stores["west"].p == "gs@west"

        def members_of(cluster: str) -> dict | None:
            doc = stores[cluster].get_group(group)
            # the pipeline's document (the Admin poller's provisional one comes first)
            return doc_members(doc) if doc and not doc.get("provisional") else None

        def offset_of(cluster: str) -> int | None:
            doc = stores[cluster].get_group(idle) or {"offsets": []}
            if doc.get("provisional"):
                return None
            return next((o["offset"] for o in doc["offsets"]), None)

        with Running(cfgs["east"], spark) as run_east, Running(cfgs["west"], spark) as run_west:
            wait_until(lambda: members_of("east") == east_members, 240, "east's group with its member")
            wait_until(lambda: members_of("west") == west_members, 240, "west's group with its two members")
            wait_until(
                lambda: offset_of("east") == 1 and offset_of("west") == 2, 240, "the idle groups' offsets"
            )
            # both collectors registered their cluster; the CLI lists the group under each
            assert {"east", "west"} <= set(ClusterRegistry(stores["east"].r).names())
            r = CliRunner().invoke(cli, ["groups", "--redis", own_redis.url, "--name", group, "--json"])
            rows = json.loads(r.stdout)["groups"]
            assert sorted((g["cluster"], g["members"]) for g in rows) == [("east", 1), ("west", 2)], r.output
            r = CliRunner().invoke(
                cli, ["group", group, "--redis", own_redis.url, "--cluster", "west", "--json"]
            )
            assert doc_members(json.loads(r.stdout)) == west_members
            wait_until(
                lambda: stores["west"].freshness()["sources"].get("admin", {}).get("ok"), 60, "west admin"
            )
            west_generations = len(stores["west"].get_generations(group))

            # west's broker dies, as a crash leaves it (see test_broker_unreachable_retries_...)
            os.killpg(west.proc.pid, signal.SIGKILL)
            west.proc.wait(10)
            wait_until(
                lambda: stores["west"].freshness()["sources"].get("admin", {}).get("ok") is False,
                120,
                "west's admin source down",
            )
            # the dashboard's banner names west, and west only
            dash = DashboardData(own_redis.url)
            assert dash.cluster_names() == ["east", "west"]
            _text, banner, _cls = health_outputs(dash.healths(None), behind_s=60, multi=True)
            assert "Cluster west" in str(banner) and "Cluster east" not in str(banner), banner
            # east keeps updating, and its sources stay up
            commit(east_admin, idle, {(data, 0): 3})
            wait_until(lambda: offset_of("east") == 3, 120, "a commit on east while west is down")
            fresh = stores["east"].freshness()
            assert fresh["sources"]["admin"]["ok"], fresh["sources"]
            assert time.time() * 1000 - fresh["collector"]["ts"] < 30_000
            # east runs on; west waits for its cluster (a read task under a planned batch gives up
            # rather than hold a slot east needs, and its query starts again once west answers)
            assert run_east.query.isActive
            assert run_west.thread.is_alive() and run_west.error is None

            # west comes back on the same port and data: its collector reads on from its checkpoint
            west_again = KafkaBroker(port=west.port, controller_port=west.controller_port, workdir=west_dir)
            west_again.start()
            commit(AdminClient({"bootstrap.servers": west_bs}), idle, {(data, 0): 4})
            wait_until(lambda: offset_of("west") == 4, 240, "a commit on west after it came back")
            wait_until(
                lambda: stores["west"].freshness()["sources"]["admin"]["ok"], 120, "west admin up again"
            )
            assert offset_of("east") == 3  # each cluster's data its own
            assert len(stores["west"].get_generations(group)) >= west_generations  # nothing lost
            _text, banner, _cls = health_outputs(dash.healths(None), behind_s=60, multi=True)
            assert "Cluster west" not in str(banner), banner
    finally:
        west.stop()
        if west_again is not None:
            west_again.stop()
