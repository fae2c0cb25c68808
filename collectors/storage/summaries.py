"""Compact per-group summaries that the sink writes next to each document (docs/redis-schema.md,
"Summaries"), so that an alert cycle and a Prometheus scrape over 50,000 groups never parse 50,000
full documents.

Measured at 50,000 groups (benchmarks/alerts.py, cProfile): a cold cycle spent about a fifth of its
time in `json.loads` of the documents and half in the rules' reader (coordinator_model/alert_rules/
docview.py) turning generations, timeline and lag rows into objects; a scrape decoded every document
for its per-topic lag and spent the rest in prometheus_client's per-sample formatting. So:

- The rule head is what the rebalance rules read (state, timeline, generations), already parsed by
  the rules' own reader at write time (`docview.timeline`, `docview.generations`) and stored as
  plain JSON lists. The evaluator turns the lists back into the same objects and runs the same rule
  functions on them: no verdict is re-implemented here, and tests/test_alerts_summary.py holds the
  two paths equal (the real captures, and hypothesis properties over odd documents, configurations
  and moments). The head changes only with the group's history; the sink rebuilds it only when its
  key (a digest of what it is built from) changes, so a refresh that only moves lag costs the sink
  no timeline or generation parsing.
- Lag rows are not copied (that was most of the sink's added cost on groups of 100 partitions).
  The facts (`Facts`) say what can be known of them: how many a rule could count (lag unknown or
  above 0), their worst seconds, shortest retention, and whether one is below the log start; plus
  the state the timeline settles in and the newest generation. With them the evaluator leaves out
  the rules that cannot return anything (`Silence`); a group whose lag rules must really look at
  rows (it lags, or it is Empty with messages waiting) is judged from its document. A group with no
  row a rule could count is judged with no rows, which gives what its rows would give: every lag
  rule skips lag <= `ignore_lag_at_most` (kept non-negative, see `summaries_usable`) and group_empty
  sums lags above 1.
- The metrics summary is the fleet row's values plus the per-topic lag the scrape used to compute
  from the document, with the same code, at write time; and a streams group's lag per task
  (TASK_FAMILIES, coordinator_model/streams/tasks.py), stored for streams groups only.
- The statuses (in a rebalance storm, flapping, lagging: coordinator_model/statuses.py, each one
  alert rule) are found from the same summaries (`PackedEvaluator.statuses`, read over a fleet by
  collectors/storage/fleet_statuses.py): the storm and flapping rules on the rule head, the lag rule
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

from coordinator_model.alert_rules import RULES, AlertConfig, Evaluation, Finding, lookback_ms
from coordinator_model.alert_rules.docview import (
    REBALANCING_STATES,
    Generation,
    GroupView,
    MemberRef,
    StateSpan,
    state_at,
)
from coordinator_model.alert_rules.rules import NOT_READY, members_behind
from coordinator_model.document import GroupDocument, PartitionLag
from coordinator_model.statuses import STATUS_RULES, STATUSES, judge
from coordinator_model.streams.tasks import task_lags

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
    group whose key did not change is not judged again (collectors/alerts/evaluate.py)."""
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
    """The head of the rule input ([version, state, timeline, generations], as docview reads them),
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
    lines = metric_lines(doc.group, _values(row, topics))
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


def _values(row: Mapping[str, Any], topics: dict[str, list[float]]) -> list[Any]:
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
    values = _values(row, topics)
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


# ---- read side: the evaluator --------------------------------------------------------------------


class PackedView(GroupView):
    """A GroupView whose generations and timeline come from the rule head instead of being parsed
    from a document, and which has no lag rows: the evaluator builds it only for a group with no
    row a rule could count, or when no rule that reads rows is left to run. The rules
    (coordinator_model/alert_rules/rules.py) read it unchanged. Each part is decoded the first time a
    rule asks for it, as GroupView parses lazily. `lags`: the facts' lag rows (`lag_rows`), given
    only to find the `lagging` status, which they decide as the document's rows do."""

    __slots__ = ("_head",)

    def __init__(
        self, group: str, head: list[Any], since: int | None, lags: list[PartitionLag] | None = None
    ) -> None:
        super().__init__({"group": group, "state": head[1]}, since)
        self._head = head
        self._lags = lags or []

    @property
    def timeline(self) -> list[StateSpan]:
        if self._timeline is None:
            self._timeline = [StateSpan(s, a, b) for s, a, b in self._head[2]]
        return self._timeline

    @property
    def generations(self) -> list[Generation]:
        if self._gens is None:
            since = self.since
            # The document's generations sorted once at write time; keeping those after `since`
            # in that order is what docview.generations(doc, since) returns (a stable sort of a
            # subset).
            self._gens = [
                Generation(
                    n,
                    start,
                    end,
                    cause,
                    reason,
                    tuple([MemberRef(i, k) for i, k in joined]),
                    tuple([MemberRef(i, k) for i, k in left]),
                    count,
                    {"duration_ms": duration, "empty": empty},
                )
                for n, start, end, cause, reason, joined, left, count, duration, empty in self._head[3]
                if since is None or start > since
            ]
        return self._gens


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


def summaries_usable(config: AlertConfig) -> bool:
    """Whether the rule input may stand in for the document under this configuration: it leaves out
    rows with lag <= 0, which only a negative `ignore_lag_at_most` could count (parse_alert_config
    refuses one; a configuration built in code might not)."""
    for name in ("lag", "lag_retention"):
        if name not in config.rules:
            continue  # rules_for never hands out a rule the base configuration lacks
        values = [config.rules[name].get("ignore_lag_at_most")]
        values += [
            ov.rules[name]["ignore_lag_at_most"]
            for ov in config.overrides
            if "ignore_lag_at_most" in ov.rules.get(name, {})
        ]
        if any(isinstance(v, bool) or not isinstance(v, int | float) or v < 0 for v in values):
            return False
    return True


def param_sets(config: AlertConfig, rule: str) -> list[dict[str, Any]]:
    """Every parameter set a group can get for `rule`: the base one, and each override on it."""
    base = config.rules.get(rule, {})
    return [base, *({**base, **ov.rules[rule]} for ov in config.overrides if rule in ov.rules)]


def quiet_lag_seconds(config: AlertConfig) -> float:
    """Worst-partition lag in seconds below which no lag rule of any group can fire (0: no bound).

    `lag` with match "all" and a seconds threshold needs at least that many seconds; `lag_retention`
    needs its fraction of the shortest retention it knows."""
    bounds: list[float] = []
    param_sets_ = [config.rules] + [ov.rules for ov in config.overrides]
    for rules in param_sets_:
        for name in ("lag", "lag_retention"):
            p = {**config.rules.get(name, {}), **rules.get(name, {})}
            if not p.get("enabled", True):
                continue
            if name == "lag":
                if p.get("match") != "all" or p.get("min_seconds") is None:
                    return 0.0
                bounds.append(float(p["min_seconds"]))
            else:
                retentions = [p["default_retention_ms"], *(p.get("topics") or {}).values()]
                bounds.append(float(p["fraction"]) * min(retentions) / 1000.0)
    return min(bounds) if bounds else float("inf")


class Silence:
    """Which rules cannot return anything (no finding, no recheck) for a group, from its facts and
    the configuration: each test below is the rule's own first condition for returning nothing
    (coordinator_model/alert_rules/rules.py), bounded over every parameter set a group can get."""

    def __init__(self, config: AlertConfig) -> None:
        self.quiet_seconds = quiet_lag_seconds(config)
        self.empty_states = {
            s
            for p in param_sets(config, "group_empty")
            for s in (p.get("states") or [])
            if isinstance(s, str)
        }

    def lag(self, f: Facts) -> bool:
        """`lag` and `lag_retention` count no row: none has lag above 0 (both skip lag <=
        ignore_lag_at_most >= 0), or none reaches the seconds any of them needs."""
        if not f.lagging:
            return True
        if self.quiet_seconds <= 0:
            return False
        return f.worst_seconds is None or f.worst_seconds < self.quiet_seconds

    def _state(self, f: Facts, now: int) -> list[str | None] | list[str]:
        return [f.settled] if f.settle is None or now >= f.settle else f.states

    def empty(self, f: Facts, now: int) -> bool:
        """`group_empty`: the state at now is not one it alerts in."""
        return self.empty_states.isdisjoint(self._state(f, now))

    def stuck(self, f: Facts, now: int) -> bool:
        """`rebalance_stuck`: the state at now is not a rebalancing one."""
        return REBALANCING_STATES.isdisjoint(self._state(f, now))

    def not_ready(self, f: Facts, now: int) -> bool:
        """`streams_not_ready`: the state at now is not NotReady."""
        return NOT_READY not in self._state(f, now)

    @staticmethod
    def converging(f: Facts) -> bool:
        """`member_not_converging`: no member is behind the target assignment epoch (over all the
        document's epochs: as of an earlier moment, fewer)."""
        return f.behind_since is None

    @staticmethod
    def generations(f: Facts, since: int) -> bool:
        """`rebalance_storm`, `member_flapping`, `member_lost`: no generation after the look-back."""
        return f.newest_generation is None or f.newest_generation <= since


_GENERATION_RULES = ("rebalance_storm", "member_flapping", "member_lost")
# A head with no history: what a view needs when only the lag rows are read.
_NO_HISTORY = [RULES_VERSION, None, [], []]
# What each rule reads of a PackedView: the head alone (generations, timeline, state), or lag rows
# too, which it has only when none could count. Any other rule (added later) reads the document.
_HEAD_RULES = frozenset({*_GENERATION_RULES, "rebalance_stuck", "streams_not_ready"})
_ROW_RULES = frozenset({"lag", "lag_retention", "group_empty"})


class PackedEvaluator:
    """`coordinator_model.alert_rules.evaluate_group` over a rule input: the same rules in the same
    order with the same look-back, the view built from the summary instead of the document, and
    the rules `Silence` proves empty left out (they would add no finding and no recheck)."""

    def __init__(self, config: AlertConfig) -> None:
        self.config = config
        self.silence = Silence(config)
        self.usable = summaries_usable(config)  # the lag rows decide the lag rule (statuses)
        self._lookback: dict[str, int] = {}  # group -> ms of generations its rules look back (+1)
        # Without any group pattern every group gets the same rules (rules_for would build and cache
        # the same dict 50,000 times in a cold cycle).
        self._shared: dict[str, dict[str, Any]] | None = None
        if not (config.allow or config.deny or config.rule_allow or config.rule_deny or config.overrides):
            self._shared = config.rules_for("")

    def _rules(self, group: str) -> dict[str, dict[str, Any]]:
        return self._shared if self._shared is not None else self.config.rules_for(group)

    def _lookback_ms(self, group: str, rules: dict[str, dict[str, Any]]) -> int:
        key = "" if self._shared is not None else group
        ms = self._lookback.get(key)
        if ms is None:
            ms = lookback_ms(rules)  # as evaluate_group
            if len(self._lookback) > 200_000:  # bounded like AlertConfig's own per-group cache
                self._lookback.clear()
            self._lookback[key] = ms
        return ms

    def evaluate(self, group: str, facts: Facts, head: bytes | str, now_ms: int) -> Evaluation | None:
        """The evaluation, or None when the group must be judged from its document: a rule that reads
        lag rows has to run and the group has rows it could count (or a rule this code does not
        know), or the head is unreadable."""
        ev = Evaluation(group=group, now_ms=now_ms)
        rules = self._rules(group)
        if not rules:
            return ev
        since = now_ms - self._lookback_ms(group, rules)
        silent: set[str] = set()
        s = self.silence
        if s.lag(facts):
            silent.update(("lag", "lag_retention"))
        if s.empty(facts, now_ms):
            silent.add("group_empty")
        if s.stuck(facts, now_ms):
            silent.add("rebalance_stuck")
        if s.not_ready(facts, now_ms):
            silent.add("streams_not_ready")
        if s.converging(facts):
            silent.add("member_not_converging")  # else read from the document
        if s.generations(facts, since):
            silent.update(_GENERATION_RULES)
        todo = [(name, p) for name, p in rules.items() if name not in silent]
        if not todo:
            return ev
        if any(name not in _HEAD_RULES and (facts.lagging or name not in _ROW_RULES) for name, _ in todo):
            return None
        decoded = decode_head(head)
        if decoded is None:
            return None
        view = PackedView(group, decoded, since)
        for name, params in todo:
            result = RULES[name](view, now_ms, params)
            if result.finding is not None:
                ev.findings.append(result.finding)
            if result.recheck_at is not None:
                ev.recheck_at = (
                    result.recheck_at if ev.recheck_at is None else min(ev.recheck_at, result.recheck_at)
                )
        return ev

    # ---- the statuses (coordinator_model/statuses.py) ----------------------------------------------
    def _status_todo(
        self, group: str, facts: Facts, now_ms: int, statuses: tuple[str, ...]
    ) -> tuple[dict[str, dict[str, Any]], int, list[str]]:
        """The group's rules, the view's cut, and the statuses whose rule may return a finding (the
        others `Silence` proves empty, or their rule is disabled for the group)."""
        rules = self._rules(group)
        since = now_ms - self._lookback_ms(group, rules) if rules else now_ms
        todo = []
        for status in statuses:
            rule = STATUS_RULES[status]
            if rule not in rules:
                continue
            if rule in _GENERATION_RULES and self.silence.generations(facts, since):
                continue
            if rule == "lag" and self.silence.lag(facts):
                continue
            todo.append(status)
        return rules, since, todo

    def needs_head(self, group: str, facts: Facts, now_ms: int, statuses: tuple[str, ...] = STATUSES) -> bool:
        """Whether finding the group's statuses at now_ms reads its rule head (a status rule that reads
        generations may return a finding)."""
        todo = self._status_todo(group, facts, now_ms, statuses)[2]
        return any(STATUS_RULES[s] in _HEAD_RULES for s in todo)

    def statuses(
        self,
        group: str,
        facts: Facts,
        head: bytes | str | None,
        now_ms: int,
        statuses: tuple[str, ...] = STATUSES,
    ) -> dict[str, Finding] | None:
        """status -> finding at now_ms, from the summaries: the same rules on the same view as
        `evaluate` (the lag rule on the facts' lag rows, which decide it as the document's rows do,
        `_lag_frontier`). None when the group must be judged from its document: its head is needed
        and unreadable (or not given), or its lag rows were not kept."""
        rules, since, todo = self._status_todo(group, facts, now_ms, statuses)
        if not todo:
            return {}
        lags: list[PartitionLag] = []
        if "lagging" in todo:
            rows = lag_rows(facts) if self.usable else None
            if rows is None:
                return None
            lags = rows
        decoded: list[Any] | None = _NO_HISTORY
        if any(STATUS_RULES[s] in _HEAD_RULES for s in todo):
            decoded = decode_head(head)
            if decoded is None:
                return None
        return judge(PackedView(group, decoded, since, lags), now_ms, rules, todo)
