"""KIP-848 consumer groups (`group.protocol=consumer`)."""

from coordinator_model.consumer.group import ConsumerGroupModel, has_k848_details

__all__ = ["ConsumerGroupModel", "has_k848_details"]
