"""The public calls: find group coordinators, resolve topic ids, and describe KIP-848 groups with
ConsumerGroupDescribe, which librdkafka does not expose with its epochs.

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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
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
    UnsupportedVersionError,
    error_name,
)
from collectors.kafka_protocol.messages import (
    CONSUMER_GROUP_DESCRIBE,
    FIND_COORDINATOR,
    KEY_TYPE_GROUP,
    METADATA,
)

log = logging.getLogger("groupscope.kafka_protocol")

MAX_ROUNDS = 5  # FindCoordinator + describe rounds for groups whose coordinator moved or is loading


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

    # -- FindCoordinator ---------------------------------------------------------------------------
    def find_coordinators(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> tuple[dict[str, Node], dict[str, GroupError]]:
        """(coordinator of each group, error of each group whose coordinator is not known)."""
        deadline = deadline or Deadline(self.timeout_s)
        keys = sorted(set(group_ids))
        if not keys:
            return {}, {}
        conn = self.any_broker(deadline)
        answer = conn.request(
            FIND_COORDINATOR, {"key_type": KEY_TYPE_GROUP, "coordinator_keys": keys}, deadline
        )
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

    # -- ConsumerGroupDescribe ---------------------------------------------------------------------
    def consumer_group_describe(
        self, group_ids: Iterable[str], deadline: Deadline | None = None
    ) -> dict[str, dict[str, Any] | GroupError]:
        """Each group's DescribedGroup (the decoded response struct), or its error."""
        deadline = deadline or Deadline(self.timeout_s)
        results: dict[str, dict[str, Any] | GroupError] = {}
        todo = sorted(set(group_ids))
        backoff = 0.05
        for round_no in range(1, MAX_ROUNDS + 1):
            retry: dict[str, GroupError] = {}
            nodes, errors = self.find_coordinators(todo, deadline)
            for g, err in errors.items():
                (retry if err.code in RETRIABLE_GROUP_ERRORS else results)[g] = err
            by_node: dict[Node, list[str]] = {}
            for g, node in nodes.items():
                by_node.setdefault(node, []).append(g)
            # Send to every coordinator first, then read: the requests run in parallel.
            in_flight = []
            for node, groups in sorted(by_node.items(), key=lambda kv: kv[0].node_id):
                try:
                    conn = self._connect(node.host, node.port, deadline, node.node_id)
                    body = {"group_ids": groups, "include_authorized_operations": False}
                    in_flight.append((groups, conn, *conn.send(CONSUMER_GROUP_DESCRIBE, body, deadline)))
                except (AuthenticationError, UnsupportedVersionError):
                    raise
                except KafkaConnectionError as exc:
                    failed = GroupError(NETWORK_EXCEPTION, f"coordinator {node.node_id}: {exc}")
                    results.update(dict.fromkeys(groups, failed))
            for groups, conn, cid, version in in_flight:
                try:
                    answer = conn.receive(CONSUMER_GROUP_DESCRIBE, version, cid, deadline)
                except KafkaConnectionError as exc:
                    results.update(dict.fromkeys(groups, GroupError(NETWORK_EXCEPTION, str(exc))))
                    continue
                seen = set()
                for group in answer["groups"]:
                    g, code = group["group_id"], group["error_code"]
                    seen.add(g)
                    if code in RETRIABLE_GROUP_ERRORS:
                        retry[g] = GroupError(code, group["error_message"])
                    elif code:
                        results[g] = GroupError(code, group["error_message"])
                    else:
                        results[g] = group
                for g in groups:
                    if g not in seen:
                        results[g] = GroupError(-1, "missing from the ConsumerGroupDescribe response")
            if not retry:
                break
            if round_no == MAX_ROUNDS or deadline.end - time.monotonic() < 2 * backoff:
                results.update(retry)  # give up: report the last error of each
                break
            log.debug(
                "ConsumerGroupDescribe: %d group(s) to retry (%s)",
                len(retry),
                error_name(next(iter(retry.values())).code),
            )
            time.sleep(backoff)
            backoff *= 2
            todo = sorted(retry)
        return results

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


def describe_consumer_groups_kip848(
    conf: Mapping[str, Any], group_ids: Iterable[str], timeout_s: float = 10.0
) -> dict[str, dict]:
    """Each group's `"broker"` block (or error block), over connections opened and closed here."""
    with KafkaProtocolClient(conf, timeout_s) as client:
        return client.describe_kip848(group_ids, Deadline(timeout_s))
