"""A group's document in parts, put together again for every reader (docs/redis-schema.md).

Live, the collector stores a group as:
- its head, `{prefix}:group:{G}:doc`: the document without offsets and lag (state, members and
  assignment, generations, timeline, ...), marked `"offsets_apart": true`, rewritten only when the
  coordinator model changes it;
- its committed offsets, `{prefix}:group:{G}:offsets`, a field per partition (group_offsets.py),
  written a changed partition at a time;
- the cluster's log ends, one history per topic-partition (log_ends.py).

`assemble` rebuilds the document `groupscope model --json` prints from them, with the same code the
engine renders it with (`OffsetStore.rows` and `OffsetStore.lag`), so every reader keeps reading a
`GroupDocument`. A head without the mark (written before the parts existed, or by a replay) is a
whole document and is read as it is: data already in Redis needs no migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator_model.document import GroupDocument
from coordinator_model.offsets import OffsetStore
from coordinator_model.offsets.lag import EndOffsetHistory

APART = "offsets_apart"


def head_json(doc: GroupDocument) -> dict[str, Any]:
    """What the head stores of a whole document."""
    d = doc.to_json()
    d["offsets"] = []
    d["lag"] = None
    d[APART] = True
    return d


def is_head(d: Mapping[str, Any]) -> bool:
    return bool(d.get(APART))


def lag_time(doc: GroupDocument, store: OffsetStore, ends: Mapping[tuple[str, int], EndOffsetHistory]) -> int:
    """The time a put-together document's lag is computed at: its latest evidence, the head's, a
    commit's or a log end's observation of its partitions (as the engine's own clock would be)."""
    t = int(doc.as_of or 0)
    for o in store.committed.values():
        t = max(t, o.ts)
    for h in ends.values():
        t = max(t, h.last_seen)
    return t


def assemble(
    head: Mapping[str, Any],
    store: OffsetStore,
    ends: Mapping[tuple[str, int], EndOffsetHistory],
    now: int | None = None,
    with_offsets: bool = True,
) -> GroupDocument:
    """The whole document of a head, its offsets and the log ends of its partitions, at `now` (default:
    `lag_time`). Without `with_offsets`, its list of committed offsets stays empty: the lag refresher
    writes only what follows lag (fleet row, summaries, topic rows, lag point), and the lag section
    has every committed partition's offset already."""
    doc = GroupDocument.from_json(head)
    # the histories are only read here (lag, next_stop): lent as they are, not copied (the refresher
    # hands every group the ends of all its round's topics, a copy of which was a tenth of its time)
    store.ends = ends if isinstance(ends, dict) else dict(ends)
    at = lag_time(doc, store, ends) if now is None else now
    owner = {tp: m.member_id for m in doc.members for tp in m.assignment}
    if with_offsets:
        doc.offsets = store.rows()
    doc.lag = store.lag(at, owner)
    doc.as_of = at
    if doc.state is None and store.committed:
        doc.state = "Empty"  # as the document writer says of a group known only by its commits
    return doc


def topics_of(head: Mapping[str, Any], store: OffsetStore) -> set[str]:
    """The topics whose log ends a head's lag needs."""
    topics = {t for t, _ in store.committed}
    for m in head.get("members") or ():
        topics.update(m.get("subscription") or ())
        topics.update(t for t, _ in m.get("assignment") or ())
    return topics
