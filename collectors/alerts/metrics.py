"""Prometheus metrics, read from Redis at scrape time (no state of our own).

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

Fast at 50,000 groups because a scrape reads one small summary per group, written by the sink with
the document (`gs:summary:metrics`, collectors/storage/summaries.py), instead of every fleet row and
every document; a group without one (written by an older collector) is read from its fleet row and
document as before, and so is per-partition lag (`metrics_per_partition`, off by default). The WSGI
app and the server write the text exposition format themselves: prometheus_client formats each of
the ~500,000 samples through several function calls, which was as slow as reading the documents.
`make_registry` keeps a prometheus_client registry for other servers, with the same series from the
same read.
"""

from __future__ import annotations

import gc
import gzip
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from collectors.alerts.store import AlertStore
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import GROUP_FAMILIES, esc, lag_rows, metric_lines, metric_values, num

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# name -> help, in the order a scrape lists them.
FAMILIES: dict[str, str] = {
    "groupscope_groups": "Consumer groups per state",
    "groupscope_group_state": "1 for the group's current state",
    "groupscope_group_members": "Members of the group",
    "groupscope_group_generation": "Classic generation, or KIP-848 group epoch",
    "groupscope_group_rebalances_1h": "Rebalances in the last hour",
    "groupscope_group_lag_offsets": "Total lag in messages",
    "groupscope_group_lag_seconds": "Worst partition lag in seconds",
    "groupscope_group_topic_lag_offsets": "Lag in messages per topic",
    "groupscope_group_topic_lag_seconds": "Worst lag in seconds per topic",
    "groupscope_partition_lag_offsets": "Lag in messages",
    "groupscope_partition_lag_seconds": "Lag in seconds",
    "groupscope_alert_firing": "1 per firing alert",
    "groupscope_alerts_active": "Firing alerts per rule",
    "groupscope_alert_cycle_duration_seconds": "Duration of the last evaluation cycle",
    "groupscope_alert_cycle_timestamp_seconds": "Wall-clock time of the last evaluation cycle",
    "groupscope_alert_cycle_groups_evaluated": "Groups judged in the last evaluation cycle",
    "groupscope_scrape_errors": "1 when Redis could not be read for this scrape",
}


@dataclass
class Scrape:
    """What one scrape read from Redis, before it is written out."""

    # per-group family -> its lines of every group, as stored by the sink (bytes) or made here
    lines: dict[str, list[bytes]] = field(default_factory=lambda: {f: [] for f in GROUP_FAMILIES})
    partition_lines: dict[str, list[str]] = field(
        default_factory=lambda: {
            "groupscope_partition_lag_offsets": [],
            "groupscope_partition_lag_seconds": [],
        }
    )
    per_state: dict[str, int] = field(default_factory=dict)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    cycle: dict[str, Any] | None = None
    from_documents: int = 0  # groups without summaries, read from their fleet row and document


class MetricsSource:
    """Reads one scrape's data from Redis: `read()`, then `text(scrape)` or `families(scrape)`."""

    def __init__(
        self,
        client: Any,
        prefix: str = "gs",
        per_partition: bool = False,
        chunk: int = 1000,
        summaries: bool = True,
    ) -> None:
        self.r = client
        self.data = RedisStore(client, prefix=prefix)
        self.alerts = AlertStore(client, prefix=prefix)
        self.per_partition = per_partition
        self.chunk = chunk
        # False reads every group's fleet row and document (the path before summaries; benchmarks
        # and tests compare the two).
        self.summaries = summaries

    def read(self) -> Scrape:
        scrape = Scrape()
        # The fleet says which groups exist (and their states); the summary hashes hold each group's
        # lines, one hash per family, so a scrape joins them without looking at a group. The families
        # are written and removed together: when each has as many groups as the fleet and the first
        # has the fleet's, their values are taken as they are (HVALS: half the time of HGETALL, whose
        # dictionaries of 50,000 keys cost as much as the transfer).
        families = GROUP_FAMILIES if self.summaries else ()
        pipe = self.r.pipeline(transaction=False)
        pipe.hkeys(self.data.k("fleet"))
        pipe.hgetall(self.data.k("fleet", "state"))
        if families:
            pipe.hkeys(self.data.sk(f"metrics:{families[0]}"))
            for family in families:
                pipe.hlen(self.data.sk(f"metrics:{family}"))
                pipe.hvals(self.data.sk(f"metrics:{family}"))
        names, states, *found = pipe.execute()
        fleet = set(names)
        for raw_name in names:
            st = states.get(raw_name)
            state = st.decode() if st else "Unknown"
            scrape.per_state[state] = scrape.per_state.get(state, 0) + 1
        complete: set[bytes] = set()
        if families:
            first, counts, values = set(found[0]), found[1::2], found[2::2]
            if first == fleet and all(n == len(fleet) for n in counts):
                complete = fleet
                for family, lines in zip(families, values, strict=True):
                    scrape.lines[family] = lines
            else:  # groups without summaries, or deleted since: take those of the fleet only
                pipe = self.r.pipeline(transaction=False)
                for family in families:
                    pipe.hgetall(self.data.sk(f"metrics:{family}"))
                stored = pipe.execute()
                complete = fleet.intersection(*(hash_.keys() for hash_ in stored))
                for family, hash_ in zip(families, stored, strict=True):
                    scrape.lines[family] = [v for k, v in hash_.items() if k in complete]
        missing = [n.decode() for n in names if n not in complete]
        if missing:
            scrape.from_documents = len(missing)
            for name, values, _ in self._from_documents(missing, partitions=False):
                for family, lines in zip(GROUP_FAMILIES, metric_lines(name, values), strict=True):
                    scrape.lines[family].append(lines.encode())
                # (a group whose fleet row is gone since the listing is counted in its old state)
        if self.per_partition:
            # Per-partition lag is not summarised (it would cost the sink a row of work per partition
            # for an option that is off by default): it comes from the documents.
            offs = scrape.partition_lines["groupscope_partition_lag_offsets"]
            secs = scrape.partition_lines["groupscope_partition_lag_seconds"]
            for name, _, parts in self._from_documents([n.decode() for n in names], partitions=True):
                g = esc(name)
                for topic, p, p_off, p_sec in parts:
                    label = f'{{group="{g}",partition="{p}",topic="{esc(topic)}"}}'
                    offs.append(f"groupscope_partition_lag_offsets{label} {num(p_off)}\n")
                    secs.append(f"groupscope_partition_lag_seconds{label} {num(p_sec)}\n")
        scrape.alerts = self.alerts.active()
        scrape.cycle = self.alerts.last_cycle()
        return scrape

    def _from_documents(
        self, names: list[str], partitions: bool
    ) -> Iterator[tuple[str, list[Any], list[list[Any]]]]:
        """(name, metric values, per-partition rows) of groups from their fleet rows and documents:
        the same computation the sink's summaries are made with."""
        for i in range(0, len(names), self.chunk):
            chunk = names[i : i + self.chunk]
            pipe = self.r.pipeline(transaction=False)
            pipe.hmget(self.data.k("fleet"), chunk)
            pipe.mget([self.data.gk(name, "doc") for name in chunk])
            rows, docs = pipe.execute()
            for name, raw_row, raw_doc in zip(chunk, rows, docs, strict=True):
                row, doc = _loads(raw_row), _loads(raw_doc)
                if not isinstance(row, dict):
                    continue  # gone since the fleet was listed, or unreadable
                values, parts = metric_values(
                    row, lag_rows(doc) if isinstance(doc, dict) else [], per_partition=partitions
                )
                yield name, values, parts

    def text(self, scrape: Scrape, names: Iterable[str] | None = None) -> bytes:
        """The scrape in Prometheus' text format (0.0.4); `names` restricts it to those families."""
        want = set(names) if names is not None else None
        small: dict[str, list[str]] = {name: [] for name in FAMILIES}
        small["groupscope_groups"] = [
            f'groupscope_groups{{state="{esc(st)}"}} {num(n)}\n' for st, n in sorted(scrape.per_state.items())
        ]
        per_rule: dict[str, int] = {}
        firing = small["groupscope_alert_firing"]
        for a in scrape.alerts:
            group, rule, severity = esc(a["group"]), esc(a["rule"]), esc(a.get("severity", "warning"))
            firing.append(
                f'groupscope_alert_firing{{group="{group}",rule="{rule}",severity="{severity}"}} 1.0\n'
            )
            per_rule[a["rule"]] = per_rule.get(a["rule"], 0) + 1
        small["groupscope_alerts_active"] = [
            f'groupscope_alerts_active{{rule="{esc(rule)}"}} {num(n)}\n'
            for rule, n in sorted(per_rule.items())
        ]
        for name, value in _cycle_values(scrape.cycle):
            small[name].append(f"{name} {num(value)}\n")
        small["groupscope_scrape_errors"].append("groupscope_scrape_errors 0.0\n")
        small.update(scrape.partition_lines)
        shown = self._shown(scrape)
        out: list[bytes] = []
        for name, doc in FAMILIES.items():
            if name not in shown or (want is not None and name not in want):
                continue
            out.append(f"# HELP {name} {doc}\n# TYPE {name} gauge\n".encode())
            if name in scrape.lines:
                out.extend(scrape.lines[name])
            else:
                out.append("".join(small[name]).encode())
        return b"".join(out)

    def _shown(self, scrape: Scrape) -> set[str]:
        """The families a scrape lists (even empty): per partition only when asked, the cycle's once
        there was one."""
        shown = set(FAMILIES)
        if not self.per_partition:
            shown -= {"groupscope_partition_lag_offsets", "groupscope_partition_lag_seconds"}
        if not scrape.cycle:
            shown -= {n for n in FAMILIES if n.startswith("groupscope_alert_cycle_")}
        return shown

    def families(self, scrape: Scrape) -> list[Metric]:
        """The same series as `text`, as prometheus_client metric families (without scrape_errors),
        read back from that text: the series a registry serves are exactly those the app serves."""
        text = self.text(scrape).decode()
        return [m for m in text_string_to_metric_families(text) if m.name != "groupscope_scrape_errors"]

    def render(self, names: Iterable[str] | None = None) -> bytes:
        """One scrape as text; Redis unreachable gives `groupscope_scrape_errors 1` alone."""
        try:
            with _no_cyclic_gc():
                return self.text(self.read(), names)
        except Exception as e:  # an unreachable Redis must give an answer Prometheus can alert on
            log.warning("metrics scrape: cannot read Redis: %s", e)
            doc = FAMILIES["groupscope_scrape_errors"]
            body = f"# HELP groupscope_scrape_errors {doc}\n# TYPE groupscope_scrape_errors gauge\n"
            return (body + "groupscope_scrape_errors 1.0\n").encode()


def _loads(raw: bytes | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _cycle_values(cycle: dict[str, Any] | None) -> list[tuple[str, float]]:
    if not cycle:
        return []
    return [
        ("groupscope_alert_cycle_duration_seconds", float(cycle.get("duration_s") or 0)),
        ("groupscope_alert_cycle_timestamp_seconds", float(cycle.get("wall_ms") or 0) / 1000.0),
        ("groupscope_alert_cycle_groups_evaluated", float(cycle.get("evaluated") or 0)),
    ]


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Thousands of decoded summaries hold no cycles: keep the cyclic GC out of it (see evaluate.py)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class GroupscopeCollector(Collector):
    """The metrics as a prometheus_client collector, for servers built on a registry."""

    def __init__(
        self,
        client: Any,
        prefix: str = "gs",
        per_partition: bool = False,
        chunk: int = 1000,
        summaries: bool = True,
    ) -> None:
        self.source = MetricsSource(
            client, prefix=prefix, per_partition=per_partition, chunk=chunk, summaries=summaries
        )

    def describe(self) -> list[Metric]:
        return []  # read Redis only at scrape time, never at registration

    def collect(self) -> Iterator[Metric]:
        errors = GaugeMetricFamily(
            "groupscope_scrape_errors", "1 when Redis could not be read for this scrape"
        )
        try:
            with _no_cyclic_gc():
                families = self.source.families(self.source.read())
        except Exception as e:  # an unreachable Redis must give an answer Prometheus can alert on
            log.warning("metrics scrape: cannot read Redis: %s", e)
            errors.add_metric([], 1)
            yield errors
            return
        yield from families
        errors.add_metric([], 0)
        yield errors


def _client(redis_url: str) -> Any:
    import redis

    return redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)


def make_registry(redis_url: str, prefix: str = "gs", per_partition: bool = False) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GroupscopeCollector(_client(redis_url), prefix=prefix, per_partition=per_partition))
    return registry


def _gzip_accepted(header: str | None) -> bool:
    return any(part.split(";")[0].strip().lower() == "gzip" for part in (header or "").split(","))


def make_wsgi_app(redis_url: str, prefix: str = "gs", per_partition: bool = False) -> Callable[..., Any]:
    """A WSGI app answering Prometheus scrapes (mount it at /metrics). It answers like
    prometheus_client's (OPTIONS, GET only, `name[]` to select families, gzip when accepted), in the
    text format 0.0.4, which every Prometheus reads."""
    source = MetricsSource(_client(redis_url), prefix=prefix, per_partition=per_partition)
    lock = threading.Lock()  # one redis client, one scrape at a time

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "OPTIONS":
            start_response("200 OK", [("Allow", "OPTIONS,GET")])
            return [b""]
        if method != "GET":
            start_response("405 Method Not Allowed", [("Allow", "OPTIONS,GET")])
            return [f"# HTTP 405 Method Not Allowed: {method}; use OPTIONS or GET\n".encode()]
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        with lock:
            body = source.render(names)
        headers = [("Content-Type", CONTENT_TYPE)]
        if _gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING")):
            # Level 1: a 36 MB exposition of 50,000 groups compresses ~8x in a fraction of the
            # time the default level takes, and the scrape's time is what Prometheus waits on.
            body = gzip.compress(body, compresslevel=1)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in flight never holds up the worker's shutdown


class _SilentHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def start_metrics_server(port: int, redis_url: str, addr: str = "0.0.0.0", **kw: Any) -> Any:
    """Serve /metrics on a port in a daemon thread; returns (server, thread)."""
    family = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    server_class = type("_Server", (_ThreadingWSGIServer,), {"address_family": family})
    httpd = make_server(
        addr, port, make_wsgi_app(redis_url, **kw), server_class, handler_class=_SilentHandler
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread
