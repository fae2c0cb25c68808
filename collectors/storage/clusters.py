"""Several Kafka clusters in one Redis: each cluster's keys under its own prefix, and a registry of
the clusters a Redis database holds (docs/redis-schema.md, "Clusters").

A cluster's whole layout (documents, fleet, indexes, summaries, topics, alerts, collector heartbeat,
source statuses) is the single-cluster layout under the prefix `gs@NAME`, so every key carries its
cluster and a group is `(cluster, group)` everywhere, with nothing in the per-cluster code changed:
it is a `RedisStore(client, prefix=cluster_prefix(NAME))`. Group and topic names stay the Redis
Cluster hash tags (`gs@prod:group:{G}:doc`), so one group's keys still live on one slot.

The cluster `default` keeps the plain prefix `gs`: data written before clusters existed is read as
that cluster as it is, with no migration to run or to lose.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collectors.config import CLUSTER_NAME, DEFAULT_CLUSTER, check_cluster_name

if TYPE_CHECKING:
    from collectors.storage.redis_store import RedisStore

BASE_PREFIX = "gs"

log = logging.getLogger(__name__)


def cluster_prefix(name: str, base: str = BASE_PREFIX) -> str:
    """The Redis key prefix of a cluster's layout."""
    return base if name == DEFAULT_CLUSTER else f"{base}@{check_cluster_name(name)}"


@dataclass(frozen=True)
class ClusterInfo:
    """A cluster this Redis holds or is configured to hold."""

    name: str
    prefix: str
    bootstrap_servers: str | None = None  # as its collector last registered it
    registered_ms: int | None = None  # when a collector last registered it
    configured: bool = False  # named in this process's settings

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class ClusterRegistry:
    """`gs:clusters`: cluster name -> JSON `{"bootstrap_servers", "registered_ms"}`, written by each
    collector when it starts, so the dashboard, the alerts and the CLI find every cluster that has
    data, configured in their own settings or not."""

    def __init__(self, client: Any, base: str = BASE_PREFIX) -> None:
        self.r = client
        self.base = base
        self.key = f"{base}:clusters"

    def register(self, name: str, bootstrap_servers: str | None, now_ms: int | None = None) -> None:
        """Record that a collector writes `name`'s data (called at every collector start)."""
        row = {
            "bootstrap_servers": bootstrap_servers,
            "registered_ms": int(time.time() * 1000) if now_ms is None else now_ms,
        }
        self.r.hset(self.key, check_cluster_name(name), json.dumps(row, sort_keys=True))

    def clusters(self, configured: Iterable[str] = ()) -> list[ClusterInfo]:
        """Every cluster with data here or configured: `default` first, then by name. `default` is
        there also when only data of the layout before clusters exists (no registry entry)."""
        # no MULTI: Redis refuses every command queued in one while it is over its maxmemory, and
        # this read comes first in every CLI command and dashboard page, which must still show a
        # full Redis (RedisStore.memory_full) rather than fail as if it were unreachable (issue 32)
        p = self.r.pipeline(transaction=False)
        p.hgetall(self.key)
        p.exists(f"{self.base}:fleet", f"{self.base}:collector:heartbeat")
        raw, legacy = p.execute()
        conf = set(configured)
        found: dict[str, ClusterInfo] = {}
        for k, v in raw.items():
            name = k.decode(errors="replace") if isinstance(k, bytes) else str(k)
            if not CLUSTER_NAME.fullmatch(name):
                # written by hand or by something else: one bad field must not hide the others
                log.warning("cluster registry %s: %r is not a cluster name; left out", self.key, name)
                continue
            try:
                row = json.loads(v)
            except ValueError:
                row = {}
            if not isinstance(row, dict):
                row = {}
            found[name] = ClusterInfo(
                name,
                cluster_prefix(name, self.base),
                row.get("bootstrap_servers"),
                row.get("registered_ms"),
                name in conf,
            )
        for name in conf:
            found.setdefault(name, ClusterInfo(name, cluster_prefix(name, self.base), configured=True))
        if legacy and DEFAULT_CLUSTER not in found:
            found[DEFAULT_CLUSTER] = ClusterInfo(DEFAULT_CLUSTER, self.base)
        return sorted(found.values(), key=lambda c: (c.name != DEFAULT_CLUSTER, c.name))

    def names(self, configured: Iterable[str] = ()) -> list[str]:
        return [c.name for c in self.clusters(configured)]


def list_groups_across(
    stores: Mapping[str, RedisStore],
    sort_by: str = "name",
    descending: bool = False,
    state: str | list[str] | None = None,
    name_contains: str | None = None,
    type_: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> tuple[int, list[dict[str, Any]]]:
    """`RedisStore.list_groups` over several clusters: (total matching, one page of fleet rows, each
    with its `cluster`), in the order one index of all of them would give (merge_pages)."""
    from collectors.storage.fleet_rows import sort_scores

    parts = {
        c: store.list_groups(sort_by, descending, state, name_contains, type_, 0, offset + limit)
        for c, store in stores.items()
    }
    return merge_pages(parts, lambda r: (sort_scores(r)[sort_by], str(r["name"])), descending, offset, limit)


def merge_pages(
    parts: Mapping[str, tuple[int, list[dict[str, Any]]]],
    key: Callable[[dict[str, Any]], tuple[float, str]],
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[int, list[dict[str, Any]]]:
    """One page [offset, offset + limit) of several clusters' sorted lists, each cluster's
    (total, its first offset + limit rows in its index order): merged by `key` (score, name), ties
    between clusters by cluster name; each row gets its `cluster`. The total is the sum of totals.

    What deep paging costs: no cluster can skip rows another cluster may sort before, so a block at
    offset N reads N + limit rows from EVERY cluster (one ZRANGE and an HMGET of N + limit rows each)
    and merges them here: the first pages cost what one cluster's do, the last page of 2 x 50,000
    groups reads all 100,000 rows. A cluster chosen in the URL or the cluster filter reads only it,
    at the single-cluster cost."""
    rank = {c: i for i, c in enumerate(sorted(parts))}

    def tagged(c: str, rows: list[dict[str, Any]]) -> Iterator[tuple[tuple[float, str, int], dict[str, Any]]]:
        for r in rows:
            score, name = key(r)
            # descending: heapq.merge(reverse=True) reverses the whole key; negate the rank so
            # clusters still tie in name order
            yield (score, name, -rank[c] if descending else rank[c]), {**r, "cluster": c}

    streams = [tagged(c, rows) for c, (_total, rows) in parts.items()]
    merged = heapq.merge(*streams, key=lambda t: t[0], reverse=descending)
    page = [row for _k, row in itertools.islice(merged, offset, offset + limit)]
    return sum(total for total, _rows in parts.values()), page
