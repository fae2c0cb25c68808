"""A view of one group document (coordinator_model/document/types.py) for the alert rules and the
alert summaries storage keeps (collectors/storage/summaries.py): facts the document implies.

The document is read once, with `GroupDocument.from_json` (evaluate_group reads it before any rule
runs); a value that is not a document raises DocumentError there, which the caller reports as a
bad document. The rules read its typed fields:
the timeline (`TimelineSpan`), the lag rows (`PartitionLag`) and the group totals (`doc.lag.total`,
`doc.lag.totals()`). What is derived here is what the document does not say itself: the generations
within the rules' look-back, in start order, each member they name with the key that survives a
restart (`member_key`), and the state at a given moment (`state_at`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator_model.document.types import (
    REBALANCING_STATES,
    DocumentError,
    GenerationDoc,
    GroupDocument,
    PartitionLag,
    TimelineSpan,
)

__all__ = [
    "GONE_STATES",
    "REBALANCING_STATES",
    "DocumentError",
    "Generation",
    "GroupView",
    "MemberRef",
    "PartitionLag",
    "StateSpan",
    "document_of",
    "generations",
    "member_key",
    "members_behind",
    "state_at",
    "view_of",
]

# A classic member's id as the coordinator builds it: "<group.instance.id or client.id>-<uuid4>".
_UUID_SUFFIX = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)

GONE_STATES = frozenset({"Empty", "Dead"})

# A span of the timeline as the rules read it (state, start, end): the document's own type. The rule
# head of collectors/storage/summaries.py builds them from its stored lists under this name.
StateSpan = TimelineSpan


def document_of(doc: GroupDocument | Mapping[str, Any]) -> GroupDocument:
    """The document itself, or read from its JSON form (DocumentError when it is not one)."""
    return doc if isinstance(doc, GroupDocument) else GroupDocument.from_json(doc)


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A member as a generation names it: its id and the key that survives a restart."""

    member_id: str
    key: str  # group.instance.id, else client.id, else the member id without its uuid suffix


def member_key(member_id: str, instance_id: str | None = None, client_id: str | None = None) -> str:
    """The key of a member across restarts. A classic member's id is "<group.instance.id>-<uuid>"
    for a static member, else "<client.id>-<uuid>" (the coordinator builds it): its prefix names the
    client for a member that has left as well as for one the member list still shows. Other ids (a
    KIP-848 member's) say nothing: the member list's instance or client id, else the id itself."""
    stripped = _UUID_SUFFIX.sub("", member_id)
    if stripped != member_id:
        return f"client:{stripped}"
    if instance_id:
        return f"instance:{instance_id}"
    if client_id:
        return f"client:{client_id}"
    return f"member:{member_id}"


@dataclass(frozen=True, slots=True)
class Generation:
    """A generation (or KIP-848 epoch) as the rules read it: the members it names, keyed.

    `raw` holds the two values of the stored generation the rules read beyond these, "duration_ms"
    (evidence) and "empty" (the rebalance that emptied the group); the rule head of
    collectors/storage/summaries.py builds Generations positionally with that mapping."""

    generation: int | None
    start: int
    end: int | None
    cause: str
    reason: str | None
    joined: tuple[MemberRef, ...]
    left: tuple[MemberRef, ...]
    member_count: int | None  # members after the rebalance
    raw: Mapping[str, Any]

    @property
    def empty(self) -> bool:
        return bool(self.raw.get("empty"))

    def evidence(self) -> dict[str, Any]:
        """What an alert keeps of the generation: enough to see why it counted."""
        return {
            "generation": self.generation,
            "start": self.start,
            "end": self.end,
            "duration_ms": self.raw.get("duration_ms"),
            "cause": self.cause,
            "reason": self.reason,
            "members_joined": [m.member_id for m in self.joined],
            "members_left": [m.member_id for m in self.left],
        }


def _refs(ids: list[str], known: dict[str, tuple[str | None, str | None]]) -> tuple[MemberRef, ...]:
    out = []
    for mid in ids:
        inst, client = known.get(mid, (None, None))
        out.append(MemberRef(mid, member_key(mid, inst, client)))
    return tuple(out)


def _generation(g: GenerationDoc, start: int, known: dict[str, tuple[str | None, str | None]]) -> Generation:
    return Generation(
        generation=g.generation,
        start=start,
        end=g.end,
        cause=g.cause or "unknown",
        reason=g.reason,
        joined=_refs(g.members_joined, known),
        left=_refs(g.members_left, known),
        member_count=len(g.members),
        raw={"duration_ms": g.duration_ms, "empty": g.empty},
    )


def generations(doc: GroupDocument | Mapping[str, Any], since: int | None = None) -> list[Generation]:
    """The document's generations (or KIP-848 epochs) with a start time, oldest first; with `since`,
    only those that started after it (the rules never look further back than their windows), each
    member they name keyed by `member_key` (with the ids the member list gives it, if it lists it)."""
    d = document_of(doc)
    known = {m.member_id: (m.group_instance_id, m.client_id) for m in d.members}
    out = [
        _generation(g, g.start, known)
        for g in d.generations
        if g.start is not None and (since is None or g.start > since)
    ]
    out.sort(key=lambda g: (g.start, g.generation or 0))
    return out


def state_at(view: GroupView, now_ms: int) -> tuple[str | None, int]:
    """The group's state at now_ms and the index of its span in the timeline (-1 when the timeline
    does not cover now_ms and the document's current state is used)."""
    spans = view.timeline
    for i in range(len(spans) - 1, -1, -1):
        s = spans[i]
        if s.start is not None and s.start <= now_ms and (s.end is None or now_ms < s.end):
            return s.state, i
    if spans and spans[-1].start is not None and spans[-1].start <= now_ms:
        # The last span closed before now_ms with nothing after it: it is still the best we know.
        return spans[-1].state, len(spans) - 1
    if spans and spans[0].start is not None and now_ms < spans[0].start:
        return None, -1  # before the group existed
    return view.doc.state, -1


class GroupView:
    """One document for all the rules: its generations within the rules' longest look-back (`since`),
    derived on first use; its timeline and lag rows as the document has them. A document in its
    JSON form is read (GroupDocument.from_json) the first time a rule asks for it: the summaries'
    view (collectors/storage/summaries.py) gives the rules their timeline and generations itself
    and most groups never need the rest."""

    __slots__ = ("_doc", "_gens", "_json", "_lags", "_timeline", "since")

    def __init__(self, doc: GroupDocument | Mapping[str, Any], since: int | None = None) -> None:
        self._doc, self._json = (doc, None) if isinstance(doc, GroupDocument) else (None, doc)
        self.since = since
        self._gens: list[Generation] | None = None
        self._timeline: list[StateSpan] | None = None
        self._lags: list[PartitionLag] | None = None

    @property
    def doc(self) -> GroupDocument:
        if self._doc is None:
            self._doc = GroupDocument.from_json(self._json)
        return self._doc

    @property
    def group(self) -> str:
        return self.doc.group

    @property
    def generations(self) -> list[Generation]:
        if self._gens is None:
            self._gens = generations(self.doc, self.since)
        return self._gens

    @property
    def timeline(self) -> list[StateSpan]:
        if self._timeline is None:
            self._timeline = self.doc.timeline
        return self._timeline

    @property
    def lags(self) -> list[PartitionLag]:
        if self._lags is None:
            self._lags = self.doc.lag.partitions
        return self._lags


def view_of(doc: GroupDocument | Mapping[str, Any] | GroupView) -> GroupView:
    return doc if isinstance(doc, GroupView) else GroupView(doc)


# The kinds of group whose members reconcile towards a target assignment epoch by epoch (KIP-848
# consumer groups, KIP-1071 streams groups). A share group's members take their partitions at once.
CONVERGING_TYPES = frozenset({"consumer", "streams"})


def members_behind(doc: GroupDocument, now_ms: int) -> list[tuple[str, int, int]]:
    """The members whose epoch is behind the group's target assignment epoch as of `now_ms`, each
    as (member id, its epoch, since when it has been behind: the start of the first epoch past its
    own). A member whose next epoch's start the document no longer holds is left out (it cannot be
    timed). Both the member_not_converging rule and the alert summaries (collectors/storage/summaries.py)
    read this."""
    target = doc.assignment_epoch
    if doc.type not in CONVERGING_TYPES or target is None:
        return []
    starts = sorted(
        (g.generation, g.start)
        for g in doc.generations
        if g.generation is not None and g.start is not None and g.start <= now_ms
    )
    out = []
    for m in doc.members:
        epoch = m.member_epoch
        if epoch is None or epoch >= target:
            continue
        since = next((start for n, start in starts if n > epoch), None)
        if since is not None:
            out.append((m.member_id, epoch, since))
    return out
