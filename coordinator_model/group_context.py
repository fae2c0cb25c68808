"""What a kind of group's model (consumer/, and the kinds to come) may use of the group it belongs
to: the parts every kind of group shares, which the GroupEngine keeps. A Protocol, so that a kind's
model depends on this page and not on the engine that imports it."""

from __future__ import annotations

from typing import Protocol

from coordinator_model.evidence import DescribeSnapshot
from coordinator_model.membership import Member
from coordinator_model.offsets import OffsetStore


class GroupContext(Protocol):
    members: dict[str, Member]
    departed: dict[str, int]  # member id -> when it left (late evidence must not revive it)
    departed_members: dict[str, Member]  # the last few that left, for their late events
    sources: set[str]  # the sources that have spoken about the group
    type: str | None
    protocol_type: str | None
    state: str | None
    timeline: list[list]  # [state, start, inferred]
    deleted: bool
    offsets: OffsetStore

    def as_share(self, source: str = "records") -> None: ...

    def as_consumer(self, source: str = "records") -> None:
        """`source` says the group speaks the consumer protocol (weighed against who said otherwise)."""

    def typed(self, kind: str, source: str) -> None:
        """`source` says the group is of `kind` (weighed against who said otherwise)."""

    def member(self, member_id: str) -> Member:
        """The member, created if new."""

    def remove_member(self, member_id: str, ts: int) -> Member | None: ...

    def arm(self, m: Member) -> None:
        """Schedule the check of `m`'s session expiry."""

    def last_ts(self) -> int:
        """When the group last changed state."""

    def clamp(self, ts: int) -> int:
        """`ts`, or the latest transition's time when late evidence would precede it."""

    def conflict(self, kind: str, ts: int, note: str) -> None:
        """Two sources disagree and the weaker was not believed: say so."""

    def contradiction(self, ev: DescribeSnapshot) -> str | None:
        """Why an Admin API snapshot contradicts what stronger sources said (None: it does not)."""

    def names_a_member(self, assignor: str) -> bool: ...
