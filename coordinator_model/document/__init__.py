"""The group document: its types (types.py), which every reader uses. Its one writer (writer.py) is
imported by the engine alone, not from here: the offsets model imports these types, and the writer
reads the offsets model."""

from coordinator_model.document.types import (
    REBALANCING_STATES,
    ClientDoc,
    Conflict,
    CoordinatorDoc,
    Denied,
    DocumentError,
    GenerationDoc,
    GroupDocument,
    LagDoc,
    MemberDoc,
    MemberLag,
    OffsetDoc,
    PartitionLag,
    SubtopologyDoc,
    TasksDoc,
    TimelineSpan,
    TopicPartition,
    TopologyDoc,
)

__all__ = [
    "REBALANCING_STATES",
    "ClientDoc",
    "Conflict",
    "CoordinatorDoc",
    "Denied",
    "DocumentError",
    "GenerationDoc",
    "GroupDocument",
    "LagDoc",
    "MemberDoc",
    "MemberLag",
    "OffsetDoc",
    "PartitionLag",
    "SubtopologyDoc",
    "TasksDoc",
    "TimelineSpan",
    "TopicPartition",
    "TopologyDoc",
]
