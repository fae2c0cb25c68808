"""The topic index: for every topic a group commits to or is assigned, which groups read it and how
far behind each is, kept by the sink beside the group documents (docs/redis-schema.md, "Topics").

A group's document already says everything per partition (its `lag.partitions` and its members'
assignments); this module cuts it by topic. Per topic the sink keeps one small row per group (what
the topic's aggregate and the topic page's table need), the group's partition rows (the heatmap), and
the topic's aggregate row with one sorted set per sort key, so the topics page pages 10,000 topics like
the fleet page pages 50,000 groups: a ZRANGE and an HMGET. A topic's lag history is read from its
groups' own lag history (per partition, written by the sink), never stored twice.

The aggregate is recomputed on the server (AGGREGATE_SCRIPT) after a group's rows are written, from
the topic's group rows: one Lua call reads them all and writes the aggregate and its index entries at
once, so two sink tasks writing groups of one topic cannot leave an aggregate that misses either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from collectors.storage import json_text, sorted_index
from coordinator_model.document import GroupDocument

TOPIC_SORT_KEYS = ("name", "partitions", "groups", "lag", "lag_seconds", "rebalancing")
# A group in one of these states is rebalancing now (classic, then KIP-848 states).
REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})
# The most points of one group's line on the topic page's lag history (evenly picked, the newest kept):
# a busy group writes a lag point every micro-batch, and the page draws several groups.
HISTORY_POINTS = 240


@dataclass
class TopicGroup:
    """One group's part in one topic: a row of the topic page's table."""

    group: str
    type: str | None
    state: str
    lag: int  # offsets, over the topic's partitions the group has a lag for
    lag_seconds: float  # worst partition
    partitions: int  # partitions of the topic the group commits to or is assigned
    topic_partitions: int  # highest partition number seen + 1 (the topic's size as far as known)
    end_offsets: int  # sum of the log-end offsets known for those partitions
    members: list[str] = field(default_factory=list)  # members owning the topic's partitions
    clients: list[str] = field(default_factory=list)  # their client ids, in the same order

    @property
    def rebalancing(self) -> bool:
        return self.state in REBALANCING

    def to_json(self) -> str:
        return json_text.dumps(
            {**self.__dict__, "rebalancing": self.rebalancing}, finite=json_text.finite((self.lag_seconds,))
        )


def owners(row: Mapping[str, Any]) -> list[str]:
    """The members owning a topic's partitions in a group's row (TopicGroup JSON), by client id where
    known, else by member id."""
    return [c or m for m, c in zip(row.get("members") or [], row.get("clients") or [], strict=False)]


# A partition row of the heatmap: [partition, committed, end offset, lag, lag seconds, member id].
PartitionRow = list[Any]


@dataclass
class TopicCut:
    """What a group document says about one topic."""

    row: TopicGroup
    partitions: list[PartitionRow]

    def partitions_json(self) -> str:
        # a row's fifth value is its lag in seconds (PartitionRow)
        return json_text.dumps(self.partitions, finite=json_text.finite(r[4] for r in self.partitions))


def _int(x: Any) -> int:
    try:
        return int(x) if x is not None else 0
    except (TypeError, ValueError):
        return 0


def _float(x: Any) -> float:
    try:
        return float(x) if x is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def cut_by_topic(doc: GroupDocument) -> dict[str, TopicCut]:
    """A group document cut by topic: every topic in its lag rows, committed offsets or members'
    assignments."""
    group = doc.group
    state = doc.state or "Unknown"
    owner = doc.owners()
    clients = {m.member_id: m.client_id or "" for m in doc.members}
    rows: dict[tuple[str, int], PartitionRow] = {}
    for p in doc.lag.partitions:
        tp = (p.topic, p.partition)
        rows[tp] = [
            p.partition,
            p.committed,
            p.end_offset,
            p.lag,
            p.lag_seconds,
            p.member_id or owner.get(tp),
        ]
    for o in doc.offsets:
        tp = (o.topic, o.partition)
        rows.setdefault(tp, [o.partition, o.offset, None, None, None, owner.get(tp)])
    for tp, mid in owner.items():
        rows.setdefault(tp, [tp[1], None, None, None, None, mid])
    by_topic: dict[str, list[PartitionRow]] = {}
    for (topic, _), row in sorted(rows.items()):
        by_topic.setdefault(topic, []).append(row)
    out: dict[str, TopicCut] = {}
    for topic, parts in by_topic.items():
        members = sorted({r[5] for r in parts if r[5]})
        out[topic] = TopicCut(
            TopicGroup(
                group=group,
                type=doc.type,
                state=state,
                lag=sum(_int(r[3]) for r in parts),
                lag_seconds=max((_float(r[4]) for r in parts), default=0.0),
                partitions=len(parts),
                topic_partitions=max(r[0] for r in parts) + 1,
                end_offsets=sum(_int(r[2]) for r in parts),
                members=members,
                clients=[clients.get(m, "") for m in members],
            ),
            parts,
        )
    return out


# Recompute one topic's aggregate row and index entries from its group rows, or remove the topic (and
# its partition rows) when no group is left. KEYS: the topic's group rows, the topics hash, the topic's
# partition rows, then one index per TOPIC_SORT_KEYS (in that order); ARGV[1]: the topic. Numbers are
# formatted with %.0f: cjson would write a large end offset in exponent notation.
AGGREGATE_SCRIPT = """
local topic = ARGV[1]
local vals = redis.call('HVALS', KEYS[1])
if #vals == 0 then
  redis.call('HDEL', KEYS[2], topic)
  redis.call('DEL', KEYS[3])
  for i = 4, #KEYS do redis.call('ZREM', KEYS[i], topic) end
  return 0
end
local parts, ends, lag, secs, reb = 0, 0, 0, 0, 0
for _, v in ipairs(vals) do
  local ok, r = pcall(cjson.decode, v)
  if ok then
    parts = math.max(parts, tonumber(r.topic_partitions) or 0)
    ends = math.max(ends, tonumber(r.end_offsets) or 0)
    lag = math.max(lag, tonumber(r.lag) or 0)
    secs = math.max(secs, tonumber(r.lag_seconds) or 0)
    if r.rebalancing then reb = reb + 1 end
  end
end
local row = string.format(
  '{"end_offsets":%.0f,"groups":%d,"lag":%.0f,"lag_seconds":%s,"name":%s,"partitions":%d,"rebalancing":%d}',
  ends, #vals, lag, string.format('%.3f', secs), cjson.encode(topic), parts, reb)
redis.call('HSET', KEYS[2], topic, row)
local scores = {0, parts, #vals, lag, secs, reb}
for i = 4, #KEYS do redis.call('ZADD', KEYS[i], scores[i - 3], topic) end
return #vals
"""


@dataclass(frozen=True)
class TopicRow:
    """One row of the topics page."""

    name: str
    partitions: int
    end_offsets: int
    groups: int
    lag: int  # the worst group's lag on this topic, in offsets
    lag_seconds: float  # the worst partition's lag in seconds, over every group
    rebalancing: int  # groups reading the topic that are rebalancing now

    @classmethod
    def from_json(cls, raw: bytes | str) -> TopicRow:
        d = json.loads(raw)
        return cls(
            name=str(d["name"]),
            partitions=_int(d.get("partitions")),
            end_offsets=_int(d.get("end_offsets")),
            groups=_int(d.get("groups")),
            lag=_int(d.get("lag")),
            lag_seconds=_float(d.get("lag_seconds")),
            rebalancing=_int(d.get("rebalancing")),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TopicView:
    """What the topic page shows: the aggregate, each group's row and its partition rows."""

    row: TopicRow
    groups: list[dict[str, Any]]  # TopicGroup as JSON, worst lag first
    partitions: dict[str, list[PartitionRow]]  # group -> its partition rows

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.row.to_json(), "groups": self.groups, "partitions": self.partitions}


def topic_point(point: Mapping[str, Any], topic: str) -> tuple[int, float] | None:
    """A group lag point (RedisStore.write_lag_points) on one topic: (lag summed over the topic's
    partitions, worst seconds), or None when the point has none of them. Partition keys are
    "topic:partition" (a topic name has no ':')."""
    lag, secs, seen = 0, 0.0, False
    for key, v in (point.get("partitions") or {}).items():
        if key.rsplit(":", 1)[0] != topic:
            continue
        seen = True
        if isinstance(v, Mapping):
            lag += _int(v.get("lag"))
            secs = max(secs, _float(v.get("lag_seconds")))
        else:  # older points kept the lag alone
            lag += _int(v)
    return (lag, secs) if seen else None


class TopicIndex:
    """The topic keys of one RedisStore (its client and prefix): written by the sink through
    `queue_group` and `flush`, read by the dashboard and the CLI."""

    def __init__(self, client: Any, prefix: str, filter_script: Any, group_key: Any) -> None:
        self.r = client
        self.p = prefix
        self.group_key = group_key  # RedisStore.group_key: a group's own keys (its lag history)
        self._aggregate = client.register_script(AGGREGATE_SCRIPT)
        self._filter = filter_script  # the fleet's index walk (lua_scripts.FILTER_SCRIPT)
        self.touched: set[str] = set()  # topics whose aggregate is due (flush)

    # ---- key names (docs/redis-schema.md, "Topics") ------------------------------------------------
    def tk(self, topic: str, what: str) -> str:
        return f"{self.p}:topic:{{{topic}}}:{what}"

    def rows_key(self) -> str:
        return f"{self.p}:topics"

    def index_key(self, sort: str) -> str:
        return f"{self.p}:tidx:{sort}"

    def of_groups_key(self) -> str:
        """`G` -> JSON list of the topics the group's rows are in (to remove them when it leaves one)."""
        return f"{self.p}:fleet:topics"

    # ---- write side --------------------------------------------------------------------------------
    def queue_group(self, p: Any, name: str, doc: GroupDocument, old: list[str]) -> str:
        """Queue a group's rows in each of its topics and its leaving the topics it no longer reads;
        the JSON list of its topics now (for `of_groups_key`). The aggregates follow at `flush`."""
        cuts = cut_by_topic(doc)
        for topic, cut in cuts.items():
            p.hset(self.tk(topic, "groups"), name, cut.row.to_json())
            p.hset(self.tk(topic, "parts"), name, cut.partitions_json())
        for topic in set(old) - set(cuts):
            p.hdel(self.tk(topic, "groups"), name)
            p.hdel(self.tk(topic, "parts"), name)
        self.touched |= set(cuts) | set(old)
        return json_text.dumps(sorted(cuts))

    def forget_group(self, p: Any, name: str, old: list[str]) -> None:
        for topic in old:
            p.hdel(self.tk(topic, "groups"), name)
            p.hdel(self.tk(topic, "parts"), name)
        p.hdel(self.of_groups_key(), name)
        self.touched |= set(old)

    def flush(self, p: Any = None) -> int:
        """Recompute the aggregate of every topic touched since the last flush (after the rows' writes:
        queued on `p` after them, or run now). Returns how many."""
        topics, self.touched = sorted(self.touched), set()
        client = p if p is not None else self.r.pipeline(transaction=False)
        for t in topics:
            self._aggregate(
                keys=[
                    self.tk(t, "groups"),
                    self.rows_key(),
                    self.tk(t, "parts"),
                    *(self.index_key(s) for s in TOPIC_SORT_KEYS),
                ],
                args=[t],
                client=client,
            )
        if p is None and topics:
            client.execute()
        return len(topics)

    # ---- read side ---------------------------------------------------------------------------------
    def list_topics(
        self,
        sort_by: str = "name",
        descending: bool = False,
        name_contains: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> tuple[int, list[TopicRow]]:
        """(total matching, one page of topic rows). Ties sort by name."""
        if sort_by not in TOPIC_SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(TOPIC_SORT_KEYS)}, not {sort_by!r}")
        offset, limit = max(0, int(offset)), max(0, int(limit))
        index = self.index_key(sort_by)
        if not name_contains:
            total, names = sorted_index.page(self.r, index, offset, limit, descending)
        else:
            total, names = self._filter(
                keys=[index, self.rows_key(), self.rows_key()],
                args=["1" if descending else "0", name_contains.lower(), "", offset, limit],
            )
            total = int(total)
        if not names:
            return total, []
        return total, [TopicRow.from_json(raw) for raw in self.r.hmget(self.rows_key(), names) if raw]

    def counts(self) -> dict[str, int]:
        """Topics, topics with a rebalancing group, topics with any lag."""
        p = self.r.pipeline(transaction=False)
        p.zcard(self.index_key("name"))
        p.zcount(self.index_key("rebalancing"), "(0", "+inf")
        p.zcount(self.index_key("lag"), "(0", "+inf")
        total, rebalancing, lagging = p.execute()
        return {"total": int(total), "rebalancing": int(rebalancing), "lagging": int(lagging)}

    def get_topic(self, name: str) -> TopicView | None:
        """The topic's aggregate, its groups (worst lag in seconds first, then offsets, then name) and
        each group's partition rows; None when no group reads it."""
        p = self.r.pipeline(transaction=False)
        p.hget(self.rows_key(), name)
        p.hgetall(self.tk(name, "groups"))
        p.hgetall(self.tk(name, "parts"))
        raw, groups, parts = p.execute()
        if not raw or not groups:
            return None
        rows = [json.loads(v) for v in groups.values()]
        rows.sort(key=lambda r: (-_float(r.get("lag_seconds")), -_int(r.get("lag")), str(r.get("group"))))
        return TopicView(
            TopicRow.from_json(raw),
            rows,
            {k.decode(): json.loads(v) for k, v in parts.items()},
        )

    def lag_history(
        self, topic: str, groups: list[str], span_ms: int, max_points: int = HISTORY_POINTS
    ) -> dict[str, list[tuple[int, int, float]]]:
        """Per group, its lag on the topic over the last `span_ms` of the history known (ending at the
        newest point of any of these groups, so a replayed capture shows like a live cluster): (time,
        offsets summed over the topic's partitions, worst seconds), oldest first, at most `max_points`
        per group."""
        if not groups:
            return {}
        p = self.r.pipeline(transaction=False)
        for g in groups:
            p.zrange(self.group_key(g, "lag:idx"), -1, -1, withscores=True)
        newest = [int(r[0][1]) for r in p.execute() if r]
        if not newest:
            return {}
        since = max(newest) - int(span_ms)
        for g in groups:
            p.zrangebyscore(self.group_key(g, "lag:idx"), since, "+inf")
        picked: list[list[bytes]] = []
        for ids in p.execute():
            if len(ids) > max_points:  # evenly spread, the newest always in
                step = len(ids) / max_points
                ids = [ids[int(len(ids) - 1 - i * step)] for i in range(max_points)][::-1]
            picked.append(ids)
        for g, ids in zip(groups, picked, strict=True):
            p.hmget(self.group_key(g, "lag"), ids or ["-"])
        out: dict[str, list[tuple[int, int, float]]] = {}
        for g, vals in zip(groups, p.execute(), strict=True):
            for v in vals:
                if not v:
                    continue
                point = json.loads(v)
                on = topic_point(point, topic)
                if on is not None:
                    out.setdefault(g, []).append((int(point["ts"]), on[0], on[1]))
        return out
