"""The fleet table's rows: one small JSON row per group (what `groupscope groups` and the dashboard's
grid show) and its score in each sort index (docs/redis-schema.md)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.storage import json_text
from coordinator_model.document import GroupDocument

HOUR_MS = 3600 * 1000

SORT_KEYS = ("name", "state", "lag", "lag_seconds", "rebalance_rate", "members", "last_change")
# Scores of the state index: alphabetical, so sorting by state reads like sorting the column's text.
KNOWN_STATES = (
    "Assigning",
    "CompletingRebalance",
    "Dead",
    "Empty",
    "PreparingRebalance",
    "Reconciling",
    "Stable",
    "Unknown",
)


@dataclass(frozen=True)
class FleetRow:
    """One row of the fleet table (what `groupscope groups` and the dashboard's grid show)."""

    name: str
    type: str | None
    state: str
    members: int
    generation: int | None
    group_epoch: int | None
    protocol: str | None
    lag: int
    lag_seconds: float
    rebalances_1h: int
    last_change: int | None
    last_refreshed: int
    provisional: bool = False  # from the Admin API's first answers only (GroupDocument.provisional)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if not self.provisional:
            del d["provisional"]  # the rows of the pipeline's documents, as they always were
        return d


_dumps = json_text.standard


def row_text(row: Mapping[str, Any]) -> str:
    """A fleet row's JSON (a flat object: its floats are its values)."""
    return json_text.dumps(row, finite=json_text.finite(row.values()))


def provisional_row(row: bytes) -> bool:
    try:
        return bool(json.loads(row).get("provisional"))
    except (ValueError, AttributeError):
        return False


def fleet_row(doc: GroupDocument, now_ms: int) -> FleetRow:
    """The fleet row of a group document; `now_ms` ends the one-hour window of rebalances."""
    lag, lag_s = doc.lag.totals()
    return FleetRow(
        name=doc.group,
        type=doc.type,
        state=doc.state or "Unknown",
        members=len(doc.members),
        generation=doc.generation,
        group_epoch=doc.group_epoch,
        protocol=doc.protocol,
        lag=lag,
        lag_seconds=lag_s,
        rebalances_1h=sum(
            1 for g in doc.generations if g.start is not None and now_ms - HOUR_MS <= g.start <= now_ms
        ),
        last_change=doc.last_change(),
        last_refreshed=int(now_ms),
        provisional=doc.provisional,
    )


def as_document(doc: GroupDocument | Mapping[str, Any]) -> GroupDocument:
    """A document to write: typed as it is, or read from its JSON form (DocumentError if it is not one)."""
    return doc if isinstance(doc, GroupDocument) else GroupDocument.from_json(doc)


def sort_scores(row: Mapping[str, Any]) -> dict[str, float]:
    """A fleet row's (its JSON's) score in each fleet index (`gs:idx:SORT`); equal scores order by
    name."""
    state = row.get("state")
    return {
        "name": 0.0,
        "state": float(KNOWN_STATES.index(state)) if state in KNOWN_STATES else 99.0,
        "lag": float(row.get("lag") or 0),
        "lag_seconds": float(row.get("lag_seconds") or 0),
        "rebalance_rate": float(row.get("rebalances_1h") or 0),
        "members": float(row.get("members") or 0),
        "last_change": float(row.get("last_change") or 0),
    }


def history_digest(doc: GroupDocument) -> str:
    """What the per-group timeline and generations keys are written from."""
    text = json_text.dumps([[t.to_json() for t in doc.timeline], [g.to_json() for g in doc.generations]])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()
