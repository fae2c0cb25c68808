"""The names of the keys RedisStore keeps (docs/redis-schema.md documents each): every reader and
writer asks these for a key instead of spelling it."""

from __future__ import annotations

from typing import Any

from collectors.storage.metric_lines import GROUP_FAMILIES, TASK_FAMILIES

# The summary hashes (docs/redis-schema.md, "Summaries"), each `G` -> the group's summary, in the
# order the sink writes them: a head before the facts that carry its key (a write cut short leaves
# an old key, so the head is rebuilt next time, never a new key over an old head).
SUMMARY_KEYS = ("rules", "facts", *(f"metrics:{family}" for family in GROUP_FAMILIES))
# every group has those; a streams group has its tasks' too, written and removed with them
ALL_SUMMARY_KEYS = (*SUMMARY_KEYS, *(f"metrics:{family}" for family in TASK_FAMILIES))


class StoreKeys:
    """Key names under the store's prefix `p`; the base of RedisStore's parts (group_writes.py,
    group_reads.py, upkeep.py, collector_status.py), whose state RedisStore.__init__ sets."""

    r: Any
    p: str

    def key_of(self, *parts: str) -> str:
        return ":".join((self.p, *parts))

    def group_key(self, group: str, what: str) -> str:
        # Group names may contain ':'; braces keep the name one visible unit and a cluster hash tag.
        return f"{self.p}:group:{{{group}}}:{what}"

    def index_key(self, sort: str, state: str | None = None) -> str:
        return self.key_of("idx", sort) if state is None else self.key_of("idx", sort, "state", state)

    def summary_key(self, what: str) -> str:
        """A summary hash: `rules`, `facts` or `metrics:FAMILY` (docs/redis-schema.md)."""
        return self.key_of("summary", what)

    def pipeline(self) -> Any:
        return self.r.pipeline(transaction=False)

    @property
    def fleet_key(self) -> str:
        """hash group -> its fleet row"""
        return self.key_of("fleet")

    @property
    def fleet_states_key(self) -> str:
        """hash group -> its state"""
        return self.key_of("fleet", "state")

    @property
    def fleet_types_key(self) -> str:
        """hash group -> its type"""
        return self.key_of("fleet", "type")

    @property
    def refreshed_key(self) -> str:
        """hash group -> when the collector last refreshed it"""
        return self.key_of("refreshed")

    @property
    def facts_key(self) -> str:
        """hash group -> its facts (summaries.Facts)"""
        return self.summary_key("facts")

    @property
    def rule_heads_key(self) -> str:
        """hash group -> its rule head (summaries.rule_head)"""
        return self.summary_key("rules")

    def metrics_key(self, family: str) -> str:
        """hash group -> its exposition lines of one metric family"""
        return self.summary_key(f"metrics:{family}")

    def document_key(self, group: str) -> str:
        return self.group_key(group, "doc")

    def generations_key(self, group: str) -> str:
        return self.group_key(group, "generations")

    def lag_points_key(self, group: str) -> str:
        return self.group_key(group, "lag")

    def lag_index_key(self, group: str) -> str:
        """zset of the group's lag point ids by time"""
        return self.group_key(group, "lag:idx")
