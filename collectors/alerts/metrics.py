"""Prometheus metrics, read from Redis at scrape time by a custom collector (no state of our own).

Series (all gauges; labels in braces):
- groupscope_groups{state}                              groups per state
- groupscope_group_state{group,state}                   1 for the group's current state
- groupscope_group_members{group}                       members
- groupscope_group_generation{group}                    classic generation (or KIP-848 group epoch)
- groupscope_group_rebalances_1h{group}                 rebalances in the last hour
- groupscope_group_lag_offsets{group}                   total lag in messages
- groupscope_group_lag_seconds{group}                   worst partition's lag in seconds
- groupscope_group_topic_lag_offsets{group,topic}       lag per group and topic
- groupscope_group_topic_lag_seconds{group,topic}       worst lag per group and topic
- groupscope_partition_lag_offsets{group,topic,partition}  only with metrics_per_partition (cardinality)
- groupscope_partition_lag_seconds{group,topic,partition}  idem
- groupscope_alert_firing{group,rule,severity}          1 per firing alert
- groupscope_alerts_active{rule}                        firing alerts per rule
- groupscope_alert_cycle_duration_seconds, groupscope_alert_cycle_timestamp_seconds,
  groupscope_alert_cycle_groups_evaluated               the last evaluation cycle
- groupscope_scrape_errors                              1 when Redis could not be read for this scrape

Mount `make_wsgi_app(redis_url)` anywhere (the dashboard serves it at /metrics), or run
`start_metrics_server(port, redis_url)` (what `groupscope worker --metrics-port` does).
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.alerts.store import AlertStore
from collectors.redis_store import RedisStore
from coordinator_model.alerting.docview import partition_lags

log = logging.getLogger(__name__)


class GroupscopeCollector(Collector):
    def __init__(
        self, client: Any, prefix: str = "gs", per_partition: bool = False, chunk: int = 1000
    ) -> None:
        self.r = client
        self.data = RedisStore(client, prefix=prefix)
        self.alerts = AlertStore(client, prefix=prefix)
        self.per_partition = per_partition
        self.chunk = chunk

    def describe(self) -> list[Metric]:
        return []  # read Redis only at scrape time, never at registration

    def collect(self) -> Iterator[Metric]:
        errors = GaugeMetricFamily(
            "groupscope_scrape_errors", "1 when Redis could not be read for this scrape"
        )
        # Thousands of decoded documents: keep the cyclic GC out of it (see evaluate.py).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            families = self._families()
        except Exception as e:  # an unreachable Redis must give an answer Prometheus can alert on
            log.warning("metrics scrape: cannot read Redis: %s", e)
            errors.add_metric([], 1)
            yield errors
            return
        finally:
            if gc_was_enabled:
                gc.enable()
        yield from families
        errors.add_metric([], 0)
        yield errors

    def _families(self) -> list[Metric]:
        g = GaugeMetricFamily
        groups = g("groupscope_groups", "Consumer groups per state", labels=["state"])
        state = g("groupscope_group_state", "1 for the group's current state", labels=["group", "state"])
        members = g("groupscope_group_members", "Members of the group", labels=["group"])
        generation = g(
            "groupscope_group_generation", "Classic generation, or KIP-848 group epoch", labels=["group"]
        )
        rebalances = g("groupscope_group_rebalances_1h", "Rebalances in the last hour", labels=["group"])
        lag = g("groupscope_group_lag_offsets", "Total lag in messages", labels=["group"])
        lag_s = g("groupscope_group_lag_seconds", "Worst partition lag in seconds", labels=["group"])
        tlag = g("groupscope_group_topic_lag_offsets", "Lag in messages per topic", labels=["group", "topic"])
        tlag_s = g(
            "groupscope_group_topic_lag_seconds", "Worst lag in seconds per topic", labels=["group", "topic"]
        )
        plag = g(
            "groupscope_partition_lag_offsets", "Lag in messages", labels=["group", "topic", "partition"]
        )
        plag_s = g(
            "groupscope_partition_lag_seconds", "Lag in seconds", labels=["group", "topic", "partition"]
        )
        firing = g("groupscope_alert_firing", "1 per firing alert", labels=["group", "rule", "severity"])
        active_rule = g("groupscope_alerts_active", "Firing alerts per rule", labels=["rule"])
        out: list[Metric] = [groups, state, members, generation, rebalances, lag, lag_s, tlag, tlag_s]

        rows = self.r.hgetall(self.data.k("fleet"))
        per_state: dict[str, int] = {}
        names: list[str] = []
        for raw_name, raw in rows.items():
            name = raw_name.decode()
            try:
                row = json.loads(raw)
            except ValueError:
                continue
            names.append(name)
            st = str(row.get("state") or "Unknown")
            per_state[st] = per_state.get(st, 0) + 1
            state.add_metric([name, st], 1)
            members.add_metric([name], float(row.get("members") or 0))
            gen = row.get("generation") if row.get("generation") is not None else row.get("group_epoch")
            if gen is not None:
                generation.add_metric([name], float(gen))
            rebalances.add_metric([name], float(row.get("rebalances_1h") or 0))
            lag.add_metric([name], float(row.get("lag") or 0))
            lag_s.add_metric([name], float(row.get("lag_seconds") or 0))
        for st, n in sorted(per_state.items()):
            groups.add_metric([st], n)

        # Per topic (and partition) lag needs the documents: read them in pipelined chunks.
        for i in range(0, len(names), self.chunk):
            chunk = names[i : i + self.chunk]
            pipe = self.r.pipeline(transaction=False)
            for name in chunk:
                pipe.get(self.data.gk(name, "doc"))
            for name, raw in zip(chunk, pipe.execute(), strict=True):
                if not raw:
                    continue
                try:
                    doc = json.loads(raw)
                except ValueError:
                    continue
                topics: dict[str, list[float]] = {}
                for p in partition_lags(doc):
                    t = topics.setdefault(p.topic, [0.0, 0.0])
                    t[0] += p.lag_offsets or 0
                    t[1] = max(t[1], p.lag_seconds or 0.0)
                    if self.per_partition:
                        plag.add_metric([name, p.topic, str(p.partition)], float(p.lag_offsets or 0))
                        plag_s.add_metric([name, p.topic, str(p.partition)], float(p.lag_seconds or 0))
                for topic, (off, sec) in sorted(topics.items()):
                    tlag.add_metric([name, topic], off)
                    tlag_s.add_metric([name, topic], sec)
        if self.per_partition:
            out += [plag, plag_s]

        per_rule: dict[str, int] = {}
        for a in self.alerts.active():
            firing.add_metric([a["group"], a["rule"], a.get("severity", "warning")], 1)
            per_rule[a["rule"]] = per_rule.get(a["rule"], 0) + 1
        for rule, n in sorted(per_rule.items()):
            active_rule.add_metric([rule], n)
        out += [firing, active_rule]

        cycle = self.alerts.last_cycle()
        if cycle:
            d = g("groupscope_alert_cycle_duration_seconds", "Duration of the last evaluation cycle")
            d.add_metric([], float(cycle.get("duration_s") or 0))
            ts = g("groupscope_alert_cycle_timestamp_seconds", "Wall-clock time of the last evaluation cycle")
            ts.add_metric([], float(cycle.get("wall_ms") or 0) / 1000.0)
            ev = g("groupscope_alert_cycle_groups_evaluated", "Groups judged in the last evaluation cycle")
            ev.add_metric([], float(cycle.get("evaluated") or 0))
            out += [d, ts, ev]
        return out


def make_registry(redis_url: str, prefix: str = "gs", per_partition: bool = False) -> CollectorRegistry:
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GroupscopeCollector(client, prefix=prefix, per_partition=per_partition))
    return registry


def make_wsgi_app(redis_url: str, prefix: str = "gs", per_partition: bool = False) -> Any:
    """A WSGI app answering Prometheus scrapes (mount it at /metrics)."""
    from prometheus_client import make_wsgi_app as _make

    return _make(make_registry(redis_url, prefix, per_partition))


def start_metrics_server(port: int, redis_url: str, addr: str = "0.0.0.0", **kw: Any) -> Any:
    """Serve /metrics on a port in a daemon thread; returns (server, thread)."""
    from prometheus_client import start_http_server

    return start_http_server(port, addr=addr, registry=make_registry(redis_url, **kw))
