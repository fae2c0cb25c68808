"""Parse the broker's group-coordinator log lines (Kafka 3.x `kafka.coordinator.group.GroupCoordinator`
and 4.x `org.apache.kafka.coordinator.group.GroupMetadataManager`) into `BrokerLogEvent`s.

Only lines about group membership are kept; every other server.log line gives None. The line
formats come from Kafka's own `info(...)` calls:

- 3.x: `[ts] INFO [GroupCoordinator 1]: Preparing to rebalance group G in state PreparingRebalance
  with old generation N (__consumer_offsets-P) (reason: R) (kafka.coordinator.group.GroupCoordinator)`
- 4.x: `[ts] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=P] Preparing to rebalance
  group G in state PreparingRebalance with old generation N (reason: R). (org.apache...)`
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from coordinator_model.errors import EvidenceError

_PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{1,3})\]\s+(\w+)\s+(.*)$")
_COORDINATOR = re.compile(r"^\[(?:GroupCoordinator|GroupMetadataManager)[^\]]*\]:?\s*(.*)$")
_LOGGER_SUFFIX = re.compile(r"\s+\((?:org\.apache\.kafka|kafka)\.[\w.$]+\)\s*$")
_PARTITION_NOTE = re.compile(r"\s*\(__consumer_offsets-\d+\)")

# (kind, pattern); named groups become BrokerLogEvent fields.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "prepare",
        re.compile(
            r"^Preparing to rebalance group (?P<group>\S+)(?: in state (?P<state>\w+))? with old generation "
            r"(?P<generation>-?\d+)(?: \(reason: (?P<reason>.*)\))?\.?$"
        ),
    ),
    (
        "stabilized",
        re.compile(
            r"^Stabilized group (?P<group>\S+) generation (?P<generation>\d+) with (?P<count>\d+) members?"
        ),
    ),
    (
        "assignment",
        re.compile(
            r"^Assignment received from leader (?P<member>\S+) for group (?P<group>\S+) for generation "
            r"(?P<generation>\d+)(?:\. The group has (?P<count>\d+) members?)?"
        ),
    ),
    ("empty", re.compile(r"^Group (?P<group>\S+) with generation (?P<generation>\d+) is now empty")),
    ("member_failed", re.compile(r"^Member (?P<member>\S+) in group (?P<group>\S+) has failed, removing it")),
    (
        "member_left",
        re.compile(
            r"^\[Group (?P<group>\S+)\] Member (?P<member>\S+) has left group through explicit `?LeaveGroup`?"
            r"(?: request)?(?:; client reason: (?P<reason>.*))?$"
        ),
    ),
    (
        "member_left",
        re.compile(
            r"^Member (?P<member>\S+) has left group (?P<group>\S+) through explicit `?LeaveGroup`?"
            r"(?: request)?(?:; client reason: (?P<reason>.*))?$"
        ),
    ),
    (
        # 2.4-3.x LeaveGroup: "Member[group.instance.id None, member.id c-1] in group g has left, ..."
        "member_left",
        re.compile(
            r"^Member\[group\.instance\.id (?P<instance>[^,]+), member\.id (?P<member>[^\]]+)\] in group "
            r"(?P<group>\S+) has left"
        ),
    ),
    (
        "member_pending",
        re.compile(
            r"^Dynamic member with unknown member id joins group (?P<group>\S+) in (?P<state>\w+) state\. "
            r"Created a new member id (?P<member>\S+) and request"
        ),
    ),
    (
        "member_added",
        re.compile(
            r"^Pending dynamic member with id (?P<member>\S+) joins group (?P<group>\S+) "
            r"in (?P<state>\w+) state\. Adding to the group"
        ),
    ),
    (
        "member_added",
        re.compile(
            r"^Static member with groupInstanceId=(?P<instance>\S+) and unknown member id joins group "
            r"(?P<group>\S+) in (?P<state>\w+) state\. "
            r"Created a new member id (?P<member>\S+) for this member"
        ),
    ),
    (
        "static_member_replaced",
        re.compile(
            r"^Static member with groupInstanceId=(?P<instance>\S+) and unknown member id joins group "
            r"(?P<group>\S+) in (?P<state>\w+) state\. Replacing previously mapped member (?P<member>\S+) "
        ),
    ),
    (
        "pending_expired",
        re.compile(
            r"^Pending member (?P<member>\S+) in group (?P<group>\S+) has been removed after session timeout"
        ),
    ),
    ("groups_deleted", re.compile(r"^The following groups were deleted: (?P<groups>.*?)\. A total of")),
    (
        "simple_group_created",
        re.compile(r"^\[GroupId (?P<group>\S+)\] Creating a simple consumer group"),
    ),
    ("group_epoch", re.compile(r"^\[GroupId (?P<group>\S+)\] Bumped group epoch to (?P<epoch>\d+)")),
    (
        "target_assignment",
        re.compile(
            r"^\[GroupId (?P<group>\S+)\] Computed a new target assignment for epoch (?P<epoch>\d+)"
            r"(?: with '(?P<assignor>[^']*)' assignor)?"
        ),
    ),
    (
        "consumer_member_joined",
        re.compile(
            r"^\[GroupId (?P<group>\S+)\] Member (?P<member>\S+) joins the (?P<kind>consumer|share) group"
        ),
    ),
    (
        "consumer_member_left",
        re.compile(
            r"^\[GroupId (?P<group>\S+)\] Member (?P<member>\S+) left the (?P<kind>consumer|share) group"
        ),
    ),
    (
        "consumer_member_fenced",
        re.compile(
            r"^\[GroupId (?P<group>\S+)\] Member (?P<member>\S+) fenced from the group"
            r"(?: because (?P<reason>.*))?"
        ),
    ),
]


@dataclass(slots=True, frozen=True)
class BrokerLogEvent:
    """One group-coordinator log line. `kind` is one of the pattern names above."""

    ts: int
    group: str
    kind: str
    generation: int | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    reason: str | None = None
    member_count: int | None = None
    epoch: int | None = None
    assignor: str | None = None
    state: str | None = None  # the state the line names (the group's state when the message was logged)
    groups: tuple[str, ...] = ()  # groups_deleted: every group the line names
    share: bool = False  # the line names a share group (KIP-932)
    source = "broker_log"


def assignor_name(logged: str | None) -> str | None:
    """The assignor's name as clients and describes spell it: share groups' coordinator logs the
    assignor object ('org.apache.kafka.coordinator.group.assignor.SimpleAssignor@4d72eff3')."""
    if logged is None or "." not in logged:
        return logged
    cls = logged.split("@", 1)[0].rsplit(".", 1)[-1]
    return cls.removesuffix("Assignor").lower() or logged


def parse_timestamp(stamp: str, tz: timezone = UTC) -> int:
    """log4j's `yyyy-MM-dd HH:mm:ss,SSS` (the broker's local time; UTC unless told) -> epoch ms."""
    try:
        naive = datetime.strptime(stamp.replace("T", " ").replace(".", ","), "%Y-%m-%d %H:%M:%S,%f")
    except ValueError as exc:
        raise EvidenceError(f"bad broker log timestamp {stamp!r}") from exc
    return int(naive.replace(tzinfo=tz).timestamp() * 1000)


# Kafka's generation ids, epochs and member counts are Java ints. A line with a number past one was
# not written by a coordinator: refused (a dead letter) rather than handed to the model, whose typed
# columns cannot hold it and which fills in the generations a jump skipped (issue 32).
_JAVA_INT = 2**31


def _java_int(d: dict[str, str | None], name: str, line: str) -> int | None:
    text = d.get(name)
    if text is None:
        return None
    # the length first: int() of a huge run of digits is slow, then refused past 4300 digits
    n = int(text) if len(text.lstrip("-")) <= 10 else _JAVA_INT
    if not -_JAVA_INT <= n < _JAVA_INT:
        raise EvidenceError(
            f"{name} {text[:24]}{'...' if len(text) > 24 else ''} is past a Java int: {line[:200]!r}"
        )
    return n


def parse_broker_log_line(line: str, tz: timezone = UTC) -> BrokerLogEvent | None:
    """A group-coordinator line -> BrokerLogEvent; any other server.log line -> None.
    A line that claims to be a coordinator line but is broken raises EvidenceError."""
    line = line.rstrip("\r\n")
    m = _PREFIX.match(line)
    if not m:
        return None
    rest = m.group(3)
    c = _COORDINATOR.match(rest)
    if not c:
        return None
    ts = parse_timestamp(m.group(1), tz)
    msg = _LOGGER_SUFFIX.sub("", c.group(1)).strip()
    msg = _PARTITION_NOTE.sub("", msg)
    for kind, pattern in _PATTERNS:
        x = pattern.match(msg)
        if not x:
            continue
        d = x.groupdict()
        groups: tuple[str, ...] = ()
        if kind == "groups_deleted":
            groups = tuple(g.strip() for g in d["groups"].split(",") if g.strip())
            if not groups:
                raise EvidenceError(f"group deletion line names no group: {line!r}")
            d["group"] = groups[0]
        reason = d.get("reason")
        if reason is not None:
            reason = reason.strip()
            if kind == "prepare":
                reason = reason.rstrip(".").strip()
        instance = d.get("instance")
        if instance is not None and instance.startswith("Some(") and instance.endswith(")"):
            instance = instance[5:-1]
        return BrokerLogEvent(
            ts=ts,
            group=d["group"],
            kind=kind,
            generation=_java_int(d, "generation", line),
            member_id=d.get("member"),
            group_instance_id=None if instance in (None, "null", "None") else instance,
            reason=reason,
            member_count=_java_int(d, "count", line),
            epoch=_java_int(d, "epoch", line),
            assignor=assignor_name(d.get("assignor")),
            state=d.get("state"),
            groups=groups,
            share=d.get("kind") == "share",
        )
    return None


_ADDING = re.compile(r"Adding new member (\S+) with group instance id (Some\([^)]*\)|[^;)\s]+)")
_LEAVE_MEMBERS = re.compile(
    r"LeaveGroup` request for \((.*?)\) members|[Rr]emoving member (\S+) on LeaveGroup"
)
_EXPIRED = re.compile(r"removing member (\S+) on heartbeat expiration")
_LEADER = re.compile(r"Leader (\S+) re-joining group")


def reason_members(reason: str) -> dict[str, list[str]]:
    """The member ids a rebalance reason names: {'joined': [...], 'left': [...], 'expired': [...]}."""
    out: dict[str, list[str]] = {"joined": [], "left": [], "expired": [], "leader": []}
    for mid, _ in _ADDING.findall(reason):
        out["joined"].append(mid)
    for many, one in _LEAVE_MEMBERS.findall(reason):
        out["left"].extend(m.strip() for m in (many or one).split(",") if m.strip())
    out["expired"].extend(_EXPIRED.findall(reason))
    out["leader"].extend(_LEADER.findall(reason))
    return out


def adding_instance_id(reason: str) -> str | None:
    """The group.instance.id of "Adding new member X with group instance id I" (4.x prints null or
    the id; 3.x prints Scala's None or Some(id))."""
    m = _ADDING.search(reason)
    if not m or m.group(2) in ("null", "None"):
        return None
    inst = m.group(2)
    return inst[5:-1] if inst.startswith("Some(") and inst.endswith(")") else inst


def cause_of_reason(reason: str | None) -> str:
    """Map a rebalance reason (KIP-800) to a groupscope cause."""
    if not reason:
        return "unknown"
    r = reason.lower()
    if "heartbeat expiration" in r or "session timeout" in r:
        return "session_timeout"
    if "poll" in r and ("interval" in r or "timeout" in r):
        return "poll_timeout"
    if "leavegroup" in r:
        return "member_left"
    if "adding new member" in r or "new member" in r:
        return "member_joined"
    if "metadata" in r or "subscription" in r or "updating" in r:
        return "metadata_change"
    if "leader" in r:
        return "leader_rejoin"
    return "unknown"


def utc_offset(hours: float) -> timezone:
    return timezone(timedelta(hours=hours))
