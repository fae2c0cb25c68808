"""Compact per-group summaries that the sink writes next to each document (docs/redis-schema.md,
"Summaries"), so that an alert cycle and a Prometheus scrape over 50,000 groups never parse 50,000
full documents.

Measured at 50,000 groups (benchmarks/alerts.py, cProfile): a cold cycle spent about a fifth of its
time in `json.loads` of the documents and half in the rules' reader (coordinator_model/document/
view.py) turning generations, timeline and lag rows into objects; a scrape decoded every document
for its per-topic lag and spent the rest in prometheus_client's per-sample formatting. So:

- The rule head is what the rebalance rules read (state, timeline, generations), already parsed by
  the rules' own reader at write time (`view.timeline`, `view.generations`) and stored as
  plain JSON lists. The evaluator (collectors/alerts/summary_rules.py) turns the lists back into the
  same objects and runs the same rule functions on them: no verdict is re-implemented, and
  tests/test_alerts_summary.py holds the two paths equal (the real captures, and hypothesis
  properties over odd documents, configurations and moments). The head changes only with the group's
  history; the sink rebuilds it only when its key (a digest of what it is built from) changes, so a
  refresh that only moves lag costs the sink no timeline or generation parsing.
- Lag rows are not copied (that was most of the sink's added cost on groups of 100 partitions).
  The facts (`Facts`) say what can be known of them: how many a rule could count (lag unknown or
  above 0), their worst seconds, shortest retention, and whether one is below the log start; plus
  the state the timeline settles in and the newest generation. With them the evaluator leaves out
  the rules that cannot return anything (`Silence`); a group whose lag rules must really look at
  rows (it lags, or it is Empty with messages waiting) is judged from its document. A group with no
  row a rule could count is judged with no rows, which gives what its rows would give: every lag
  rule skips lag <= `ignore_lag_at_most` (kept non-negative, see `summaries_usable`) and group_empty
  sums lags above 1.
- The metrics summary is the fleet row's values plus the per-topic lag a scrape would otherwise
  compute from the document, computed with the same code at write time; and a streams group's lag per task
  (TASK_FAMILIES, coordinator_model/streams/tasks.py), stored for streams groups only.
- The statuses (in a rebalance storm, flapping, lagging: coordinator_model/statuses.py, each one
  alert rule) are found from the same summaries (`PackedEvaluator.statuses`, read over a fleet by
  collectors/alerts/fleet_statuses.py): the storm and flapping rules on the rule head, the lag rule
  on the facts' lag rows, the rows a lag rule could count reduced to those no other row of their
  status outdoes (`_lag_frontier`), which decide it as all the rows do (tests/test_statuses.py).
  A status is never computed here at write time: the storm's window slides with the clock.

The summaries are JSON written by the standard library (exact for any integer, and for non-finite
floats as `Infinity`/`NaN`) and read by orjson, 3 to 7 times faster on them, which halved what
decoding cost a cold cycle. orjson would read an integer past 64 bits as a float, so the sink
refuses to summarise a document with one (`_checked`: orjson's encoder raises on them; the group is
then read whole), and what orjson refuses to read (`Infinity`, `NaN`) is read by the standard
library (`loads`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from collectors.storage.metric_lines import metric_lines, row_values, task_lines, task_values
from coordinator_model.document import GroupDocument, PartitionLag
from coordinator_model.document.view import (
    Generation,
    GroupView,
    members_behind,
    state_at,
)

# Bumped whenever the layout of the rule input or the facts changes. It is part of the head's key,
# so a new collector rewrites every head; an evaluator reads only the version it knows and falls
# back to the document for any other (a collector and a worker of different versions in an upgrade).
RULES_VERSION = 4  # 4: facts with behind_since (3: with the lag rows; 2: without retention and log start)
# The most lag rows the facts keep (`_lag_frontier`); a group with more is read from its document.
MAX_LAG_ROWS = 32

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def _checked(obj: Any) -> str:
    """`obj` as JSON text, refused (TypeError) when orjson could not read it back exactly: an integer
    past 64 bits, which orjson's encoder refuses and its decoder would turn into a float."""
    orjson.dumps(obj)
    return _ENCODE(obj)


def loads(raw: bytes | str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # Infinity, NaN (orjson reads neither): the standard library does
        return json.loads(raw)


class Facts(NamedTuple):
    """What the evaluator knows of a group without its rows (stored as a JSON list in this order)."""

    key: str  # digest of what the head is built from: unchanged key, unchanged head
    settle: int | None  # the latest start or end in the timeline (None: it has no times)
    settled: str | None  # the state state_at returns at any moment from `settle` on
    states: list[str]  # every state state_at may return (the timeline's and the document's)
    newest_generation: int | None  # start of the newest generation the rules read
    lagging: int  # lag rows a rule could count: lag unknown or above 0
    worst_seconds: float | None  # their worst lag in seconds
    # Those rows as [status, lag, seconds], reduced to the ones no other row of the same status
    # outdoes (`_lag_frontier`); None when too many are left (read the document).
    lag_rows: list[list[Any]] | None
    # when the first of its members fell behind the target assignment epoch (rules.members_behind,
    # over all the document's epochs); None when none is: member_not_converging cannot fire
    behind_since: int | None


@dataclass(frozen=True)
class Summaries:
    """One group's summaries as stored (docs/redis-schema.md)."""

    head: str | None  # the rule head; None when the stored one stands (same key)
    facts: Facts
    metrics: list[str]  # the group's exposition lines of each of GROUP_FAMILIES ("" for none)
    # a streams group's lines of each of TASK_FAMILIES; None for a group of another kind (nothing
    # stored for it)
    tasks: list[str] | None = field(default=None)

    def facts_text(self) -> str:
        return _checked(list(self.facts))


def head_key(doc: GroupDocument, history_digest: str) -> str:
    """Digest of everything the head is built from: the timeline and generations (through the
    store's history digest of them), the state, and the members' ids, instance ids and client ids
    (generations name members by id; their keys come from the member list), and their epochs: a
    member catching up with the target assignment changes what member_not_converging says, and a
    group whose key did not change is not judged again (collectors/alerts/quiet_groups.py)."""
    members = [[m.member_id, m.group_instance_id, m.client_id, m.member_epoch] for m in doc.members]
    text = json.dumps([RULES_VERSION, history_digest, doc.state, members], separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _gen_row(g: Generation) -> list[Any]:
    return [
        g.generation,
        g.start,
        g.end,
        g.cause,
        g.reason,
        [[m.member_id, m.key] for m in g.joined],
        [[m.member_id, m.key] for m in g.left],
        g.member_count,
        # The only keys of the raw generation the rules read: the storm rule's "empty", and the
        # duration in the evidence.
        g.raw.get("duration_ms"),
        g.raw.get("empty"),
    ]


def rule_head(doc: GroupDocument) -> tuple[str, list[Any]]:
    """The head of the rule input ([version, state, timeline, generations], as document/view.py reads them),
    and the facts that follow from it: [settle, settled, states, newest generation]."""
    state = doc.state
    view = GroupView(doc)
    spans = view.timeline
    gens = view.generations
    # state_at returns a timeline state or the document's. Once now has passed every start and end
    # of the timeline (`settle`) it always returns the same one, the one it gives at that moment: no
    # span ending before now matches any more, and the latest open span (or else the last) wins.
    times = [t for span in spans for t in (span.start, span.end) if t is not None]
    settle = max(times) if times else None
    settled = state_at(view, settle if settle is not None else 0)[0]
    states = sorted({s.state for s in spans} | ({state} if state is not None else set()))
    newest = max((g.start for g in gens), default=None)
    head = _checked(
        [RULES_VERSION, state, [[s.state, s.start, s.end] for s in spans], [_gen_row(g) for g in gens]]
    )
    return head, [settle, settled, states, newest]


def summarize(
    doc: GroupDocument, row: Mapping[str, Any], history_digest: str, old: Facts | None = None
) -> Summaries:
    """Every summary of one document. `row` is its fleet row (FleetRow.to_json()), `history_digest`
    the store's digest of its timeline and generations, `old` the group's stored facts: when their
    key is this document's, the stored head stands and is not rebuilt."""
    key = head_key(doc, history_digest)
    head: str | None = None
    if old is not None and old.key == key:
        from_head = [old.settle, old.settled, old.states, old.newest_generation]
    else:
        head, from_head = rule_head(doc)
    facts, topics = _scan_lag(doc.lag.partitions)
    lines = metric_lines(doc.group, row_values(row, topics))
    behind = members_behind(doc, 2**62)
    behind_since = min(since for _, _, since in behind) if behind else None
    tasks = task_lines(doc.group, task_values(doc)) if doc.type == "streams" else None
    return Summaries(
        head=head, facts=Facts(key, *from_head, *facts, behind_since), metrics=lines, tasks=tasks
    )


def _scan_lag(rows: list[PartitionLag]) -> tuple[list[Any], dict[str, list[float]]]:
    """One pass over the partition rows: the lag facts ([lagging, worst seconds, lag rows], over the
    rows a rule could count: lag unknown or above 0) and the per-topic [lag, worst seconds] the
    metrics show, as `metric_values` computes them (tests/test_alerts_summary.py)."""
    topics: dict[str, list[float]] = {}
    lagging, worst = 0, None
    counted: list[tuple[str | None, int | None, float | None]] = []
    have_status = False
    for r in rows:
        lag, secs = r.lag, r.lag_seconds
        t = topics.get(r.topic)
        if t is None:
            t = topics[r.topic] = [0.0, 0.0]
        t[0] += lag or 0
        if (secs or 0.0) > t[1]:  # max(t[1], secs or 0.0), as metric_values
            t[1] = secs or 0.0
        if r.status:
            have_status = True
        if lag is None or lag > 0:
            lagging += 1
            counted.append((r.status, lag, secs))
            if secs is not None and not math.isnan(secs) and (worst is None or secs > worst):
                worst = secs
    return [lagging, worst, _lag_frontier(counted, have_status) if counted else []], topics


def _seconds_key(secs: float | None) -> float:
    return -math.inf if secs is None or math.isnan(secs) else secs


def _lag_frontier(
    rows: list[tuple[str | None, int | None, float | None]], have_status: bool
) -> list[list[Any]] | None:
    """The rows a lag rule could count (lag unknown or above 0) as [status, lag, seconds], reduced
    per status to those no other row outdoes (as many messages or more and as many seconds or more
    behind; of the rows of unknown lag, the one furthest behind in seconds). The `lag` rule (the
    `lagging` status, coordinator_model/statuses.py) asks only "at least" of a row: a status among
    some, lag above `ignore_lag_at_most` (never negative, `summaries_usable`), at least `min_offsets`,
    at least `min_seconds`, both or either. Whatever row it would find among all the rows, a row of
    these outdoing it meets the same conditions: run on these, it finds one exactly when it finds
    one on the document. Seconds that cannot count (None, NaN) are kept as None. When the group's
    rows have a status and none of these has one, a row ["OK", 0, None] says so (the rule then
    counts rows by status; a lag of 0 is never counted). None when more than MAX_LAG_ROWS are left
    (rows more behind in messages and less in seconds, one after the other): read the document."""
    by_status: dict[str | None, list[tuple[int | None, float | None]]] = {}
    for status, lag, secs in rows:
        by_status.setdefault(status, []).append((lag, secs))
    out: list[list[Any]] = []
    for status in sorted(by_status, key=lambda st: (st is not None, st or "")):
        points = by_status[status]
        unknown = [secs for lag, secs in points if lag is None]
        if unknown:
            best = max(unknown, key=_seconds_key)
            out.append([status, None, None if _seconds_key(best) == -math.inf else best])
        known = sorted(
            ((lag, secs) for lag, secs in points if lag is not None),
            key=lambda p: (-p[0], -_seconds_key(p[1])),
        )
        top = -math.inf
        for i, (lag, secs) in enumerate(known):
            key = _seconds_key(secs)
            if key > top or i == 0:
                out.append([status, lag, None if key == -math.inf else secs])
                top = key
        if len(out) > MAX_LAG_ROWS:
            return None
    if have_status and out and not any(r[0] for r in out):
        out.append(["OK", 0, None])
    return out


def lag_rows(facts: Facts) -> list[PartitionLag] | None:
    """The facts' lag rows as the lag rule reads them (None: not kept, read the document)."""
    if facts.lag_rows is None:
        return None
    return [
        PartitionLag("", i, lag=lag, lag_seconds=secs, status=status)
        for i, (status, lag, secs) in enumerate(facts.lag_rows)
    ]


def decode_facts(raw: bytes | str | None) -> Facts | None:
    """A group's stored facts, or None when absent or not of the known shape."""
    if not raw:
        return None
    try:
        f = loads(raw)
    except ValueError:
        return None
    if not isinstance(f, list) or len(f) != len(Facts._fields) or not isinstance(f[0], str):
        return None
    return Facts(*f)


def head_readable(raw: bytes | None) -> bool:
    """Whether a stored head is of the version this code reads (without decoding it)."""
    return raw is not None and raw.startswith(_HEAD_PREFIX)


_HEAD_PREFIX = f"[{RULES_VERSION},".encode()


def decode_head(raw: bytes | str | None) -> list[Any] | None:
    """A stored head, or None when absent or of another version (read the document then)."""
    if not raw:
        return None
    try:
        head = loads(raw)
    except ValueError:
        return None
    if not isinstance(head, list) or len(head) != 4 or head[0] != RULES_VERSION:
        return None
    return head
