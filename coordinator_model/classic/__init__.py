"""Classic groups (JoinGroup/SyncGroup, `group.protocol=classic`)."""

from coordinator_model.classic.group import DESCRIBE_SKEW_MS, ClassicGroupModel

__all__ = ["DESCRIBE_SKEW_MS", "ClassicGroupModel"]
