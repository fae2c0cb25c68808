"""The dashboard's URLs. Group names may hold any character Kafka allows (and more: '/', '?', '#',
spaces, unicode), so a name always travels percent-encoded as ONE path segment, '/' included; topic
names the same way (Kafka allows fewer characters in them, but a URL must not guess).

Several Kafka clusters: every page of one cluster lives under `/clusters/<cluster>` (the cluster
name encoded the same way, though its characters never need it). The URLs from before clusters
existed (`/groups/<g>`, `/topics/<t>`, ...) keep working: a group or topic page without a cluster
means the cluster `default`, or the only one when there is exactly one (DashboardData.resolve); the
fleet, topics and alerts without a cluster show every cluster.

A page's filters, sort and time range travel in its query string (`?state=Stable&sort=-lag`,
`?range=6h`), so a copied URL opens the page as it was shown: `parse_query` reads it (a bad value is
left out and said, never fatal), `build_query` writes it, both from the table QUERY. A value at its
default is left out, so a page as it opens has a bare URL."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode

from collectors.config import CLUSTER_NAME
from collectors.storage.topics import TOPIC_SORT_KEYS
from dashboard.data import GRID_SORT
from dashboard.whatif_engine import assignor_options

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


def switch_cluster_href(route: Route, cluster: str | None, search: str | None) -> str:
    """switch_cluster_url with the query the page it goes to keeps: the same list's filters and sort
    (not its cluster filter: the switcher chose the cluster); none from a group or topic page, whose
    time range means nothing to a list."""
    path = switch_cluster_url(route, cluster)
    page = parse_path(path).page
    if page != route.page or page not in QUERY:
        return path
    values = {k: v for k, v in parse_query(page, search).values.items() if k != "cluster"}
    return path + build_query(page, values)


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


# ---- the query string: a page's filters, sort and time range -----------------------------------------
MAX_TEXT = 200


@dataclass(frozen=True)
class Param:
    """One query parameter of a page. `choices`: its words and the value each stands for (None: any
    text up to `max_len` characters that `check` accepts); `many`: it may be given more than once
    (or, when `split`, as a comma-separated list); `default`: the value the page has without it
    (never written)."""

    key: str
    choices: Mapping[str, Any] | None = None
    many: bool = False
    default: Any = None
    check: Callable[[str], bool] | None = field(default=None, compare=False)
    what: str = "value"
    split: bool = True  # a `many` parameter's value is a comma-separated list (False: one value each)
    max_len: int = MAX_TEXT  # the longest text accepted


# The fleet's state filter (the dropdown's choices: the model's states, and Unknown).
FLEET_STATES = (
    "Stable",
    "PreparingRebalance",
    "CompletingRebalance",
    "Assigning",
    "Reconciling",
    "Empty",
    "Dead",
    "Unknown",
)
FLEET_TYPES = ("classic", "consumer", "share", "streams")
# The columns each server-side grid sorts by (dashboard/data.py, GRID_SORT and TOPIC_GRID_SORT).
FLEET_SORTS = tuple(GRID_SORT)
TOPICS_SORTS = TOPIC_SORT_KEYS
ACTIVITY = -1  # the group page's default range: around its last changes (pages/group.py)
GROUP_RANGES = {
    "activity": ACTIVITY,
    "15m": 15 * 60_000,
    "1h": 3_600_000,
    "6h": 6 * 3_600_000,
    "24h": 24 * 3_600_000,
    "7d": 7 * 24 * 3_600_000,
    "all": 0,
}
# The topic page's default span of lag history: all it holds, up to the longest preset's (pages/topic.py).
HISTORY_HELD = -2
TOPIC_RANGES = {
    "held": HISTORY_HELD,
    "15m": 15 * 60_000,
    "1h": 3_600_000,
    "6h": 6 * 3_600_000,
    "24h": 24 * 3_600_000,
}
# The what-if form (dashboard/pages/whatif.py, FORM_URL): the assignors the engine knows; numbers
# must be whole numbers here (whether they are in range, a member is the group's or a topic can have
# that many partitions is the form's to say, beside its field, as for what a user types).
WHATIF_ASSIGNORS = tuple(o["value"] for o in assignor_options())
WHATIF_TEXT = 2_000  # a long list of partition changes or member ids still fits


def _whole(word: str) -> bool:
    return word.isascii() and word.isdigit() and len(word) <= 12


METRICS = {"offsets": "lag", "seconds": "lag_seconds"}


def _sorts(columns: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """`sort=lag` ascending, `sort=-lag` descending: (column, "asc" | "desc")."""
    return {**{c: (c, "asc") for c in columns}, **{f"-{c}": (c, "desc") for c in columns}}


QUERY: dict[str, tuple[Param, ...]] = {
    "fleet": (
        Param("state", {s: s for s in FLEET_STATES}, many=True, what="state"),
        Param("type", {t: t for t in FLEET_TYPES}, what="group type"),
        Param("cluster", many=True, check=lambda v: bool(CLUSTER_NAME.fullmatch(v)), what="cluster name"),
        Param("name", what="name filter"),
        Param("sort", _sorts(FLEET_SORTS), default=("name", "asc"), what="sort"),
    ),
    "topics": (
        Param("name", what="name filter"),
        Param("sort", _sorts(TOPICS_SORTS), default=("name", "asc"), what="sort"),
    ),
    "group": (
        Param("range", GROUP_RANGES, default=ACTIVITY, what="time range"),
        Param("metric", METRICS, default="lag", what="lag metric"),
        Param("by", {"partition": "partition", "member": "member"}, default="partition", what="lag line"),
    ),
    "topic": (
        Param("range", TOPIC_RANGES, default=HISTORY_HELD, what="time range"),
        Param("metric", METRICS, default="lag", what="lag metric"),
    ),
    "whatif": (
        Param("assignor", {a: a for a in WHATIF_ASSIGNORS}, many=True, what="assignor"),
        Param("add", check=_whole, what="number of members to add (a whole number)"),
        # member ids are the client's own text: one a parameter, never split at commas
        Param("remove", many=True, split=False, max_len=WHATIF_TEXT, what="member id"),
        Param("partitions", max_len=WHATIF_TEXT, what="partition change"),
        Param("member", max_len=WHATIF_TEXT, what="member id"),
        Param("topics", max_len=WHATIF_TEXT, what="topic list"),
        Param("session.timeout.ms", check=_whole, what="session.timeout.ms (a whole number of ms)"),
        Param("max.poll.interval.ms", check=_whole, what="max.poll.interval.ms (a whole number of ms)"),
    ),
}


@dataclass(frozen=True)
class Query:
    """A page's query string read: `values` by key (only the keys given, and good), `problems` the
    parts left out, each said in a few words for the page to show."""

    values: dict[str, Any]
    problems: list[str]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def parse_query(page: str, search: str | None) -> Query:
    """The query string (`?a=b&c=d`, as dcc.Location's `search` gives it) of `page`: every parameter
    the page knows with a good value; the rest (unknown keys, unknown words, a repeated single value,
    over-long text) is left out and said in `problems`."""
    params = {p.key: p for p in QUERY.get(page, ())}
    values: dict[str, Any] = {}
    problems: list[str] = []
    seen: set[str] = set()
    for key, raw in parse_qsl((search or "").lstrip("?"), keep_blank_values=True):
        p = params.get(key)
        if p is None:
            problems.append(
                f"unknown parameter {key!r}" + (f" (this page takes {', '.join(params)})" if params else "")
            )
            continue
        if key in seen and not p.many:
            problems.append(f"{key!r} given more than once (the first is kept)")
            continue
        seen.add(key)
        words = [w.strip() for w in raw.split(",")] if p.many and p.split else [raw]
        for word in words:
            if word == "":
                continue  # `?name=`: no filter, as the empty box means
            value, why = _one(p, word)
            if why:
                problems.append(why)
            elif p.many:
                if value not in values.setdefault(key, []):
                    values[key].append(value)
            else:
                values[key] = value
    return Query(values, problems)


def _one(p: Param, word: str) -> tuple[Any, str | None]:
    if p.choices is not None:
        if word in p.choices:
            return p.choices[word], None
        return None, f"{p.key}={word!r} is not a known {p.what} (one of {', '.join(p.choices)})"
    if len(word) > p.max_len:
        return None, f"{p.key} is longer than {p.max_len:,} characters"
    if p.check is not None and not p.check(word):
        return None, f"{p.key}={word!r} is not a valid {p.what}"
    return word, None


def build_query(page: str, values: Mapping[str, Any]) -> str:
    """The query string (with its '?', or '' when every value is at its default) for `values` by key:
    the inverse of parse_query. Keys the page does not know, empty values and defaults are left out;
    a value with no word is an error (a bug of the caller, not the user's)."""
    pairs: list[tuple[str, str]] = []
    for p in QUERY.get(page, ()):
        v = values.get(p.key)
        if v is None or v == "" or v == [] or v == p.default:
            continue
        for one in v if p.many else [v]:
            if p.choices is None:
                pairs.append((p.key, str(one)))
                continue
            word = next((w for w, val in p.choices.items() if val == one), None)
            if word is None:
                raise ValueError(f"{p.key}: no word for {one!r}")
            pairs.append((p.key, word))
    return "?" + urlencode(pairs, quote_via=quote, safe=",") if pairs else ""
