"""The Kafka ACLs groupscope needs, per feature, and nothing more (docs/security.md has the table and
what each missing one costs).

groupscope only reads the cluster: it never joins, commits for or alters a user's group and never
writes a user's topic. It writes only topics of its own (prefix `groupscope.`: the Admin poller's
snapshots, the broker-log shipper's lines), which it creates when they are missing.

`groupscope acls --principal User:NAME` prints these as `kafka-acls.sh` commands; the tests grant
them on the embedded broker (which enforces them with Kafka's StandardAuthorizer) through
`bindings()`.
"""

from __future__ import annotations

from dataclasses import dataclass

OWN_PREFIX = "groupscope."


@dataclass(frozen=True)
class Acl:
    """One ALLOW (or DENY) ACL: operation on a resource for a feature."""

    feature: str
    resource_type: str  # CLUSTER | GROUP | TOPIC
    name: str  # "*" for every one; "kafka-cluster" for the cluster
    pattern: str  # LITERAL | PREFIXED
    operation: str  # DESCRIBE | READ | WRITE | CREATE
    permission: str = "ALLOW"

    def cli_args(self, principal: str) -> list[str]:
        """The `kafka-acls.sh` arguments that grant it."""
        flag = "--allow-principal" if self.permission == "ALLOW" else "--deny-principal"
        res = {
            "CLUSTER": ["--cluster"],
            "GROUP": ["--group", self.name],
            "TOPIC": ["--topic", self.name],
        }[self.resource_type]
        pattern = ["--resource-pattern-type", "prefixed"] if self.pattern == "PREFIXED" else []
        return ["--add", flag, principal, "--operation", self.operation.capitalize(), *res, *pattern]


def needed(
    *,
    offsets_topic: str = "__consumer_offsets",
    heartbeat_topic: str = "groupscope.heartbeats",
    read_offsets: bool = True,
) -> list[Acl]:
    """Every ACL of the full feature set (`read_offsets=False`: the Admin-API-only mode, for
    clusters that forbid reading `__consumer_offsets`)."""
    acls = [
        # the Admin API: list every group (ListGroups lists only the groups one may describe without
        # it), describe groups (classic and KIP-848), their committed offsets, topics' end offsets
        Acl("groups, members, assignments (Admin API)", "CLUSTER", "kafka-cluster", "LITERAL", "DESCRIBE"),
        Acl("groups, members, assignments (Admin API)", "GROUP", "*", "LITERAL", "DESCRIBE"),
        Acl("topics, end offsets, committed offsets (Admin API)", "TOPIC", "*", "LITERAL", "DESCRIBE"),
    ]
    if read_offsets:
        acls.append(Acl("history: commits and group records", "TOPIC", offsets_topic, "LITERAL", "READ"))
    if not heartbeat_topic.startswith(OWN_PREFIX):  # else the prefix below covers it
        acls.append(Acl("client heartbeat events (the probe)", "TOPIC", heartbeat_topic, "LITERAL", "READ"))
    for op in ("READ", "WRITE", "CREATE", "DESCRIBE"):
        acls.append(
            Acl(
                "groupscope's own topics (snapshots, probe events, broker log)",
                "TOPIC",
                OWN_PREFIX,
                "PREFIXED",
                op,
            )
        )
    return acls


def bindings(principal: str, acls: list[Acl]) -> list:
    """confluent-kafka AclBindings of `acls` for `principal` ("User:NAME")."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return [
        AclBinding(
            # librdkafka names the cluster resource BROKER (its name is always "kafka-cluster")
            ResourceType["BROKER" if a.resource_type == "CLUSTER" else a.resource_type],
            a.name,
            ResourcePatternType[a.pattern],
            principal,
            "*",
            AclOperation[a.operation],
            AclPermissionType[a.permission],
        )
        for a in acls
    ]
