"""Offsets and lag, for every kind of group: the committed offsets a group keeps and Kafka's rules
for them (store.py), commits gathered into runs for a catch-up (runs.py), and lag with Burrow's
evaluation (lag.py)."""

from coordinator_model.offsets.runs import CommitRun, merged_rows
from coordinator_model.offsets.store import OffsetState, OffsetStore, replaces

__all__ = ["CommitRun", "OffsetState", "OffsetStore", "merged_rows", "replaces"]
