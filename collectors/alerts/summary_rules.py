"""The alert rules run over the summaries the sink stores beside each document
(collectors/storage/summaries.py says what they hold and why): a view of a group built from its rule
head instead of its document, the rules its facts prove silent, and the evaluator that runs the rest
as coordinator_model.alert_rules.evaluate_group would on the document."""

from __future__ import annotations

from typing import Any

from collectors.storage.summaries import RULES_VERSION, Facts, decode_head, lag_rows
from coordinator_model.alert_rules import RULES, AlertConfig, Evaluation, Finding, lookback_ms
from coordinator_model.alert_rules.group_state_rules import NOT_READY
from coordinator_model.document import PartitionLag
from coordinator_model.document.view import (
    REBALANCING_STATES,
    Generation,
    GroupView,
    MemberRef,
    StateSpan,
)
from coordinator_model.statuses import STATUS_RULES, STATUSES, judge


class PackedView(GroupView):
    """A GroupView whose generations and timeline come from the rule head instead of being parsed
    from a document, and which has no lag rows: the evaluator builds it only for a group with no
    row a rule could count, or when no rule that reads rows is left to run. The rules
    (coordinator_model/alert_rules/) read it unchanged. Each part is decoded the first time a
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
            # in that order is what view.generations(doc, since) returns (a stable sort of a
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
    (coordinator_model/alert_rules/), bounded over every parameter set a group can get."""

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
