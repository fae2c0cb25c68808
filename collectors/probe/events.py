"""The heartbeat event the probe emits: one JSON object per event on the heartbeat topic, keyed by group.

The schema is docs/heartbeat-events.md; coordinator_model.evidence.from_heartbeat_json reads it back.
Two optional probe extensions, which readers that do not know them ignore: `stats` (librdkafka's
consumer-group statistics at the time of a heartbeat) and `group_protocol` (the client's
group.protocol, classic or consumer: what the member speaks, whatever the Admin API says).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

EVENTS = frozenset({"heartbeat", "join", "sync", "assigned", "revoked", "lost", "leave", "poll_stall"})


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """What a member says about itself in every event; fixed for the life of a consumer."""

    group: str
    client_id: str
    host: str
    group_instance_id: str | None
    session_timeout_ms: int
    max_poll_interval_ms: int
    group_protocol: str = "classic"  # librdkafka's group.protocol: classic or consumer (KIP-848)


@dataclass(frozen=True, slots=True)
class CgrpStats:
    """The consumer-group section ("cgrp") of librdkafka's statistics JSON."""

    state: str | None = None  # librdkafka's coordinator state: init, wait-coord, up, ...
    join_state: str | None = None  # init, wait-join, wait-sync, steady, wait-unassign-call, ...
    rebalance_cnt: int | None = None
    rebalance_reason: str | None = None
    assignment_size: int | None = None

    @classmethod
    def from_stats_json(cls, raw: str) -> CgrpStats | None:
        """Parse librdkafka's statistics; None when there is no cgrp section or the JSON is bad."""
        try:
            cgrp = json.loads(raw).get("cgrp")
        except (ValueError, AttributeError):
            return None
        if not isinstance(cgrp, dict):
            return None

        def _int(k: str) -> int | None:
            v = cgrp.get(k)
            return v if isinstance(v, int) else None

        return cls(
            state=cgrp.get("state"),
            join_state=cgrp.get("join_state"),
            rebalance_cnt=_int("rebalance_cnt"),
            rebalance_reason=cgrp.get("rebalance_reason"),
            assignment_size=_int("assignment_size"),
        )


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    """One event the probe emits (docs/heartbeat-events.md: the wire format). The collector reads it
    back as coordinator_model.evidence.HeartbeatEvent, the model's evidence."""

    ts: int
    group: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    generation: int | None  # librdkafka does not expose the generation: always None from this probe
    event: str
    state: str | None
    partitions: list[tuple[str, int]] = field(default_factory=list)
    session_timeout_ms: int | None = None
    max_poll_interval_ms: int | None = None
    stats: CgrpStats | None = None
    group_protocol: str | None = None

    def __post_init__(self) -> None:
        if self.event not in EVENTS:
            raise ValueError(f"unknown heartbeat event {self.event!r}")

    @classmethod
    def make(
        cls,
        who: MemberIdentity,
        member_id: str,
        event: str,
        *,
        state: str | None = None,
        partitions: list[tuple[str, int]] | None = None,
        stats: CgrpStats | None = None,
        ts: int | None = None,
    ) -> ProbeEvent:
        return cls(
            ts=now_ms() if ts is None else ts,
            group=who.group,
            member_id=member_id,
            group_instance_id=who.group_instance_id,
            client_id=who.client_id,
            host=who.host,
            generation=None,
            event=event,
            state=state,
            partitions=list(partitions or []),
            session_timeout_ms=who.session_timeout_ms,
            max_poll_interval_ms=who.max_poll_interval_ms,
            stats=stats,
            group_protocol=who.group_protocol,
        )

    def to_dict(self) -> dict[str, Any]:
        # Built by hand: dataclasses.asdict deep-copies and is ~10x slower, and this runs for every event.
        d: dict[str, Any] = {
            "ts": self.ts,
            "group": self.group,
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "host": self.host,
            "generation": self.generation,
            "event": self.event,
            "state": self.state,
            "partitions": [[t, p] for t, p in self.partitions],
            "session_timeout_ms": self.session_timeout_ms,
            "max_poll_interval_ms": self.max_poll_interval_ms,
        }
        if self.group_protocol is not None:
            d["group_protocol"] = self.group_protocol
        if self.stats is not None:
            d["stats"] = asdict(self.stats)
        return d

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), separators=(",", ":")).encode()
