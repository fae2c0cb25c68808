"""KIP-932 share groups (`ShareConsumer`, Kafka 4.1+)."""

from coordinator_model.share.group import ShareGroupModel

__all__ = ["ShareGroupModel"]
