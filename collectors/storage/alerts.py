"""Alerts in Redis: the active set, the history with evidence, and the evaluator's bookkeeping.

Keys (prefix `gs` by default, like collectors/storage/redis_store.py; documented in docs/alerts.md).
Each Kafka cluster has its own store under its own prefix (`gs@NAME`, collectors/storage/clusters.py),
so two clusters' alerts on same-named groups never share a key; every alert carries its `cluster`:
- `gs:alerts:active`       hash  `RULE|GROUP` -> alert JSON, one per (group, rule) while it fires
- `gs:alerts:log`          hash  alert id -> alert JSON (firing or resolved), the history's bodies
- `gs:alerts:history`      zset  alert id scored by `since`, newest last
- `gs:alerts:group:{G}`    zset  the group's alert ids scored by `since`
- `gs:alerts:seen`         hash  group -> the collector's refresh marker the evaluator last judged
- `gs:alerts:recheck`      zset  group -> earliest time its findings may change with no new data
- `gs:alerts:sig`          hash  group -> signature of the state/generation it was last judged on
- `gs:alerts:cycle`        string JSON of the last evaluation cycle (time, counts, duration)
- `gs:alerts:lock`         string held while a cycle runs, so two beats never evaluate at once
- `gs:alerts:trimmed`      string set for ten minutes after the history was trimmed

An alert's id is `GROUP|RULE|SINCE` (`CLUSTER/GROUP|RULE|SINCE` outside the cluster `default`, whose
ids stay as they were before clusters): writing the same transition twice rewrites the same fields, so
a cycle run twice (a Celery retry, a cron overlap) adds nothing, and an id names one alert across
clusters (a receiver that deduplicates on it never merges two clusters' alerts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from collectors.config import DEFAULT_CLUSTER


def cluster_of_prefix(prefix: str) -> str:
    """The cluster whose layout lives under `prefix` (collectors/storage/clusters.py: `gs@NAME` for
    NAME, the plain prefix for `default`)."""
    _, at, name = prefix.partition("@")
    return name if at and name else DEFAULT_CLUSTER


def alert_id(cluster: str, group: str, rule: str, since: int) -> str:
    base = f"{group}|{rule}|{since}"
    return base if cluster == DEFAULT_CLUSTER else f"{cluster}/{base}"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, default=str)


@dataclass
class Alert:
    group: str
    rule: str
    state: str  # "firing" | "resolved"
    severity: str
    summary: str
    since: int
    until: int | None = None
    updated: int = 0
    evidence: dict[str, Any] = field(default_factory=dict)
    # None: the cluster of the store it is written to (AlertStore.queue_* fill it in).
    cluster: str | None = None

    @property
    def id(self) -> str:
        return alert_id(self.cluster or DEFAULT_CLUSTER, self.group, self.rule, self.since)

    def to_json(self) -> dict[str, Any]:
        # Shallow on purpose: dataclasses.asdict deep-copies the evidence, for nothing.
        return {
            "id": self.id,
            "cluster": self.cluster or DEFAULT_CLUSTER,
            "group": self.group,
            "rule": self.rule,
            "state": self.state,
            "severity": self.severity,
            "summary": self.summary,
            "since": self.since,
            "until": self.until,
            "updated": self.updated,
            "evidence": self.evidence,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], cluster: str = DEFAULT_CLUSTER) -> Alert:
        """`cluster`: the store's (an alert written before alerts carried theirs has none)."""
        return cls(
            cluster=cluster,
            group=d["group"],
            rule=d["rule"],
            state=d.get("state", "firing"),
            severity=d.get("severity", "warning"),
            summary=d.get("summary", ""),
            since=int(d["since"]),
            until=d.get("until"),
            updated=int(d.get("updated") or 0),
            evidence=d.get("evidence") or {},
        )


class AlertStore:
    """Read and write alerts. The dashboard uses `active()` and `history()` only."""

    def __init__(self, client: Any, prefix: str = "gs", cluster: str | None = None) -> None:
        self.r = client
        self.p = prefix
        # The cluster these alerts belong to: from the prefix unless told (a test's own prefix).
        self.cluster = cluster or cluster_of_prefix(prefix)

    @classmethod
    def from_url(cls, url: str, prefix: str = "gs", cluster: str | None = None) -> AlertStore:
        import redis

        return cls(redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5), prefix, cluster)

    def _load(self, raw: bytes | str) -> dict[str, Any]:
        a = json.loads(raw)
        # The store's cluster, whatever the alert says: the keys it is under are the authority, and
        # alerts written before alerts carried their cluster have none.
        a["cluster"] = self.cluster
        return a

    # ---- key names (the module's docstring says what each holds) ------------------------------------
    def key_of(self, *parts: str) -> str:
        return ":".join((self.p, "alerts", *parts))

    def group_key(self, group: str) -> str:
        return f"{self.p}:alerts:group:{{{group}}}"

    @property
    def active_key(self) -> str:
        return self.key_of("active")

    @property
    def log_key(self) -> str:
        return self.key_of("log")

    @property
    def history_key(self) -> str:
        return self.key_of("history")

    @property
    def seen_key(self) -> str:
        return self.key_of("seen")

    @property
    def recheck_key(self) -> str:
        return self.key_of("recheck")

    @property
    def signatures_key(self) -> str:
        return self.key_of("sig")

    @property
    def cycle_key(self) -> str:
        return self.key_of("cycle")

    @property
    def lock_key(self) -> str:
        return self.key_of("lock")

    @property
    def trimmed_key(self) -> str:
        return self.key_of("trimmed")

    @staticmethod
    def field(group: str, rule: str) -> str:
        return f"{rule}|{group}"

    # ---- read API (dashboard, CLI, metrics) -------------------------------------------------------
    def active(
        self, group: str | None = None, rule: str | None = None, severity: str | None = None
    ) -> list[dict[str, Any]]:
        """Firing alerts, newest first, optionally for one group and/or rule."""
        if group is not None and rule is not None:
            raw = self.r.hget(self.active_key, self.field(group, rule))
            values = [raw] if raw else []
        else:
            values = list(self.r.hvals(self.active_key))
        out = [self._load(v) for v in values]
        out = [
            a
            for a in out
            if (group is None or a["group"] == group)
            and (rule is None or a["rule"] == rule)
            and (severity is None or a.get("severity") == severity)
        ]
        out.sort(key=lambda a: (-int(a["since"]), a["group"], a["rule"]))
        return out

    def history(
        self,
        group: str | None = None,
        rule: str | None = None,
        state: str | None = None,
        since: int | None = None,
        until: int | None = None,
        limit: int = 500,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Every alert (firing and resolved) with its evidence, newest first; filters optional.

        `since`/`until` bound the alert's start time. With a group, reads only that group's index."""
        key = self.group_key(group) if group is not None else self.history_key
        lo = "-inf" if since is None else since
        hi = "+inf" if until is None else until
        out: list[dict[str, Any]] = []
        skipped = 0
        # Page through the index newest first; filters by rule/state are applied as we go.
        start, chunk = 0, max(200, limit)
        while len(out) < limit:
            ids = self.r.zrevrangebyscore(key, hi, lo, start=start, num=chunk)
            if not ids:
                break
            start += len(ids)
            for raw in self.r.hmget(self.log_key, ids):
                if not raw:
                    continue
                a = self._load(raw)
                if (rule is not None and a["rule"] != rule) or (state is not None and a["state"] != state):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                out.append(a)
                if len(out) >= limit:
                    break
        return out

    def counts(self) -> dict[str, Any]:
        """Active alerts by rule and severity, and the history size: for the fleet page and metrics."""
        by_rule: dict[str, int] = {}
        by_severity: dict[str, int] = {}
        for a in self.active():
            by_rule[a["rule"]] = by_rule.get(a["rule"], 0) + 1
            by_severity[a["severity"]] = by_severity.get(a["severity"], 0) + 1
        return {
            "active": sum(by_rule.values()),
            "by_rule": by_rule,
            "by_severity": by_severity,
            "history": self.r.zcard(self.history_key),
        }

    def last_cycle(self) -> dict[str, Any] | None:
        raw = self.r.get(self.cycle_key)
        return json.loads(raw) if raw else None

    # ---- write side (the evaluator) -----------------------------------------------------------------
    def active_by_group(self) -> dict[str, dict[str, Alert]]:
        out: dict[str, dict[str, Alert]] = {}
        for raw in self.r.hvals(self.active_key):
            a = Alert.from_json(json.loads(raw), self.cluster)
            out.setdefault(a.group, {})[a.rule] = a
        return out

    def queue_fire(self, pipe: Any, alert: Alert) -> None:
        if alert.cluster is None:
            alert.cluster = self.cluster
        body = _dumps(alert.to_json())
        pipe.hset(self.active_key, self.field(alert.group, alert.rule), body)
        pipe.hset(self.log_key, alert.id, body)
        pipe.zadd(self.history_key, {alert.id: alert.since})
        pipe.zadd(self.group_key(alert.group), {alert.id: alert.since})

    def queue_update(self, pipe: Any, alert: Alert) -> None:
        self.queue_fire(pipe, alert)  # same fields, fresher evidence

    def queue_resolve(self, pipe: Any, alert: Alert) -> None:
        if alert.cluster is None:
            alert.cluster = self.cluster
        pipe.hdel(self.active_key, self.field(alert.group, alert.rule))
        pipe.hset(self.log_key, alert.id, _dumps(alert.to_json()))
        pipe.zadd(self.history_key, {alert.id: alert.since})
        pipe.zadd(self.group_key(alert.group), {alert.id: alert.since})

    def seen(self) -> dict[str, str]:
        return {k.decode(): v.decode() for k, v in self.r.hgetall(self.seen_key).items()}

    def due(self, now_ms: int) -> list[str]:
        return [g.decode() for g in self.r.zrangebyscore(self.recheck_key, "-inf", now_ms)]

    def acquire_lock(self, ttl_ms: int, token: str) -> bool:
        return bool(self.r.set(self.lock_key, token, nx=True, px=ttl_ms))

    def release_lock(self, token: str) -> None:
        # Only the holder releases: compare-and-delete on the server.
        self.r.eval(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
            1,
            self.lock_key,
            token,
        )

    def trim(self, older_than_ms: int) -> int:
        """Drop resolved alerts that ended before `older_than_ms` (the history retention)."""
        removed = 0
        ids = self.r.zrangebyscore(self.history_key, "-inf", older_than_ms)
        for i in range(0, len(ids), 1000):
            chunk = ids[i : i + 1000]
            pipe = self.r.pipeline(transaction=False)
            for raw_id, raw in zip(chunk, self.r.hmget(self.log_key, chunk), strict=True):
                a = json.loads(raw) if raw else None
                if a is not None and (a["state"] == "firing" or (a.get("until") or 0) >= older_than_ms):
                    continue
                pipe.hdel(self.log_key, raw_id)
                pipe.zrem(self.history_key, raw_id)
                if a is not None:
                    pipe.zrem(self.group_key(a["group"]), raw_id)
                removed += 1
            pipe.execute()
        return removed

    def clear(self) -> None:
        """Forget the evaluator's bookkeeping (not the alerts): the next cycle re-judges every group."""
        self.r.delete(self.seen_key, self.recheck_key, self.signatures_key)
