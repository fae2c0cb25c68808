"""The tables `groupscope describe` prints, in kafka-consumer-groups.sh's columns (--offsets,
--members [--verbose], --state), and the rows behind them, which --json prints as they are."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from coordinator_model.document import CoordinatorDoc, GroupDocument

UNKNOWN = "-"


def cell(v: Any) -> str:
    return UNKNOWN if v is None or v == "" else str(v)


def _secs(v: float | None) -> str:
    return UNKNOWN if v is None else f"{v:.1f}"


def table(columns: list[tuple[str, int | None]], rows: Iterable[list[str]]) -> list[str]:
    """Left-aligned fixed-width columns like Kafka's tool: a width of None is the column's widest
    value (at least its header); the last column is not padded."""
    rows = list(rows)
    widths = []
    for i, (name, w) in enumerate(columns):
        widest = max([len(name), *(len(r[i]) for r in rows)])
        widths.append(max(w or 0, widest))
    out = []
    for r in [[c for c, _ in columns], *rows]:
        cells = [f"{v:<{widths[i]}}" for i, v in enumerate(r[:-1])]
        out.append(" ".join([*cells, r[-1]]).rstrip())
    return out


# ---- the partitions of a group -------------------------------------------------------------------
@dataclass
class PartitionRow:
    topic: str
    partition: int
    committed: int | None = None
    end_offset: int | None = None
    lag: int | None = None
    lag_seconds: float | None = None
    member_id: str | None = None


def partition_rows(doc: GroupDocument) -> list[PartitionRow]:
    """Every partition the group commits to or owns: its committed offset, its log end and lag as
    groupscope last computed them, and the member that owns it now."""
    rows: dict[tuple[str, int], PartitionRow] = {}
    for o in doc.offsets:
        rows[(o.topic, o.partition)] = PartitionRow(o.topic, o.partition, committed=o.offset)
    for p in doc.lag.partitions:
        r = rows.setdefault((p.topic, p.partition), PartitionRow(p.topic, p.partition))
        if p.committed is not None and p.has_commit:
            r.committed = p.committed if r.committed is None else r.committed
        r.end_offset, r.lag, r.lag_seconds = p.end_offset, p.lag, p.lag_seconds
        r.member_id = p.member_id
    for r in rows.values():
        # The log end groupscope knows is the Admin poller's last, often older than a commit that came
        # after it on the offsets topic: the log had reached at least the committed offset (its lag,
        # 0, already says so). Shown as is, the end read below the offset, which
        # kafka-consumer-groups.sh (asking the broker now) never shows.
        if r.end_offset is not None and r.committed is not None and r.committed > r.end_offset:
            r.end_offset = r.committed
    for tp, mid in doc.owners().items():
        rows.setdefault(tp, PartitionRow(*tp)).member_id = mid
    return [rows[k] for k in sorted(rows)]


# ---- describe -------------------------------------------------------------------------------------
def _offsets_json(doc: GroupDocument) -> list[dict[str, Any]]:
    members = doc.member_by_id()
    out = []
    for r in partition_rows(doc):
        m = members.get(r.member_id or "")
        out.append(
            {
                "group": doc.group,
                "topic": r.topic,
                "partition": r.partition,
                "current_offset": r.committed,
                "log_end_offset": r.end_offset,
                "lag": r.lag,
                "lag_seconds": r.lag_seconds,
                "consumer_id": r.member_id if m else None,
                "host": m.client_host if m else None,
                "client_id": m.client_id if m else None,
            }
        )
    owned = {mid for mid in doc.owners().values()}
    for m in doc.members:  # members without partitions: a row of their own, as Kafka prints them
        if m.member_id not in owned:
            out.append(
                {
                    "group": doc.group,
                    "topic": None,
                    "partition": None,
                    "current_offset": None,
                    "log_end_offset": None,
                    "lag": None,
                    "lag_seconds": None,
                    "consumer_id": m.member_id,
                    "host": m.client_host,
                    "client_id": m.client_id,
                }
            )
    return out


def _assignment(tps: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return (
        ",".join(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items()))
        or UNKNOWN
    )


def _members_json(doc: GroupDocument) -> list[dict[str, Any]]:
    return [
        {
            "group": doc.group,
            "consumer_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "host": m.client_host,
            "client_id": m.client_id,
            "partitions": len(m.assignment),
            "assignment": [[t, p] for t, p in sorted(m.assignment)],
        }
        for m in sorted(doc.members, key=lambda m: m.member_id)
    ]


def _state_json(doc: GroupDocument) -> list[dict[str, Any]]:
    return [
        {
            "group": doc.group,
            # the broker the Admin API's last describe named ({"id", "host", "port"}); None when no
            # describe named one (a group only its commits tell of, a share or streams group)
            "coordinator": doc.coordinator.to_json() if doc.coordinator is not None else None,
            "coordinator_partition": doc.coordinator_partition,
            "assignment_strategy": doc.protocol,
            "state": doc.state,
            "members": len(doc.members),
        }
    ]


def _coordinator(node: dict[str, Any] | None) -> str:
    """The COORDINATOR (ID) cell as kafka-consumer-groups.sh prints it, "host:port  (id)"; "-" when
    no describe named the coordinator."""
    if node is None:
        return UNKNOWN
    return CoordinatorDoc(node["id"], node["host"], node["port"]).label()


OFFSET_COLUMNS = [
    ("GROUP", None),
    ("TOPIC", None),
    ("PARTITION", 10),
    ("CURRENT-OFFSET", 15),
    ("LOG-END-OFFSET", 15),
    ("LAG", 15),
    ("LAG-SECONDS", 12),
    ("CONSUMER-ID", None),
    ("HOST", None),
    ("CLIENT-ID", None),
]


def render(mode: str, verbose: bool, rows: list[dict[str, Any]]) -> list[str]:
    """The text table of one mode's JSON rows (rows of every group described, in order)."""
    if mode == "members":
        cols: list[tuple[str, int | None]] = [("GROUP", None), ("CONSUMER-ID", None)]
        if verbose:
            cols.append(("GROUP-INSTANCE-ID", None))
        cols += [("HOST", None), ("CLIENT-ID", None), ("#PARTITIONS", 12)]
        if verbose:
            cols.append(("ASSIGNMENT", None))
        cells = []
        for r in rows:
            c = [r["group"], r["consumer_id"]]
            if verbose:
                c.append(cell(r["group_instance_id"]))
            c += [cell(r["host"]), cell(r["client_id"]), str(r["partitions"])]
            if verbose:
                c.append(_assignment([(t, p) for t, p in r["assignment"]]))
            cells.append(c)
        return table(cols, cells)
    if mode == "state":
        cols = [
            ("GROUP", None),
            ("COORDINATOR (ID)", 25),
            ("ASSIGNMENT-STRATEGY", 20),
            ("STATE", 20),
            ("#MEMBERS", None),
        ]
        cells = [
            [
                r["group"],
                _coordinator(r["coordinator"]),
                cell(r["assignment_strategy"]),
                cell(r["state"]),
                str(r["members"]),
            ]
            for r in rows
        ]
        return table(cols, cells)
    cells = [
        [
            r["group"],
            cell(r["topic"]),
            cell(r["partition"]),
            cell(r["current_offset"]),
            cell(r["log_end_offset"]),
            cell(r["lag"]),
            _secs(r["lag_seconds"]),
            cell(r["consumer_id"]),
            cell(r["host"]),
            cell(r["client_id"]),
        ]
        for r in rows
    ]
    return table(OFFSET_COLUMNS, cells)


ROWS: dict[str, Callable[[GroupDocument], list[dict[str, Any]]]] = {
    "offsets": _offsets_json,
    "members": _members_json,
    "state": _state_json,
}
