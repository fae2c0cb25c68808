"""The store's read side for groups: the fleet table, documents put together from their parts, and
each group's history series."""

from __future__ import annotations

import json
import logging
from typing import Any

from collectors.storage import group_parts, json_text, sorted_index
from collectors.storage.fleet_rows import (
    SORT_KEYS,
)
from collectors.storage.store_keys import StoreKeys
from coordinator_model.document import DocumentError, GroupDocument

log = logging.getLogger(__name__)


class GroupReads(StoreKeys):
    """RedisStore's reads of groups (collectors/storage/redis_store.py)."""

    def list_groups(
        self,
        sort_by: str = "name",
        descending: bool = False,
        state: str | list[str] | None = None,
        name_contains: str | None = None,
        type_: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> tuple[int, list[dict[str, Any]]]:
        """(total matching, one page of fleet rows). Ties sort by name."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, not {sort_by!r}")
        offset, limit = max(0, int(offset)), max(0, int(limit))
        states = [state] if isinstance(state, str) else list(state or [])
        if not name_contains and not type_ and len(states) <= 1:
            index = self.index_key(sort_by, states[0] if states else None)
            total, names = sorted_index.page(self.r, index, offset, limit, descending)
        else:
            index = self.index_key(sort_by, states[0] if len(states) == 1 else None)
            total, names = self._filter(
                keys=[index, self.fleet_types_key, self.fleet_states_key],
                args=[
                    "1" if descending else "0",
                    (name_contains or "").lower(),
                    type_ or "",
                    offset,
                    limit,
                    *(states if len(states) > 1 else []),
                ],
            )
            total = int(total)
        if not names:
            return total, []
        rows = self.r.hmget(self.fleet_key, names)
        return total, [json.loads(r) for r in rows if r]

    def fleet_counts(self) -> dict[str, Any]:
        """Counts for the fleet header: total and by state. (Storms, flapping and lagging are the
        alert rules' statuses, coordinator_model/statuses.py, read by alerts/fleet_statuses.py.)"""
        states = sorted(s.decode() for s in self.r.smembers(self.key_of("states")))
        p = self.pipeline()
        p.hlen(self.fleet_key)
        for s in states:
            p.zcard(self.index_key("name", s))
        res = p.execute()
        by_state = {s: int(n) for s, n in zip(states, res[1 : 1 + len(states)], strict=True) if n}
        return {"total": int(res[0]), "by_state": by_state}

    def get_group(self, name: str) -> dict[str, Any] | None:
        """The group's document exactly as `groupscope model --json` prints it, or None."""
        raws, docs = self._put_together([name])
        if 0 in docs:
            return docs[0].to_json()
        return json.loads(raws[0]) if raws[0] else None

    def document_texts(self, names: list[str], now: int | None = None) -> list[bytes | None]:
        """The groups' documents as JSON (None: absent), each put together from its parts where the
        collector stores it so (group_parts.py); a stored value that is not JSON is handed back as it
        is, for the caller to say so."""
        raws, docs = self._put_together(names, now)
        for i, doc in docs.items():
            raws[i] = json_text.standard(doc.to_json()).encode()
        return raws

    def _put_together(
        self, names: list[str], now: int | None = None
    ) -> tuple[list[bytes | None], dict[int, GroupDocument]]:
        """The stored values of the groups' documents, and by position those stored in parts put
        together (a head that does not read as a document is left to the caller, as stored)."""
        if not names:
            return [], {}
        raws = list(self.r.mget([self.document_key(n) for n in names]))
        heads: dict[int, dict[str, Any]] = {}
        for i, raw in enumerate(raws):
            if raw and b'"offsets_apart":true' in raw:
                try:
                    d = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(d, dict) and group_parts.is_head(d):
                    heads[i] = d
        if not heads:
            return raws, {}
        stores = self.offsets.load([names[i] for i in heads])
        topics_of = {i: group_parts.topics_of(d, stores[names[i]]) for i, d in heads.items()}
        ends = self.log_ends.read(set().union(*topics_of.values()))
        docs: dict[int, GroupDocument] = {}
        for i, d in heads.items():
            mine = {tp: h for tp, h in ends.items() if tp[0] in topics_of[i]}
            try:
                docs[i] = group_parts.assemble(d, stores[names[i]], mine, now)
            except DocumentError:
                continue  # handed back as stored: the caller says it is not a document
        return raws, docs

    def get_document(self, name: str) -> GroupDocument | None:
        """The group's document, typed (DocumentError if what is stored is not one), or None."""
        raws, docs = self._put_together([name])
        if 0 in docs:
            return docs[0]
        return GroupDocument.from_json(json.loads(raws[0])) if raws[0] else None

    def get_row(self, name: str) -> dict[str, Any] | None:
        raw = self.r.hget(self.fleet_key, name)
        return json.loads(raw) if raw else None

    def _series(self, group: str, what: str, since: int | None, until: int | None) -> list[dict[str, Any]]:
        ids = self.r.zrangebyscore(
            self.group_key(group, f"{what}:idx"),
            "-inf" if since is None else since,
            "+inf" if until is None else until,
        )
        if not ids:
            return []
        return [json.loads(v) for v in self.r.hmget(self.group_key(group, what), ids) if v]

    def get_timeline(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        """State intervals that start in [since, until] plus the one in force at `since`, by start."""
        rows = self._series(name, "timeline", None, until)
        if since is None:
            return rows
        return [t for t in rows if (t.get("end") is None or t["end"] >= since)]

    def get_generations(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        return self._series(name, "generations", since, until)

    def get_lag_history(self, name: str, since: int | None = None, until: int | None = None) -> list[dict]:
        return self._series(name, "lag", since, until)
