"""A classic group (JoinGroup/SyncGroup, `group.protocol=classic`): its rebalances, generations and
their causes, rebuilt from GroupMetadata records, the coordinator's log lines, client events and
Admin API snapshots, one module per source (metadata_records.py, broker_log_lines.py,
client_events.py, admin_snapshots.py) over the state machine of rebalances.py.

A GroupMetadata record is written at the leader's SyncGroup (Stable) and carries when
CompletingRebalance began; PreparingRebalance is never recorded, so its start comes from the
broker's log, else from client events (a join, a leave, a member that went silent), else it is
inferred from snapshots and marked so.

What every kind of group shares (members, the timeline, the sources seen, offsets, the weighing of
sources) lives on the GroupEngine this model belongs to (`engine`, seen through group_context.py).
"""

from __future__ import annotations

from coordinator_model.classic.admin_snapshots import AdminSnapshotReplay
from coordinator_model.classic.broker_log_lines import BrokerLogReplay
from coordinator_model.classic.client_events import ClientEventReplay
from coordinator_model.classic.metadata_records import MetadataRecordReplay
from coordinator_model.classic.rebalances import ClassicRebalances


class ClassicGroupModel(
    MetadataRecordReplay, BrokerLogReplay, ClientEventReplay, AdminSnapshotReplay, ClassicRebalances
):
    """The classic-protocol part of one group's reconstruction: each source's evidence replayed."""
