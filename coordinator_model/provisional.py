"""A provisional document: a group as the Admin API's first answers show it (its describe and its
committed offsets), made by the same engine as every other document, and marked so.

The collector's Admin poller answers within seconds of its start, while Spark takes half a minute
before its first micro-batch: these documents let a user see every group's state, members and
committed offsets meanwhile (collectors/pipeline/provisional_heads.py). They carry no history (no
generations, no timeline before the describe) and no lag (log-end offsets were left out: a group's
lag in seconds costs the engine more than the rest of its document); the pipeline's own document of
the group, made from the offsets topic as well, always replaces them.
"""

from __future__ import annotations

from coordinator_model.document import GroupDocument, LagDoc
from coordinator_model.engine import GroupEngine
from coordinator_model.evidence import CommittedSnapshot, DescribeSnapshot


def provisional_document(
    describe: DescribeSnapshot, committed: CommittedSnapshot | None = None
) -> GroupDocument:
    """The document of `describe`'s group from that describe and its committed offsets (if any), as
    of the later of the two, marked provisional."""
    eng = GroupEngine(describe.group)
    eng.apply(describe)
    at = describe.ts
    if committed is not None and committed.group == describe.group:
        eng.apply(committed)
        at = max(at, committed.ts)
    doc = eng.document(at)
    doc.provisional = True
    # without log ends its lag says nothing but which partitions it has (the offsets say that): left
    # out, it halved the size of a 100-partition group's document
    doc.lag = LagDoc()
    return doc
