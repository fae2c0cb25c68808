"""Classic groups (JoinGroup/SyncGroup, `group.protocol=classic`)."""

from coordinator_model.classic.admin_snapshots import DESCRIBE_SKEW_MS
from coordinator_model.classic.group import ClassicGroupModel

__all__ = ["DESCRIBE_SKEW_MS", "ClassicGroupModel"]
