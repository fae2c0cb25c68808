"""The dashboard's URLs. Group names may hold any character Kafka allows (and more: '/', '?', '#',
spaces, unicode), so a name always travels percent-encoded as ONE path segment, '/' included; topic
names the same way (Kafka allows fewer characters in them, but a URL must not guess).

Several Kafka clusters: every page of one cluster lives under `/clusters/<cluster>` (the cluster
name encoded the same way, though its characters never need it). The URLs from before clusters
existed (`/groups/<g>`, `/topics/<t>`, ...) keep working: a group or topic page without a cluster
means the cluster `default`, or the only one when there is exactly one (DashboardData.resolve); the
fleet, topics and alerts without a cluster show every cluster."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from collectors.config import CLUSTER_NAME

CLUSTERS = "clusters"


@dataclass(frozen=True)
class Route:
    """Where a pathname points: page is 'fleet', 'group', 'whatif', 'alerts', 'topics', 'topic' or
    'not_found'. cluster None: every cluster (fleet, topics, alerts) or, on a group, what-if or topic
    page, the legacy URL's cluster (resolved by DashboardData.resolve)."""

    page: str
    group: str | None = None
    topic: str | None = None
    cluster: str | None = None


def _seg(name: str) -> str:
    return quote(name, safe="")


def cluster_root(cluster: str | None) -> str:
    """The path every page of `cluster` starts with ('' for the legacy, cluster-less URLs)."""
    return "" if cluster is None else f"/{CLUSTERS}/{_seg(cluster)}"


def fleet_url(cluster: str | None = None) -> str:
    return cluster_root(cluster) or "/"


def group_url(name: str, cluster: str | None = None) -> str:
    return cluster_root(cluster) + "/groups/" + _seg(name)


def whatif_url(name: str, cluster: str | None = None) -> str:
    return group_url(name, cluster) + "/whatif"


def topics_url(cluster: str | None = None) -> str:
    return cluster_root(cluster) + "/topics"


def topic_url(name: str, cluster: str | None = None) -> str:
    return topics_url(cluster) + "/" + _seg(name)


def alerts_url(cluster: str | None = None) -> str:
    return cluster_root(cluster) + "/alerts"


def switch_cluster_url(route: Route, cluster: str | None) -> str:
    """Where the header's cluster switcher goes from `route`: the same list (fleet, topics, alerts)
    of `cluster` (None: every cluster). From one group or topic, to its list in the other cluster:
    a group of the same name there is another group, which may not exist."""
    if route.page in ("topics", "topic"):
        return topics_url(cluster)
    if route.page == "alerts":
        return alerts_url(cluster)
    return fleet_url(cluster)


def parse_path(pathname: str | None) -> Route:
    """Route for a browser pathname (still percent-encoded, as window.location gives it)."""
    path = (pathname or "/").split("?", 1)[0].split("#", 1)[0]
    parts = [p for p in path.split("/") if p != ""]
    cluster: str | None = None
    if parts and parts[0] == CLUSTERS:
        if len(parts) < 2 or not CLUSTER_NAME.fullmatch(unquote(parts[1])):
            return Route("not_found")
        cluster, parts = unquote(parts[1]), parts[2:]
        if parts and parts[0] == CLUSTERS:
            return Route("not_found")
    route = _parse_page(parts)
    if route.page == "not_found":
        return route
    return Route(route.page, route.group, route.topic, cluster)


def _parse_page(parts: list[str]) -> Route:
    if not parts:
        return Route("fleet")
    if parts == ["alerts"]:
        return Route("alerts")
    if parts == ["topics"]:
        return Route("topics")
    if parts[0] == "topics" and len(parts) == 2:
        return Route("topic", topic=unquote(parts[1]))
    if parts[0] == "groups" and len(parts) in (2, 3):
        name = unquote(parts[1])
        if len(parts) == 2:
            return Route("group", name)
        if parts[2] == "whatif":
            return Route("whatif", name)
    return Route("not_found")
