"""KIP-1071 streams groups (Kafka Streams on `group.protocol=streams`, Kafka 4.2+)."""

from coordinator_model.streams.group import StreamsGroupModel
from coordinator_model.streams.tasks import TaskLag, task_lags

__all__ = ["StreamsGroupModel", "TaskLag", "task_lags"]
