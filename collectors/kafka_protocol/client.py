"""The public calls: find group coordinators, resolve topic ids, describe KIP-848 groups with
ConsumerGroupDescribe, which librdkafka does not expose with its epochs, list and describe KIP-932
share groups (ListGroups v5, ShareGroupDescribe v1, Kafka 4.1+), which librdkafka does not expose at
all, and fetch many groups' committed offsets per request (OffsetFetch v8+), which librdkafka does
one group a request, and which crashes librdkafka 2.16 when a coordinator moves or loads
(confluentinc/librdkafka#5040).

`describe_consumer_groups_kip848(conf, group_ids, timeout_s)` returns, per group, the `"broker"`
block of a describe.jsonl line (see coordinator_model/evidence.py `from_describe_json`):

    {"state", "group_epoch", "assignment_epoch", "assignor",
     "members": [{"member_id", "member_epoch", "instance_id", "client_id", "member_type",
                  "subscribed": [topic, ...], "assignment": [[topic, p], ...],
                  "target_assignment": [[topic, p], ...]}]}

or, for a group the broker answered with an error (GROUP_ID_NOT_FOUND for an unknown group and for
a classic group, GROUP_AUTHORIZATION_FAILED, a coordinator that could not be reached, ...):

    {"error": "GROUP_ID_NOT_FOUND", "error_code": 69, "error_message": "..."}

One group's error never fails the others. Whole-call failures (no broker reachable, wrong
password, a broker without ConsumerGroupDescribe) raise a KafkaProtocolError.

One FindCoordinator (v4+, all groups at once) and then one ConsumerGroupDescribe per coordinator,
all coordinators' requests in flight together; topic names come from one Metadata request by topic
id (v12+), falling back to the names the coordinator put in its answer.

`describe_share_groups(conf, group_ids, timeout_s)` (`KafkaProtocolClient.describe_share`) returns
the same blocks for share groups, their members without instance id, member type or target
assignment, with "rack_id" and "client_host" (ShareGroupDescribe has them), one ShareGroupDescribe
per coordinator. A share group commits no offsets: it is not OffsetFetch'ed. librdkafka lists no
share groups either: `KafkaProtocolClient.list_share_groups()` does (ListGroups v5, TypesFilter
["share"], to every broker of one Metadata answer). A share group's progress is its share-partition
start offsets: `KafkaProtocolClient.describe_share_group_offsets(group_ids)` returns, per group,
[(topic, partition, start offset, lag), ...] or its GroupError (DescribeShareGroupOffsets v0-1, many
groups a request to their coordinator, as OffsetFetch).

`KafkaProtocolClient.fetch_committed(group_ids)` returns, per group, its committed offsets
[(topic, partition, offset), ...] (sorted, offset -1 left out) or its GroupError, the same way: one
FindCoordinator, then OffsetFetch requests of up to 500 groups to each coordinator; groups answered
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE (or whose coordinator
could not be reached) find their coordinator again and are asked again until the call's deadline.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from collectors.kafka_protocol.connection import BrokerConnection, ClientSettings, Deadline
from collectors.kafka_protocol.errors import (
    NETWORK_EXCEPTION,
    RETRIABLE_GROUP_ERRORS,
    AuthenticationError,
    BrokerError,
    ConfigError,
    KafkaConnectionError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_name,
)
from collectors.kafka_protocol.messages import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FIND_COORDINATOR,
    KEY_TYPE_GROUP,
    LIST_GROUPS,
    METADATA,
    OFFSET_FETCH,
    SHARE_GROUP_DESCRIBE,
    STREAMS_GROUP_DESCRIBE,
    Api,
)

log = logging.getLogger("groupscope.kafka_protocol")

MAX_ROUNDS = 5  # FindCoordinator + describe rounds for groups whose coordinator moved or is loading
CHUNK_GROUPS = 500  # groups per request: a response stays a few hundred kB even for busy groups
# Requests outstanding on one connection. Kafka serves a connection's requests one at a time, so more
# only hides the round trip; and a client that writes many requests without reading the answers can
# deadlock with a broker that stops reading while its answer does not fit in the socket buffers.
IN_FLIGHT_PER_BROKER = 2
MAX_BACKOFF_S = 1.0  # between retry rounds (a coordinator loading its partition takes seconds)

Committed = list[tuple[str, int, int]]  # (topic, partition, committed offset), sorted
# (topic, partition, share-partition start offset, the broker's lag or -1), sorted; start offset -1:
# the share-partition is not initialised yet
StartOffsets = list[tuple[str, int, int, int]]


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True)
class GroupError:
    code: int
    message: str | None

    def as_block(self) -> dict[str, Any]:
        return {"error": error_name(self.code), "error_code": self.code, "error_message": self.message}


def _described_groups(answer: dict[str, Any]) -> Iterator[tuple[str, int, str | None, Any]]:
    """(group, error code, error message, the group's struct) of a ConsumerGroupDescribe,
    ShareGroupDescribe, DescribeShareGroupOffsets or DescribeGroups answer (DescribeGroups has an
    error message from v6 on only)."""
    for group in answer["groups"]:
        yield group["group_id"], group["error_code"], group.get("error_message"), group


class KafkaProtocolClient:
    """Connections to the brokers of one cluster, opened on first use and kept until `close()`.
    Not thread-safe: one caller at a time."""

    def __init__(self, conf: Mapping[str, Any], timeout_s: float = 10.0) -> None:
        self.settings = ClientSettings.from_conf(conf)
        self.timeout_s = timeout_s
        self._conns: dict[tuple[str, int], BrokerConnection] = {}

    def __enter__(self) -> KafkaProtocolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    # -- connections -------------------------------------------------------------------------------
    def _connect(
        self, host: str, port: int, deadline: Deadline, node_id: int | None = None
    ) -> BrokerConnection:
        conn = self._conns.get((host, port))
        if conn is None or not conn.is_open:
            conn = BrokerConnection(self.settings, host, port, node_id).open(deadline)
            self._conns[(host, port)] = conn
        return conn

    def any_broker(self, deadline: Deadline) -> BrokerConnection:
        """An open connection to some broker: one already open, else the bootstrap servers in turn."""
        for conn in self._conns.values():
            if conn.is_open:
                return conn
        failures = []
        for host, port in self.settings.bootstrap:
            try:
                return self._connect(host, port, deadline)
            except (AuthenticationError, ConfigError, UnsupportedVersionError):
                raise  # the same on every broker of the cluster: trying the next one only hides it
            except KafkaConnectionError as exc:
                failures.append(str(exc))
        raise KafkaConnectionError("no bootstrap server reachable: " + "; ".join(failures))

    def _request_any(self, api: Api, body: dict[str, Any], deadline: Deadline) -> dict[str, Any]:
        """`api` answered by any broker.

        A connection kept from an earlier call may lead to a broker that restarted since: it fails
        (and closes itself) on first use, and the next one, or a new bootstrap connection, is tried.
        Each failure closes a kept connection, so this ends with a new one, whose failure is final."""
        while True:
            kept = [c for c in self._conns.values() if c.is_open]
            conn = self.any_broker(deadline)
            try:
                return conn.request(api, body, deadline)
            except KafkaTimeoutError:
                raise
            except KafkaConnectionError as exc:
                if conn not in kept or conn.is_open:
                    raise
                log.debug("%s via %s failed, trying another broker: %s", api.name, conn.address, exc)

    # -- FindCoordinator ---------------------------------------------------------------------------
    def find_coordinators(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> tuple[dict[str, Node], dict[str, GroupError]]:
        """(coordinator of each group, error of each group whose coordinator is not known)."""
        deadline = deadline or Deadline(self.timeout_s)
        keys = sorted(set(group_ids))
        if not keys:
            return {}, {}
        body = {"key_type": KEY_TYPE_GROUP, "coordinator_keys": keys}
        answer = self._request_any(FIND_COORDINATOR, body, deadline)
        nodes: dict[str, Node] = {}
        errors: dict[str, GroupError] = {}
        for c in answer["coordinators"]:
            if c["error_code"]:
                errors[c["key"]] = GroupError(c["error_code"], c["error_message"])
            else:
                nodes[c["key"]] = Node(c["node_id"], c["host"], c["port"])
        for key in keys:
            if key not in nodes and key not in errors:
                errors[key] = GroupError(-1, "missing from the FindCoordinator response")
        return nodes, errors

    # -- Metadata ----------------------------------------------------------------------------------
    def topic_names(self, topic_ids: Iterable[str], deadline: Deadline | None = None) -> dict[str, str]:
        """Topic id -> name for the ids the cluster knows (one Metadata request by topic id)."""
        deadline = deadline or Deadline(self.timeout_s)
        ids = sorted(set(topic_ids))
        if not ids:
            return {}
        answer = self.any_broker(deadline).request(
            METADATA,
            {
                "topics": [{"topic_id": t, "name": None} for t in ids],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
            deadline,
        )
        if answer.get("error_code"):
            raise BrokerError("Metadata", answer["error_code"])
        return {t["topic_id"]: t["name"] for t in answer["topics"] if not t["error_code"] and t["name"]}

    def brokers(self, deadline: Deadline | None = None) -> list[Node]:
        """The cluster's brokers (one Metadata request for no topic)."""
        deadline = deadline or Deadline(self.timeout_s)
        body = {
            "topics": [],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        answer = self._request_any(METADATA, body, deadline)
        return sorted(
            (Node(b["node_id"], b["host"], b["port"]) for b in answer["brokers"]), key=lambda n: n.node_id
        )

    # -- ListGroups --------------------------------------------------------------------------------
    def list_share_groups(self, deadline: Deadline | None = None) -> tuple[dict[str, str], list[int]]:
        """(each KIP-932 share group -> its state as ListGroups gives it, the brokers whose answer is
        missing): `list_typed_groups` of type share."""
        typed, missing = self.list_typed_groups(("share",), deadline)
        return {g: state for g, (_, state) in typed.items()}, missing

    def list_typed_groups(
        self, types: Iterable[str], deadline: Deadline | None = None
    ) -> tuple[dict[str, tuple[str, str]], list[int]]:
        """(each group of one of `types` ("share", "streams") -> (its type, its state as ListGroups
        gives it ("Stable", "Empty")), the brokers whose answer is missing). ListGroups v5 with
        TypesFilter `types` to every broker
        (each lists the groups it coordinates), all in flight at once. A broker without ListGroups v5
        has no share groups (they came with Kafka 4.0, v5 with 3.7): it lists none. A broker that
        could not be reached or answered with an error (COORDINATOR_LOAD_IN_PROGRESS, ...) is in the
        second list: its groups are not known this time."""
        deadline = deadline or Deadline(self.timeout_s)
        wanted = [t.lower() for t in types]
        body = {"states_filter": [], "types_filter": wanted}
        pending = []
        missing: list[int] = []
        for node in self.brokers(deadline):
            # a kept connection to a broker that restarted since fails (and closes itself) on first
            # use: then a new one is tried, whose failure is final
            for attempt in (1, 2):
                try:
                    conn = self._connect(node.host, node.port, deadline, node.node_id)
                    pending.append((node, conn, *conn.send(LIST_GROUPS, body, deadline)))
                except UnsupportedVersionError:
                    break
                except (AuthenticationError, ConfigError):
                    raise
                except KafkaConnectionError as exc:
                    if attempt == 1 and not isinstance(exc, KafkaTimeoutError):
                        continue
                    log.debug("ListGroups to broker %d: %s", node.node_id, exc)
                    missing.append(node.node_id)
                break
        out: dict[str, tuple[str, str]] = {}
        for node, conn, cid, version in pending:
            try:
                answer = conn.receive(LIST_GROUPS, version, cid, deadline)
            except KafkaConnectionError as exc:
                log.debug("ListGroups from broker %d: %s", node.node_id, exc)
                missing.append(node.node_id)
                continue
            if answer["error_code"]:
                log.debug("ListGroups from broker %d: %s", node.node_id, error_name(answer["error_code"]))
                missing.append(node.node_id)
                continue
            for g in answer["groups"]:
                if g["group_type"].lower() in wanted:
                    out[g["group_id"]] = (g["group_type"].lower(), g["group_state"])
        return out, sorted(missing)

    # -- requests to group coordinators -----------------------------------------------------------
    def _per_coordinator(
        self,
        api: Api,
        group_ids: Iterable[str],
        body_of: Callable[[list[str]], dict[str, Any]],
        groups_of: Callable[[dict[str, Any]], Iterable[tuple[str, int, str | None, Any]]],
        deadline: Deadline,
        max_rounds: int | None = None,
        chunk: int = CHUNK_GROUPS,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, Any | GroupError]:
        """Send `api` to each group's coordinator, `chunk` groups a request, and return what
        `groups_of(answer)` says of each group: (group, error code, error message, value).

        One FindCoordinator for all groups, then every coordinator's requests at once (up to
        IN_FLIGHT_PER_BROKER each). Groups whose coordinator moved, is loading or could not be
        reached go round again (FindCoordinator, request) until `max_rounds` or the deadline, when
        they keep their last error. Whole-call failures raise: no broker reachable, authentication,
        a broker without the API."""
        results: dict[str, Any | GroupError] = {}
        todo = sorted(set(group_ids))
        backoff = 0.05
        round_no = 0
        while todo:
            round_no += 1
            retry: dict[str, GroupError] = {}
            try:
                nodes, errors = self.find_coordinators(todo, deadline)
            except KafkaConnectionError as exc:
                if round_no == 1:
                    raise  # nothing answered at all: the whole call failed
                # A retry round out of time or out of brokers: what earlier rounds got still stands.
                results.update(dict.fromkeys(todo, GroupError(NETWORK_EXCEPTION, f"FindCoordinator: {exc}")))
                break
            for g, err in errors.items():
                (retry if err.code in RETRIABLE_GROUP_ERRORS else results)[g] = err
            by_node: dict[Node, list[str]] = {}
            for g, node in nodes.items():
                by_node.setdefault(node, []).append(g)
            if coordinators is not None:  # the caller wants to know who answered for each group
                coordinators.update(nodes)
            queues: dict[BrokerConnection, collections.deque[list[str]]] = {}
            for node, groups in sorted(by_node.items(), key=lambda kv: kv[0].node_id):
                try:
                    conn = self._connect(node.host, node.port, deadline, node.node_id)
                except (AuthenticationError, ConfigError, UnsupportedVersionError):
                    raise
                except KafkaConnectionError as exc:  # e.g. the coordinator just went down: find it again
                    retry.update(
                        dict.fromkeys(
                            groups, GroupError(NETWORK_EXCEPTION, f"coordinator {node.node_id}: {exc}")
                        )
                    )
                    continue
                chunks = queues.setdefault(conn, collections.deque())
                chunks.extend(groups[i : i + chunk] for i in range(0, len(groups), chunk))
            for g, value in self._exchange(api, queues, body_of, groups_of, deadline, retry):
                results[g] = value
            if not retry:
                break
            out_of_time = deadline.end - time.monotonic() < 2 * backoff
            if (max_rounds is not None and round_no >= max_rounds) or out_of_time:
                results.update(retry)  # give up: report the last error of each
                break
            log.debug(
                "%s: %d group(s) to retry (%s)",
                api.name,
                len(retry),
                error_name(next(iter(retry.values())).code),
            )
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            todo = sorted(retry)
        return results

    def _exchange(
        self,
        api: Api,
        queues: dict[BrokerConnection, collections.deque[list[str]]],
        body_of: Callable[[list[str]], dict[str, Any]],
        groups_of: Callable[[dict[str, Any]], Iterable[tuple[str, int, str | None, Any]]],
        deadline: Deadline,
        retry: dict[str, GroupError],
    ) -> Iterator[tuple[str, Any | GroupError]]:
        """Every chunk of `queues` sent on its connection and answered: (group, value or final
        error); groups to go round again are added to `retry`."""
        in_flight: collections.deque[tuple[BrokerConnection, list[str], int, int]] = collections.deque()

        def lost(conn: BrokerConnection, groups: list[str], exc: Exception) -> None:
            # The connection is closed now: what was queued or in flight on it goes round again.
            err = GroupError(NETWORK_EXCEPTION, f"coordinator at {conn.address}: {exc}")
            gone = [groups, *queues.pop(conn, ())]
            gone += [gs for c, gs, *_ in in_flight if c is conn]
            in_flight_left = [x for x in in_flight if x[0] is not conn]
            in_flight.clear()
            in_flight.extend(in_flight_left)
            for gs in gone:
                retry.update(dict.fromkeys(gs, err))

        def send_next(conn: BrokerConnection) -> None:
            groups = queues[conn].popleft()
            try:
                in_flight.append((conn, groups, *conn.send(api, body_of(groups), deadline)))
            except KafkaConnectionError as exc:
                lost(conn, groups, exc)

        for conn in list(queues):
            for _ in range(IN_FLIGHT_PER_BROKER):
                if queues.get(conn):
                    send_next(conn)
        # Oldest first: that keeps each connection's answers in the order its requests went out.
        while in_flight:
            conn, groups, cid, version = in_flight.popleft()
            try:
                answer = conn.receive(api, version, cid, deadline)
            except KafkaConnectionError as exc:
                lost(conn, groups, exc)
                continue
            if queues.get(conn):
                send_next(conn)
            seen = set()
            for g, code, message, value in groups_of(answer):
                seen.add(g)
                if code in RETRIABLE_GROUP_ERRORS:
                    retry[g] = GroupError(code, message)
                elif code:
                    yield g, GroupError(code, message)
                else:
                    yield g, value
            for g in groups:
                if g not in seen:
                    yield g, GroupError(-1, f"missing from the {api.name} response")

    # -- ConsumerGroupDescribe ---------------------------------------------------------------------
    def consumer_group_describe(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each group's DescribedGroup (the decoded response struct), or its error."""

        return self._per_coordinator(
            CONSUMER_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            _described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
        )

    # -- DescribeGroups (classic groups) ---------------------------------------------------------
    def describe_groups(
        self,
        group_ids: Iterable[str],
        deadline: Deadline | None = None,
        coordinators: dict[str, Node] | None = None,
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each classic group's DescribedGroup (DescribeGroups v5-6, the decoded response struct, its
        members' MemberMetadata and MemberAssignment left as bytes), or its error: many groups a
        request to each coordinator. A group of another type (KIP-848, share) or none at all is
        GROUP_ID_NOT_FOUND from v6 on, Dead before. `coordinators` gets each group's coordinator."""

        return self._per_coordinator(
            DESCRIBE_GROUPS,
            group_ids,
            lambda groups: {"groups": groups, "include_authorized_operations": False},
            _described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            coordinators=coordinators,
        )

    # -- ShareGroupDescribe (KIP-932) -------------------------------------------------------------
    def share_group_describe(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each share group's DescribedGroup (ShareGroupDescribe v1, the decoded response struct), or
        its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another type)."""

        return self._per_coordinator(
            SHARE_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            _described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
        )

    def describe_share(self, group_ids: Iterable[str], deadline: Deadline | None = None) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each share group: the KIP-848 block's shape
        (see the module docstring), its members without instance id, member type or target
        assignment (a share group has none: members take their partitions at once)."""
        deadline = deadline or Deadline(self.timeout_s)
        described = self.share_group_describe(group_ids, deadline)
        ids = {
            tp["topic_id"]
            for d in described.values()
            if isinstance(d, dict)
            for m in d["members"]
            for tp in m["assignment"]["topic_partitions"]
        }
        try:
            names = self.topic_names(ids, deadline)
        except (UnsupportedVersionError, BrokerError) as exc:
            log.debug("topic ids not resolved through Metadata: %s", exc)
            names = {}
        return {
            g: d.as_block() if isinstance(d, GroupError) else share_broker_block(d, names)
            for g, d in described.items()
        }

    # -- StreamsGroupDescribe (KIP-1071) ----------------------------------------------------------
    def streams_group_describe(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each streams group's DescribedGroup (StreamsGroupDescribe v0, the decoded response struct),
        or its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another type)."""

        return self._per_coordinator(
            STREAMS_GROUP_DESCRIBE,
            group_ids,
            lambda groups: {"group_ids": groups, "include_authorized_operations": False},
            _described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
        )

    def describe_streams(self, group_ids: Iterable[str], deadline: Deadline | None = None) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each streams group (`streams_broker_block`)."""
        described = self.streams_group_describe(group_ids, deadline)
        return {
            g: d.as_block() if isinstance(d, GroupError) else streams_broker_block(d)
            for g, d in described.items()
        }

    # -- DescribeShareGroupOffsets (KIP-932) ------------------------------------------------------
    def describe_share_group_offsets(
        self,
        groups: Iterable[str] | Mapping[str, Mapping[str, Iterable[int]] | None],
        deadline: Deadline | None = None,
        chunk: int = CHUNK_GROUPS,
    ) -> dict[str, StartOffsets | GroupError]:
        """Each share group's share-partition start offsets, [(topic, partition, start offset, lag),
        ...] sorted, or its error (GROUP_ID_NOT_FOUND for an unknown group and for a group of another
        type, GROUP_AUTHORIZATION_FAILED, ...). `groups`: group ids (every topic-partition the group
        has share-partition state for: Topics null), or {group: {topic: [partition, ...]} or None}.

        A start offset of -1: the share-partition is not initialised (no record delivered yet). The
        lag is the broker's (DescribeShareGroupOffsets v1, KIP-1226), -1 when it has none (v0: Kafka
        4.1/4.2). Partitions answered with an error (TOPIC_AUTHORIZATION_FAILED, ...) are left out.
        DescribeShareGroupOffsets v0-1, `chunk` groups a request to their coordinator, retried as
        `fetch_committed` is when a coordinator moved or is loading."""
        wanted: dict[str, Mapping[str, Iterable[int]] | None] = (
            dict(groups) if isinstance(groups, Mapping) else dict.fromkeys(groups)
        )

        def topics(g: str) -> list[dict[str, Any]] | None:
            asked = wanted.get(g)
            if asked is None:
                return None
            return [{"topic_name": t, "partitions": sorted(set(ps))} for t, ps in sorted(asked.items())]

        def body(gs: list[str]) -> dict[str, Any]:
            return {"groups": [{"group_id": g, "topics": topics(g)} for g in gs]}

        fetched = self._per_coordinator(
            DESCRIBE_SHARE_GROUP_OFFSETS,
            wanted,
            body,
            _described_groups,
            deadline or Deadline(self.timeout_s),
            max_rounds=MAX_ROUNDS,
            chunk=max(1, chunk),
        )
        return {g: v if isinstance(v, GroupError) else start_offsets(v) for g, v in fetched.items()}

    # -- OffsetFetch -------------------------------------------------------------------------------
    def fetch_committed(
        self, group_ids: Iterable[str], deadline: Deadline | None = None, chunk: int = CHUNK_GROUPS
    ) -> dict[str, Committed | GroupError]:
        """Each group's committed offsets, [(topic, partition, offset), ...] sorted, partitions without
        one (offset -1) left out; an empty list for a group that has none (or that does not exist: Kafka
        answers both alike). Or the group's error (GROUP_AUTHORIZATION_FAILED, ...; NOT_COORDINATOR and
        the like only when retrying until the deadline did not get past them).

        OffsetFetch v8-9 (KIP-709), `chunk` groups a request to their coordinator, all topics of each
        group (Topics null), RequireStable false: offsets of open transactions are not waited for, as
        librdkafka's list_consumer_group_offsets does by default."""

        def body(groups: list[str]) -> dict[str, Any]:
            return {
                "groups": [
                    {"group_id": g, "member_id": None, "member_epoch": -1, "topics": None} for g in groups
                ],
                "require_stable": False,
            }

        def answers(answer: dict[str, Any]) -> Iterator[tuple[str, int, str | None, Any]]:
            for group in answer["groups"]:
                yield group["group_id"], group["error_code"], None, group

        fetched = self._per_coordinator(
            OFFSET_FETCH, group_ids, body, answers, deadline or Deadline(self.timeout_s), chunk=max(1, chunk)
        )
        return {g: v if isinstance(v, GroupError) else _committed(v) for g, v in fetched.items()}

    def describe_kip848(self, group_ids: Iterable[str], deadline: Deadline | None = None) -> dict[str, dict]:
        """The `"broker"` block (or error block) of each group: see the module docstring."""
        deadline = deadline or Deadline(self.timeout_s)
        described = self.consumer_group_describe(group_ids, deadline)
        ids = {
            tp["topic_id"]
            for d in described.values()
            if isinstance(d, dict)
            for m in d["members"]
            for a in (m["assignment"], m["target_assignment"])
            for tp in a["topic_partitions"]
        }
        try:
            names = self.topic_names(ids, deadline)
        except (UnsupportedVersionError, BrokerError) as exc:
            # The coordinator's answer carries names too; they only lack the check against Metadata.
            log.debug("topic ids not resolved through Metadata: %s", exc)
            names = {}
        return {
            g: d.as_block() if isinstance(d, GroupError) else broker_block(d, names)
            for g, d in described.items()
        }


def _committed(group: Mapping[str, Any]) -> Committed:
    out = []
    for t in group["topics"]:
        for p in t["partitions"]:
            if p["error_code"]:  # none expected with RequireStable false and all topics asked for
                log.debug(
                    "OffsetFetch %s %s-%d: %s",
                    group["group_id"],
                    t["name"],
                    p["partition_index"],
                    error_name(p["error_code"]),
                )
            elif p["committed_offset"] >= 0:
                out.append((t["name"], p["partition_index"], p["committed_offset"]))
    return sorted(out)


def start_offsets(group: Mapping[str, Any]) -> StartOffsets:
    """A decoded DescribeShareGroupOffsetsResponseGroup (no group error) -> [(topic, partition, start
    offset, lag), ...] sorted; partitions answered with an error left out (logged)."""
    out = []
    for t in group["topics"]:
        for p in t["partitions"]:
            if p["error_code"]:
                log.debug(
                    "DescribeShareGroupOffsets %s %s-%d: %s",
                    group["group_id"],
                    t["topic_name"],
                    p["partition_index"],
                    error_name(p["error_code"]),
                )
            else:
                lag = p.get("lag", -1)  # v1+ (KIP-1226)
                out.append((t["topic_name"], p["partition_index"], p["start_offset"], lag))
    return sorted(out)


def _partitions(assignment: dict[str, Any], names: Mapping[str, str]) -> list[list[Any]]:
    out = []
    for tp in assignment["topic_partitions"]:
        name = names.get(tp["topic_id"]) or tp["topic_name"]
        if not name:  # deleted since the coordinator answered: neither side knows the name any more
            continue
        out.extend([name, p] for p in tp["partitions"])
    return sorted(out)


def broker_block(group: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A decoded DescribedGroup (no error) -> the describe line's `"broker"` block."""
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "instance_id": m["instance_id"],
            "client_id": m["client_id"],
            "member_type": m.get("member_type", -1),  # v1+; -1 "unknown" as in Kafka's default
            "subscribed": sorted(m["subscribed_topic_names"]),
            "assignment": _partitions(m["assignment"], names),
            "target_assignment": _partitions(m["target_assignment"], names),
        }
        for m in group["members"]
    ]
    ids = {
        tp["topic_id"]
        for m in group["members"]
        for a in (m["assignment"], m["target_assignment"])
        for tp in (a or {}).get("topic_partitions", [])
    }
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "assignor": group["assignor_name"],
        "members": sorted(members, key=lambda m: m["member_id"]),
        # The group's records name topics by id only (Kafka 4.1+ no longer writes the
        # ConsumerGroupPartitionMetadata record that held the names): the model learns them here.
        "topic_ids": {tid: names[tid] for tid in sorted(ids) if tid in names},
    }


def share_broker_block(group: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A decoded ShareGroupDescribe DescribedGroup (no error) -> the describe line's `"broker"` block."""
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "rack_id": m["rack_id"],
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "subscribed": sorted(m["subscribed_topic_names"]),
            "assignment": _partitions(m["assignment"], names),
        }
        for m in group["members"]
    ]
    ids = {tp["topic_id"] for m in group["members"] for tp in m["assignment"]["topic_partitions"]}
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "assignor": group["assignor_name"],
        "members": sorted(members, key=lambda m: m["member_id"]),
        "topic_ids": {tid: names[tid] for tid in sorted(ids) if tid in names},
    }


def _tasks(tasks: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    """TaskIds -> [[subtopology id, [partition, ...]], ...], sorted (Kafka names a task
    "<subtopology>_<partition>")."""
    return sorted([t["subtopology_id"], sorted(t["partitions"])] for t in tasks if t["partitions"])


def streams_broker_block(group: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded StreamsGroupDescribe DescribedGroup (no error) -> the describe line's `"broker"` block:
    the group's state and epochs, its topology (null until a member brought one; subtopologies null
    while it is not ready: source topics missing or wrongly partitioned) and its members with their
    current and target tasks."""
    topology = group["topology"]
    subs = (topology or {}).get("subtopologies")
    members = [
        {
            "member_id": m["member_id"],
            "member_epoch": m["member_epoch"],
            "instance_id": m["instance_id"],
            "rack_id": m["rack_id"],
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "process_id": m["process_id"],
            "topology_epoch": m["topology_epoch"],
            "active": _tasks(m["assignment"]["active_tasks"]),
            "standby": _tasks(m["assignment"]["standby_tasks"]),
            "warmup": _tasks(m["assignment"]["warmup_tasks"]),
            "target_active": _tasks(m["target_assignment"]["active_tasks"]),
            "target_standby": _tasks(m["target_assignment"]["standby_tasks"]),
            "target_warmup": _tasks(m["target_assignment"]["warmup_tasks"]),
            "is_classic": m["is_classic"],
        }
        for m in group["members"]
    ]
    return {
        "state": group["group_state"],
        "group_epoch": group["group_epoch"],
        "assignment_epoch": group["assignment_epoch"],
        "topology": None
        if topology is None
        else {
            "epoch": topology["epoch"],
            "subtopologies": None
            if subs is None
            else [
                {
                    "id": st["subtopology_id"],
                    "source_topics": sorted(st["source_topics"]),
                    "repartition_sink_topics": sorted(st["repartition_sink_topics"]),
                    "changelog_topics": sorted(t["name"] for t in st["state_changelog_topics"]),
                    "repartition_source_topics": sorted(t["name"] for t in st["repartition_source_topics"]),
                }
                for st in sorted(subs, key=lambda x: x["subtopology_id"])
            ],
        },
        "members": sorted(members, key=lambda m: m["member_id"]),
    }


def describe_streams_groups(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each streams group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_streams(group_ids, Deadline(timeout_s))


def describe_share_groups(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each share group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_share(group_ids, Deadline(timeout_s))


def describe_consumer_groups_kip848(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_kip848(group_ids, Deadline(timeout_s))
