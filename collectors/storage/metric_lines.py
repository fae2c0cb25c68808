"""A group's Prometheus lines (the text exposition format), as the sink stores them beside its
document (collectors/storage/summaries.py) and a scrape joins them (collectors/exporter/scrape.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator_model.document import GroupDocument, PartitionLag
from coordinator_model.streams.tasks import task_lags


def row_values(row: Mapping[str, Any], topics: dict[str, list[float]]) -> list[Any]:
    gen = row.get("generation") if row.get("generation") is not None else row.get("group_epoch")
    return [
        str(row.get("state") or "Unknown"),
        float(row.get("members") or 0),
        None if gen is None else float(gen),
        float(row.get("rebalances_1h") or 0),
        float(row.get("lag") or 0),
        float(row.get("lag_seconds") or 0),
        [[topic, off, sec] for topic, (off, sec) in sorted(topics.items())],
    ]


def metric_values(
    row: Mapping[str, Any], rows: list[PartitionLag], per_partition: bool = True
) -> tuple[list[Any], list[list[Any]]]:
    """A group's metric values, as the scrape derived them from its fleet row (FleetRow.to_json())
    and its document's partition rows (`doc.lag.partitions`): ([state, members, generation or epoch (None: no
    series), rebalances_1h, lag, lag_seconds, [[topic, lag, worst seconds], ...] by topic],
    per-partition [[topic, partition, lag, lag_seconds], ...] when asked)."""
    topics: dict[str, list[float]] = {}
    parts: list[list[Any]] = []
    for r in rows:
        topic, partition, lag, secs = r.topic, r.partition, r.lag, r.lag_seconds
        t = topics.get(topic)
        if t is None:
            t = topics[topic] = [0.0, 0.0]
        t[0] += lag or 0
        t[1] = max(t[1], secs or 0.0)
        if per_partition:
            parts.append([topic, partition, float(lag or 0), float(secs or 0)])
    values = row_values(row, topics)
    return values, parts


# The per-group metric families, in the order a scrape lists them (collectors/exporter/scrape.py).
GROUP_FAMILIES = (
    "groupscope_group_state",
    "groupscope_group_members",
    "groupscope_group_generation",
    "groupscope_group_rebalances_1h",
    "groupscope_group_lag_offsets",
    "groupscope_group_lag_seconds",
    "groupscope_group_topic_lag_offsets",
    "groupscope_group_topic_lag_seconds",
)


def metric_lines(group: str, values: list[Any]) -> list[str]:
    """A group's lines of each of GROUP_FAMILIES in the text exposition format, from its
    `metric_values`: what the sink stores, so that a scrape only joins them."""
    state, members, gen, rebalances, lag, lag_s, topics = values
    g = esc(group)
    return [
        f'groupscope_group_state{{group="{g}",state="{esc(state)}"}} 1.0\n',
        f'groupscope_group_members{{group="{g}"}} {num(members)}\n',
        "" if gen is None else f'groupscope_group_generation{{group="{g}"}} {num(gen)}\n',
        f'groupscope_group_rebalances_1h{{group="{g}"}} {num(rebalances)}\n',
        f'groupscope_group_lag_offsets{{group="{g}"}} {num(lag)}\n',
        f'groupscope_group_lag_seconds{{group="{g}"}} {num(lag_s)}\n',
        _lines("groupscope_group_topic_lag_offsets", g, "topic", [(t, off) for t, off, _ in topics]),
        _lines("groupscope_group_topic_lag_seconds", g, "topic", [(t, sec) for t, _, sec in topics]),
    ]


def _lines(family: str, g: str, label: str, values: list[tuple[str, Any]]) -> str:
    """A family's lines of one group (its name `g` escaped), one per (label value, value)."""
    return "".join(f'{family}{{group="{g}",{label}="{esc(k)}"}} {num(v)}\n' for k, v in values)


# A streams group's lag per active task (a task reads partition p of its subtopology's topics: their
# lags summed, their worst seconds). Apart from GROUP_FAMILIES, whose hashes hold every group (a
# scrape takes them whole when they do): these hold streams groups only.
TASK_FAMILIES = ("groupscope_streams_task_lag_offsets", "groupscope_streams_task_lag_seconds")


def task_values(doc: GroupDocument) -> list[list[Any]]:
    """[[task, lag, lag_seconds or None], ...] of the group's tasks whose lag is known, in task order
    ([] for a group without a topology)."""
    return [[t.task, t.lag, t.lag_seconds] for t in task_lags(doc) if t.lag is not None]


def task_lines(group: str, tasks: list[list[Any]]) -> list[str]:
    """A streams group's lines of each of TASK_FAMILIES, from its `task_values`."""
    g = esc(group)
    return [
        _lines("groupscope_streams_task_lag_offsets", g, "task", [(t, off) for t, off, _ in tasks]),
        _lines(
            "groupscope_streams_task_lag_seconds", g, "task", [(t, s) for t, _, s in tasks if s is not None]
        ),
    ]


def esc(value: str) -> str:
    """A label value as the text format escapes it (backslash, newline, double quote)."""
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return value


_SPECIAL = {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}


def num(value: float) -> str:
    """A sample value: Python's shortest repr, which Prometheus parses (its own +Inf, -Inf, NaN)."""
    text = repr(float(value))
    return _SPECIAL.get(text, text)
