"""The dashboard's URLs. Group names may hold any character Kafka allows (and more: '/', '?', '#',
spaces, unicode), so a name always travels percent-encoded as ONE path segment, '/' included; topic
names the same way (Kafka allows fewer characters in them, but a URL must not guess)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote


@dataclass(frozen=True)
class Route:
    """Where a pathname points: page is 'fleet', 'group', 'whatif', 'alerts', 'topics', 'topic' or
    'not_found'."""

    page: str
    group: str | None = None
    topic: str | None = None


def group_url(name: str) -> str:
    return "/groups/" + quote(name, safe="")


def whatif_url(name: str) -> str:
    return group_url(name) + "/whatif"


def topic_url(name: str) -> str:
    return "/topics/" + quote(name, safe="")


def parse_path(pathname: str | None) -> Route:
    """Route for a browser pathname (still percent-encoded, as window.location gives it)."""
    path = (pathname or "/").split("?", 1)[0].split("#", 1)[0]
    parts = [p for p in path.split("/") if p != ""]
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
