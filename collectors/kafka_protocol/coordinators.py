"""The part of the Kafka protocol client every call shares: connections to the brokers, opened on
first use, requests to any broker, FindCoordinator, and a request per coordinator with its answers'
retries (groups whose coordinator moved or is loading are asked again). The calls themselves are in
client.py."""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

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
    FIND_COORDINATOR,
    KEY_TYPE_GROUP,
    LIST_GROUPS,
    METADATA,
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


def described_groups(answer: dict[str, Any]) -> Iterator[tuple[str, int, str | None, Any]]:
    """(group, error code, error message, the group's struct) of a ConsumerGroupDescribe,
    ShareGroupDescribe, DescribeShareGroupOffsets or DescribeGroups answer (DescribeGroups has an
    error message from v6 on only)."""
    for group in answer["groups"]:
        yield group["group_id"], group["error_code"], group.get("error_message"), group


class CoordinatorClient:
    """Connections to the brokers of one cluster, opened on first use and kept until `close()`.
    Not thread-safe: one caller at a time."""

    def __init__(self, conf: Mapping[str, Any], timeout_s: float = 10.0) -> None:
        self.settings = ClientSettings.from_conf(conf)
        self.timeout_s = timeout_s
        self._conns: dict[tuple[str, int], BrokerConnection] = {}

    def __enter__(self) -> Self:
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
