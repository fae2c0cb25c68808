"""Prometheus metrics, read from Redis at scrape time (no state of our own).

Series (all gauges; labels in braces, and on every series `cluster`, the Kafka cluster: one scrape
covers every cluster of the Redis, those of its registry and the configured ones):
- groupscope_groups{state}                              groups per state
- groupscope_groups_by_type{type,state}                 groups per kind (classic, consumer, share,
                                                        streams) and state, in Kafka's own words
- groupscope_group_state{group,state}                   1 for the group's current state
- groupscope_group_members{group}                       members
- groupscope_group_generation{group}                    classic generation (or KIP-848 group epoch)
- groupscope_group_rebalances_1h{group}                 rebalances in the last hour
- groupscope_group_lag_offsets{group}                   total lag in messages
- groupscope_group_lag_seconds{group}                   worst partition's lag in seconds
- groupscope_group_topic_lag_offsets{group,topic}       lag per group and topic
- groupscope_group_topic_lag_seconds{group,topic}       worst lag per group and topic
- groupscope_streams_task_lag_offsets{group,task}     a streams group's lag per active task
- groupscope_streams_task_lag_seconds{group,task}     (coordinator_model/streams/tasks.py)
- groupscope_partition_lag_offsets{group,topic,partition}  only with metrics_per_partition (cardinality)
- groupscope_partition_lag_seconds{group,topic,partition}  idem
- groupscope_groups_in_status{status}                   groups in a rebalance storm, flapping, lagging
- groupscope_group_status{group,status}                 1 for each of those a group is in
- groupscope_alert_firing{group,rule,severity}          1 per firing alert
- groupscope_alerts_active{rule}                        firing alerts per rule
- groupscope_alert_cycle_duration_seconds, groupscope_alert_cycle_timestamp_seconds,
  groupscope_alert_cycle_groups_evaluated               the last evaluation cycle
- groupscope_scrape_errors                              1 when the cluster's data could not be read

The statuses (storm, flapping, lagging) are the alert rules' (coordinator_model/statuses.py), with
the alert configuration given (`config`, the worker's; default: the built-in rules), judged at
scrape time (collectors/alerts/fleet_statuses.py): a scrape counts the groups the alerts raise
those alerts for.

The endpoints that serve it (`make_wsgi_app`, `start_metrics_server`, `make_registry`) are
server.py's.

Fast at 50,000 groups because a scrape reads one small summary per group, written by the sink with
the document (`gs:summary:metrics`, collectors/storage/summaries.py), instead of every fleet row and
every document; a group without one (written by an older collector) is read from its fleet row and
document as before, and so is per-partition lag (`metrics_per_partition`, off by default). The WSGI
app and the server write the text exposition format themselves: prometheus_client formats each of
the ~500,000 samples through several function calls, which was as slow as reading the documents.
`make_registry` keeps a prometheus_client registry for other servers, with the same series from the
same read.

The sink stores each group's lines without a cluster label; the label is added when serving
(cluster_label.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families

from collectors.alerts.clusters import cluster_names
from collectors.alerts.fleet_statuses import FleetStatuses, read_statuses
from collectors.config import DEFAULT_CLUSTER
from collectors.exporter.cluster_label import label_lines
from collectors.gc_pause import no_cyclic_gc
from collectors.storage.alerts import AlertStore
from collectors.storage.clusters import BASE_PREFIX, cluster_prefix
from collectors.storage.metric_lines import (
    GROUP_FAMILIES,
    TASK_FAMILIES,
    esc,
    metric_lines,
    metric_values,
    num,
    task_lines,
    task_values,
)
from collectors.storage.redis_store import RedisStore
from coordinator_model.alert_rules import AlertConfig, parse_alert_config
from coordinator_model.document.types import DocumentError, GroupDocument
from coordinator_model.statuses import STATUSES

log = logging.getLogger(__name__)

# the families whose lines the sink stores (every group's, and streams groups' per task)
STORED_FAMILIES = (*GROUP_FAMILIES, *TASK_FAMILIES)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# name -> help, in the order a scrape lists them.
FAMILIES: dict[str, str] = {
    "groupscope_groups": "Consumer groups per state",
    "groupscope_groups_by_type": "Groups per type (classic, consumer, share, streams) and state",
    "groupscope_group_state": "1 for the group's current state",
    "groupscope_group_members": "Members of the group",
    "groupscope_group_generation": "Classic generation, or KIP-848 group epoch",
    "groupscope_group_rebalances_1h": "Rebalances in the last hour",
    "groupscope_group_lag_offsets": "Total lag in messages",
    "groupscope_group_lag_seconds": "Worst partition lag in seconds",
    "groupscope_group_topic_lag_offsets": "Lag in messages per topic",
    "groupscope_group_topic_lag_seconds": "Worst lag in seconds per topic",
    "groupscope_streams_task_lag_offsets": "A streams group's lag in messages per active task",
    "groupscope_streams_task_lag_seconds": "A streams group's worst lag in seconds per active task",
    "groupscope_partition_lag_offsets": "Lag in messages",
    "groupscope_partition_lag_seconds": "Lag in seconds",
    "groupscope_groups_in_status": "Groups in a rebalance storm, flapping or lagging (the alert rules)",
    "groupscope_group_status": "1 for each status (storm, flapping, lagging) the group is in",
    "groupscope_alert_firing": "1 per firing alert",
    "groupscope_alerts_active": "Firing alerts per rule",
    "groupscope_alert_cycle_duration_seconds": "Duration of the last evaluation cycle",
    "groupscope_alert_cycle_timestamp_seconds": "Wall-clock time of the last evaluation cycle",
    "groupscope_alert_cycle_groups_evaluated": "Groups judged in the last evaluation cycle",
    "groupscope_scrape_errors": "1 when Redis could not be read for this scrape",
}


@dataclass
class Scrape:
    """What one scrape read from one cluster's Redis layout, before it is written out."""

    # per-group family -> its lines of every group, as stored by the sink (bytes) or made here
    lines: dict[str, list[bytes]] = field(default_factory=lambda: {f: [] for f in STORED_FAMILIES})
    partition_lines: dict[str, list[str]] = field(
        default_factory=lambda: {
            "groupscope_partition_lag_offsets": [],
            "groupscope_partition_lag_seconds": [],
        }
    )
    per_state: dict[str, int] = field(default_factory=dict)
    per_type_state: dict[tuple[str, str], int] = field(default_factory=dict)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    statuses: FleetStatuses | None = None  # the groups in each status at the scrape
    cycle: dict[str, Any] | None = None
    from_documents: int = 0  # groups without summaries, read from their fleet row and document
    cluster: str = DEFAULT_CLUSTER
    error: str | None = None  # the cluster's data could not be read: no series but scrape_errors 1
    dropped: int = 0  # stored lines left out because they are not samples (scrape_errors 1)

    @property
    def label(self) -> str:
        return f'cluster="{esc(self.cluster)}"'


class MetricsSource:
    """Reads one scrape's data from Redis: `read()` (one Scrape per cluster), then `text(scrapes)` or
    `families(scrapes)`. `prefix` is the base prefix: cluster NAME's layout is under `gs@NAME`
    (collectors/storage/clusters.py); `clusters` are the configured ones, which the registry's join.
    `config`: the alert rules that define the statuses (default: the built-in ones); `clock`: the
    scrape's moment in epoch ms (default: the wall clock)."""

    def __init__(
        self,
        client: Any,
        prefix: str = BASE_PREFIX,
        per_partition: bool = False,
        chunk: int = 1000,
        summaries: bool = True,
        clusters: Iterable[str] = (),
        config: AlertConfig | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.r = client
        self.config = config if config is not None else parse_alert_config(None)
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.base = prefix
        self.configured = list(clusters)
        self.per_partition = per_partition
        self.chunk = chunk
        # False reads every group's fleet row and document (the path summaries spare; benchmarks
        # and tests compare the two).
        self.summaries = summaries

    def read(self) -> list[Scrape]:
        """Every cluster's data; a cluster whose data cannot be read gives a Scrape with its error
        (the others are read all the same). Raises only when the cluster registry cannot be read."""
        out: list[Scrape] = []
        for name in cluster_names(self.r, self.configured, self.base):
            try:
                out.append(self.read_cluster(name))
            except Exception as e:  # one cluster's broken data must not take the others' series
                log.warning("metrics scrape: cluster %s: cannot read its data: %s", name, e)
                out.append(Scrape(cluster=name, error=f"{type(e).__name__}: {e}"))
        return out

    def read_cluster(self, cluster: str) -> Scrape:
        prefix = cluster_prefix(cluster, self.base)
        data = RedisStore(self.r, prefix=prefix)
        alerts = AlertStore(self.r, prefix=prefix, cluster=cluster)
        scrape = Scrape(cluster=cluster)
        # The fleet says which groups exist (and their states); the summary hashes hold each group's
        # lines, one hash per family, so a scrape joins them without looking at a group. The families
        # are written and removed together: when each has as many groups as the fleet and the first
        # has the fleet's, their values are taken as they are (HVALS: half the time of HGETALL, whose
        # dictionaries of 50,000 keys cost as much as the transfer).
        families = GROUP_FAMILIES if self.summaries else ()
        pipe = self.r.pipeline(transaction=False)
        pipe.hkeys(data.fleet_key)
        pipe.hgetall(data.fleet_states_key)
        pipe.hgetall(data.fleet_types_key)
        if families:
            pipe.hkeys(data.metrics_key(families[0]))
            for family in families:
                pipe.hlen(data.metrics_key(family))
                pipe.hvals(data.metrics_key(family))
        names, states, types, *found = pipe.execute()
        fleet = set(names)
        for raw_name in names:
            st = states.get(raw_name)
            state = st.decode() if st else "Unknown"
            scrape.per_state[state] = scrape.per_state.get(state, 0) + 1
            ty = types.get(raw_name)
            key = ((ty.decode() if ty else "") or "classic", state)  # a row written before types: classic
            scrape.per_type_state[key] = scrape.per_type_state.get(key, 0) + 1
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
                    pipe.hgetall(data.metrics_key(family))
                stored = pipe.execute()
                complete = fleet.intersection(*(hash_.keys() for hash_ in stored))
                for family, hash_ in zip(families, stored, strict=True):
                    scrape.lines[family] = [v for k, v in hash_.items() if k in complete]
        if families:
            # streams groups' lag per task: stored for those groups only, taken for the groups whose
            # other lines were (the others' come with them from their documents, below)
            pipe = self.r.pipeline(transaction=False)
            for family in TASK_FAMILIES:
                pipe.hgetall(data.metrics_key(family))
            for family, hash_ in zip(TASK_FAMILIES, pipe.execute(), strict=True):
                scrape.lines[family] = [v for k, v in hash_.items() if v and k in complete]
        missing = [n.decode() for n in names if n not in complete]
        if missing:
            scrape.from_documents = len(missing)
            for name, values, _, tasks in self._from_documents(data, missing, partitions=False):
                for family, lines in zip(GROUP_FAMILIES, metric_lines(name, values), strict=True):
                    scrape.lines[family].append(lines.encode())
                if tasks is not None:
                    for family, lines in zip(TASK_FAMILIES, task_lines(name, tasks), strict=True):
                        scrape.lines[family].append(lines.encode())
                # (a group whose fleet row is gone since the listing is counted in its old state)
        if self.per_partition:
            # Per-partition lag is not summarised (it would cost the sink a row of work per partition
            # for an option that is off by default): it comes from the documents.
            offs = scrape.partition_lines["groupscope_partition_lag_offsets"]
            secs = scrape.partition_lines["groupscope_partition_lag_seconds"]
            for name, _, parts, _ in self._from_documents(data, [n.decode() for n in names], partitions=True):
                g = esc(name)
                for topic, p, p_off, p_sec in parts:
                    label = f'{{{scrape.label},group="{g}",partition="{p}",topic="{esc(topic)}"}}'
                    offs.append(f"groupscope_partition_lag_offsets{label} {num(p_off)}\n")
                    secs.append(f"groupscope_partition_lag_seconds{label} {num(p_sec)}\n")
        scrape.statuses = read_statuses(
            data, self.config.for_cluster(cluster), self.clock(), summaries=self.summaries, chunk=self.chunk
        )
        scrape.alerts = alerts.active()
        scrape.cycle = alerts.last_cycle()
        return scrape

    def _from_documents(
        self, data: RedisStore, names: list[str], partitions: bool
    ) -> Iterator[tuple[str, list[Any], list[list[Any]], list[list[Any]] | None]]:
        """(name, metric values, per-partition rows, a streams group's task values or None) of groups
        from their fleet rows and documents: the same computation the sink's summaries are made with."""
        for i in range(0, len(names), self.chunk):
            chunk = names[i : i + self.chunk]
            rows = self.r.hmget(data.fleet_key, chunk)
            docs = data.document_texts(chunk)
            for name, raw_row, raw_doc in zip(chunk, rows, docs, strict=True):
                row = _loads(raw_row)
                if not isinstance(row, dict):
                    continue  # gone since the fleet was listed, or unreadable
                doc = _document(name, raw_doc)
                lag_rows = doc.lag.partitions if doc is not None else []
                values, parts = metric_values(row, lag_rows, per_partition=partitions)
                tasks = task_values(doc) if doc is not None and doc.type == "streams" else None
                yield name, values, parts, tasks

    def text(self, scrapes: list[Scrape] | Scrape, names: Iterable[str] | None = None) -> bytes:
        """The scrape of every cluster in Prometheus' text format (0.0.4), each family once with the
        series of every cluster, each labelled with its `cluster`; `names` restricts the families."""
        if isinstance(scrapes, Scrape):
            scrapes = [scrapes]
        want = set(names) if names is not None else None
        shown = self._shown(scrapes)
        if want is not None:
            shown &= want
        # The stored lines first: a cluster whose lines had to be left out reports scrape_errors 1.
        stored: dict[str, list[memoryview]] = {}
        for name in STORED_FAMILIES:
            if name in shown:
                stored[name] = []
                for scrape in scrapes:
                    if scrape.error is None and scrape.lines[name]:
                        text, dropped = label_lines(name, scrape.lines[name], scrape.label.encode())
                        stored[name].append(text)
                        if dropped:
                            log.warning(
                                "metrics scrape: cluster %s: %d stored line(s) of %s not samples; left out",
                                scrape.cluster,
                                dropped,
                                name,
                            )
                            scrape.dropped += dropped
        small: dict[str, list[str]] = {name: [] for name in FAMILIES}
        partition_lines: dict[str, list[str]] = {}
        for scrape in scrapes:
            self._small(scrape, small)
            if scrape.error is None:
                for name, lines in scrape.partition_lines.items():
                    partition_lines.setdefault(name, []).extend(lines)
        small.update(partition_lines)
        out: list[bytes | memoryview] = []
        for name, doc in FAMILIES.items():
            if name not in shown:
                continue
            out.append(f"# HELP {name} {doc}\n# TYPE {name} gauge\n".encode())
            if name in stored:
                out.extend(stored[name])
            else:
                out.append("".join(small[name]).encode())
        return b"".join(out)

    @staticmethod
    def _small(scrape: Scrape, small: dict[str, list[str]]) -> None:
        """The series made here (not stored by the sink) of one cluster, with its label."""
        c = scrape.label
        failed = scrape.error is not None or scrape.dropped > 0
        small["groupscope_scrape_errors"].append(
            f"groupscope_scrape_errors{{{c}}} {1.0 if failed else 0.0}\n"
        )
        if scrape.error is not None:
            return
        small["groupscope_groups"] += [
            f'groupscope_groups{{{c},state="{esc(st)}"}} {num(n)}\n'
            for st, n in sorted(scrape.per_state.items())
        ]
        small["groupscope_groups_by_type"] += [
            f'groupscope_groups_by_type{{{c},state="{esc(st)}",type="{esc(ty)}"}} {num(n)}\n'
            for (ty, st), n in sorted(scrape.per_type_state.items())
        ]
        if scrape.statuses is not None:
            st = scrape.statuses
            small["groupscope_groups_in_status"] += [
                f'groupscope_groups_in_status{{{c},status="{s}"}} {num(st.count(s))}\n' for s in STATUSES
            ]
            small["groupscope_group_status"] += [
                f'groupscope_group_status{{{c},group="{esc(g)}",status="{s}"}} 1.0\n'
                for s in STATUSES
                for g in sorted(st.groups.get(s, {}))
            ]
        per_rule: dict[str, int] = {}
        firing = small["groupscope_alert_firing"]
        for a in scrape.alerts:
            group, rule, severity = esc(a["group"]), esc(a["rule"]), esc(a.get("severity", "warning"))
            firing.append(
                f'groupscope_alert_firing{{{c},group="{group}",rule="{rule}",severity="{severity}"}} 1.0\n'
            )
            per_rule[a["rule"]] = per_rule.get(a["rule"], 0) + 1
        small["groupscope_alerts_active"] += [
            f'groupscope_alerts_active{{{c},rule="{esc(rule)}"}} {num(n)}\n'
            for rule, n in sorted(per_rule.items())
        ]
        for name, value in _cycle_values(scrape.cycle):
            small[name].append(f"{name}{{{c}}} {num(value)}\n")

    def _shown(self, scrapes: list[Scrape]) -> set[str]:
        """The families a scrape lists (even empty): per partition only when asked, the cycle's once
        any cluster had one."""
        shown = set(FAMILIES)
        if not self.per_partition:
            shown -= {"groupscope_partition_lag_offsets", "groupscope_partition_lag_seconds"}
        if not any(s.cycle for s in scrapes):
            shown -= {n for n in FAMILIES if n.startswith("groupscope_alert_cycle_")}
        return shown

    def families(self, scrapes: list[Scrape] | Scrape) -> list[Metric]:
        """The same series as `text`, as prometheus_client metric families (without scrape_errors),
        read back from that text: the series a registry serves are exactly those the app serves."""
        text = self.text(scrapes).decode()
        return [m for m in text_string_to_metric_families(text) if m.name != "groupscope_scrape_errors"]

    def unreadable(self) -> list[str]:
        """The clusters to report `groupscope_scrape_errors 1` for when Redis cannot be read at all
        (its registry with it): the configured ones."""
        return self.configured or [DEFAULT_CLUSTER]

    def render(self, names: Iterable[str] | None = None) -> bytes:
        """One scrape as text; Redis unreachable gives `groupscope_scrape_errors 1` alone (for each
        configured cluster)."""
        try:
            with no_cyclic_gc():
                return self.text(self.read(), names)
        except Exception as e:  # an unreachable Redis must give an answer Prometheus can alert on
            log.warning("metrics scrape: cannot read Redis: %s", e)
            doc = FAMILIES["groupscope_scrape_errors"]
            body = f"# HELP groupscope_scrape_errors {doc}\n# TYPE groupscope_scrape_errors gauge\n"
            body += "".join(
                f'groupscope_scrape_errors{{cluster="{esc(c)}"}} 1.0\n' for c in self.unreadable()
            )
            return body.encode()


def _document(group: str, raw: bytes | None) -> GroupDocument | None:
    """A group's stored document (None when it has none, or the value is not one: no lag shown)."""
    value = _loads(raw)
    if value is None:
        return None
    try:
        return GroupDocument.from_json(value)
    except DocumentError as e:
        log.warning("group %s: the value in Redis is not a group document (%s); no lag shown", group, e)
        return None


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
