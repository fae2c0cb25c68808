"""Engines pickled by older versions of groupscope: the pipeline keeps every group's engine pickled
in Spark's state store, so a new version must read what the last one wrote. Each change of layout
adds its step here; `migrate` turns an older engine's state into this version's.

- before offsets/ (commit 4327628 and earlier): committed offsets, log-end histories and lag
  windows were three dicts on the engine;
- before consumer/ and classic/: each kind's fields were on the engine itself.
"""

from __future__ import annotations

from typing import Any

from coordinator_model.offsets import OffsetStore

# KIP-848 fields an engine pickled before consumer/ kept itself -> their ConsumerGroupModel names
_CONSUMER_FIELDS = {
    "group_epoch": "group_epoch",
    "assignment_epoch": "assignment_epoch",
    "epoch_source_ts": "epoch_source_ts",
    "describe_state": "describe_state",
    "topic_names": "topic_names",
    "assignor": "assignor",
    "epochs": "epochs",
    "_epoch_pending": "pending",
}

# the classic group's fields an engine pickled before classic/ kept itself (same names there)
_CLASSIC_FIELDS = (
    "generation",
    "generation_inferred",
    "protocol",
    "leader",
    "pending_members",
    "generations",
    "open",
    "simple",
    "replaced_instances",
    "empty_since",
    "_last_describe_ts",
    "_expiry_undo",
    "snapshot_members",
    "incremental",
    "_rejoined",
)


def migrate(state: dict[str, Any], classic: Any, consumer: Any) -> dict[str, Any]:
    """An older engine's pickled state in this version's layout; `classic` and `consumer` are fresh
    models of the engine being restored, filled from the state's fields when it predates them."""
    state = dict(state)
    if isinstance(state.get("offsets"), dict):
        state["offsets"] = OffsetStore(
            state.pop("offsets"), state.pop("end_offsets", None), state.pop("windows", None)
        )
    if "consumer" not in state:
        for old, new in _CONSUMER_FIELDS.items():
            if old in state:
                setattr(consumer, new, state.pop(old))
        state["consumer"] = consumer
    if "classic" not in state:
        for name in _CLASSIC_FIELDS:
            if name in state:
                setattr(classic, name, state.pop(name))
        state["classic"] = classic
        if "_departed_members" in state:
            state["departed_members"] = state.pop("_departed_members")
    return state
