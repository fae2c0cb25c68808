"""What the Admin poller asks Kafka about groups: which there are (ListGroups), and what each is now
(the describes), one fetcher per Kafka API. Each returns describe lines (admin_lines.py's shapes)
and, apart, the groups an ACL refused with why: the poller decides what to send. A group's error
never stops the others; a failed call is warned once, until a call succeeds again.

- `list_groups`: librdkafka's ListGroups for consumer and classic groups, and the protocol client's
  ListGroups v5 with a types filter for share and streams groups, which librdkafka 2.16 does not list.
- `describe_classic`: DescribeGroups through the protocol client, many groups a request to each
  coordinator (librdkafka asks one group a request: at 50,000 groups a first poll's describes took
  40 s).
- `librdkafka_describes`: DescribeConsumerGroups through librdkafka, for KIP-848 groups and what the
  protocol client could not describe.
- `Kip848Blocks`: ConsumerGroupDescribe, the epochs, subscriptions and target assignments librdkafka
  does not return, added to KIP-848 groups' lines as their "broker" block.
- `ModernDescriber`: ShareGroupDescribe and StreamsGroupDescribe, the only describe of those kinds.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from collectors.pipeline.admin_lines import (
    AUTHORIZATION_FAILED,
    classic_describe_json,
    denial,
    describe_json,
    enum_name,
    share_describe_json,
    streams_describe_json,
)
from collectors.pipeline.admin_link import ProtocolLink, say_failure

log = logging.getLogger("groupscope.admin")

Lines = dict[str, dict[str, Any]]  # group -> its describe line
Refused = dict[str, str]  # group -> why an ACL withholds it


def _now_ms() -> int:
    return int(time.time() * 1000)


def _refusal(error: str, message: str | None) -> str:
    return f"{error}: {message or 'not authorized'}"


@dataclass
class Listing:
    """The groups of the cluster at one poll. `groups`: every group DescribeGroups, DescribeConsumer-
    Groups or StreamsGroupDescribe describes and OffsetFetch reads (all but share groups), sorted;
    `share`: the KIP-932 share groups (ShareGroupDescribe; they commit no offsets), sorted; `streams`:
    the KIP-1071 streams groups among `groups`; `types`: each group's type ("classic", "consumer",
    "share", "streams"); `states`: each group's state as ListGroups spells it, upper-cased as
    librdkafka does ("STABLE", "EMPTY"; "" when not known)."""

    groups: list[str] = field(default_factory=list)
    share: list[str] = field(default_factory=list)
    streams: set[str] = field(default_factory=set)
    types: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)


def list_groups(
    admin: Any, link: ProtocolLink, known_share: set[str], known_streams: set[str], timeout_s: float
) -> Listing:
    """Every group of the cluster (see Listing). `known_share` and `known_streams`: the last poll's,
    which stay listed (state unknown, so they are described, which says whether they are still
    there) when the typed ListGroups has no answer from some broker."""
    listing = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout_s + 5)
    if listing.errors and not listing.valid:
        raise RuntimeError(f"list groups: {listing.errors[0]}")
    valid = [g for g in listing.valid if g.group_id]
    types = {g.group_id: enum_name(getattr(g, "type", None)).lower() for g in valid}
    states = {g.group_id: enum_name(g.state) for g in valid}
    # share groups (KIP-932) are not consumer groups to DescribeConsumerGroups (nor to OffsetFetch:
    # they commit no offsets); a streams group is described by StreamsGroupDescribe, and its
    # committed offsets are fetched as any group's
    share_states, streams_states = _list_typed_groups(link, known_share, known_streams, timeout_s)
    share = sorted({g for g, t in types.items() if t == "share"} | set(share_states))
    groups = sorted({g for g, t in types.items() if t != "share"} | set(streams_states))
    for g in streams_states:
        types[g] = "streams"
    states.update(streams_states)
    states.update(share_states)
    return Listing(groups, share, set(streams_states), types, states)


def _list_typed_groups(
    link: ProtocolLink, known_share: set[str], known_streams: set[str], timeout_s: float
) -> tuple[dict[str, str], dict[str, str]]:
    """(each share group, each streams group) the cluster lists -> its state in ListGroups' spelling
    upper-cased. A broker that did not answer, or a failed call: the known groups of each kind stay
    listed, state unknown. None at all when the protocol client cannot use the settings (librdkafka
    lists neither kind)."""
    from collectors.kafka_protocol.connection import Deadline

    if link.unusable:
        return {}, {}
    try:
        listed, missing = link.client(timeout_s).list_typed_groups(("share", "streams"), Deadline(timeout_s))
    except Exception as e:
        log.debug("ListGroups (share, streams) failed: %s", e)
        link.close()
        listed, missing = {}, [-1]
    share = {g: state.upper() for g, (kind, state) in listed.items() if kind == "share"}
    streams = {g: state.upper() for g, (kind, state) in listed.items() if kind == "streams"}
    if missing:
        for known, out in ((known_share, share), (known_streams, streams)):
            for g in known - set(listed):
                out[g] = ""
    return share, streams


def describe_classic(
    link: ProtocolLink, groups: list[str], types: dict[str, str], timeout_s: float
) -> tuple[Lines, Refused]:
    """The describe line of each classic group described through DescribeGroups, and the groups an
    ACL withholds. Groups ListGroups gives as KIP-848 ones are left out (their describe is
    ConsumerGroupDescribe's), as is any group it could not describe (another type by now, a
    coordinator still moving) and, when the call fails or the client cannot use the settings, every
    group: the caller describes those through librdkafka."""
    from collectors.kafka_protocol import GroupError, Node
    from collectors.kafka_protocol.connection import Deadline

    classic = [g for g in groups if types.get(g) != "consumer"]
    if not classic or link.unusable:
        return {}, {}
    coordinators: dict[str, Node] = {}
    try:
        got = link.client(timeout_s).describe_groups(classic, Deadline(timeout_s), coordinators)
    except Exception as e:
        log.debug("DescribeGroups failed, describing through librdkafka: %s", e)
        link.close()
        return {}, {}
    # stamped when answered: a snapshot shows what the coordinator wrote up to then, and must not
    # sort before those records (evidence_order.py)
    answered = _now_ms()
    lines: Lines = {}
    refused: Refused = {}
    for g in classic:
        v = got.get(g)
        if isinstance(v, GroupError):
            if v.code in AUTHORIZATION_FAILED:
                refused[g] = _refusal(v.as_block()["error"], v.message)
            else:
                log.debug("DescribeGroups %s: %s", g, v.as_block()["error"])
        elif v is not None:
            lines[g] = classic_describe_json(v, coordinators.get(g), answered)
    return lines, refused


# one group's answer from librdkafka: (group, its describe line or None, why an ACL refused it or None)
Described = tuple[str, dict[str, Any] | None, str | None]


def librdkafka_describes(
    admin: Any, groups: list[str], chunk: int, in_flight: int, timeout_s: float
) -> Iterator[list[Described]]:
    """DescribeConsumerGroups through librdkafka, `chunk` groups a request, a new request sent while
    fewer than `in_flight` groups' are outstanding; each request's answers in turn, each line stamped
    when answered (see describe_classic)."""
    pending: collections.deque[dict[str, Any]] = collections.deque()
    for i in range(0, len(groups), chunk):
        pending.append(admin.describe_consumer_groups(groups[i : i + chunk], request_timeout=timeout_s))
        if len(pending) * chunk >= in_flight:
            yield _answers(pending.popleft(), timeout_s)
    while pending:
        yield _answers(pending.popleft(), timeout_s)


def _answers(futs: dict[str, Any], timeout_s: float) -> list[Described]:
    out: list[Described] = []
    for g, f in futs.items():
        try:
            d = f.result(timeout_s + 5)
        except Exception as e:  # one group's error never stops the poll
            log.debug("describe %s: %s", g, e)
            out.append((g, None, denial(e)))
            continue
        out.append((g, describe_json(d, _now_ms()), None))
    return out


class Kip848Blocks:
    """ConsumerGroupDescribe for KIP-848 groups' lines (collectors.kafka_protocol), one request per
    coordinator. A failure leaves the lines without their block; it is warned once, until a call
    succeeds again, rather than at every poll (a broker without the API would fail every time)."""

    def __init__(self) -> None:
        self.failing = False

    def add(self, kafka: dict[str, Any], docs: list[dict[str, Any]], timeout_s: float) -> None:
        """Each line of `docs` gets its group's "broker" block, and is stamped as of that answer."""
        if not docs:
            return
        from collectors.kafka_protocol import describe_consumer_groups_kip848

        try:
            blocks = describe_consumer_groups_kip848(kafka, [d["group"] for d in docs], timeout_s)
        except Exception as e:
            self.failing = say_failure(
                self.failing,
                "KIP-848 epochs not available (ConsumerGroupDescribe): %s",
                "ConsumerGroupDescribe still failing: %s",
                e,
            )
            return
        self.failing = False
        answered = _now_ms()
        for doc in docs:
            block = blocks.get(doc["group"])
            if block is not None and "error" not in block:
                doc["broker"] = block
                # the line is as of its later answer: epochs bumped between the two describes show
                doc["ts"] = max(doc["ts"], answered)
            elif block is not None:  # e.g. the group went away between the two describes
                log.debug("ConsumerGroupDescribe %s: %s", doc["group"], block["error"])


class ModernDescriber:
    """ShareGroupDescribe and StreamsGroupDescribe over the kept protocol client, one request per
    coordinator, lines stamped when answered. A group that went away since it was listed is left
    out; a failed call leaves them all out, warned once per kind until a call succeeds again
    (settings the protocol client cannot use, such as SASL GSSAPI, fail every time)."""

    # kind -> the client's call, the line it makes, the API's name for the warnings
    KINDS: ClassVar[dict[str, tuple[str, Any, str]]] = {
        "share": ("describe_share", share_describe_json, "ShareGroupDescribe"),
        "streams": ("describe_streams", streams_describe_json, "StreamsGroupDescribe"),
    }

    def __init__(self) -> None:
        self.failing: set[str] = set()  # the kinds whose describe failed last time (warned already)

    def describe(
        self, link: ProtocolLink, groups: list[str], kind: str, timeout_s: float
    ) -> tuple[Lines, Refused]:
        if not groups:
            return {}, {}
        from collectors.kafka_protocol.connection import Deadline

        call, to_line, api = self.KINDS[kind]
        coordinators: dict[str, Any] = {}
        try:
            blocks = getattr(link.client(timeout_s), call)(groups, Deadline(timeout_s), coordinators)
        except Exception as e:
            first, again = f"{kind} groups not described ({api}): %s", f"{api} still failing: %s"
            say_failure(kind in self.failing, first, again, e)
            self.failing.add(kind)
            link.close()
            return {}, {}
        self.failing.discard(kind)
        answered = _now_ms()
        lines: Lines = {}
        refused: Refused = {}
        for g in groups:
            block = blocks.get(g)
            if block is None:
                continue
            if "error" in block:
                log.debug("%s %s: %s", api, g, block["error"])
                if block.get("error_code") in AUTHORIZATION_FAILED:
                    refused[g] = _refusal(block["error"], block.get("error_message"))
                continue
            lines[g] = to_line(g, block, answered, coordinators.get(g))
        return lines, refused
