"""The API's OpenAPI document (dashboard/api_spec.py, served at /api/v1/openapi.json) checked against
the real answers of the dashboard's server over the harness's real Redis: every path it names is
served and every endpoint served is named; every answer's status is one the document lists for its
path, and its JSON matches that status's schema (required fields, types, enums, and no field the
document does not name); every status the document lists is met at least once; the query
parameters it declares are the ones the API takes.

No JSON Schema library is installed, so the checker below covers what the document uses: $ref,
anyOf, type (one or a list), enum, properties / required / additionalProperties, items,
prefixItems, minItems / maxItems, minimum / maximum."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from test_api import BURROW_GROUP, NOW, SLASHED, T0, seed, slashed_doc

from collectors.config import Settings
from collectors.demo.servers.processes import free_port
from collectors.storage.redis_store import RedisStore
from dashboard import api
from dashboard.api_spec import spec
from dashboard.app import create_app
from dashboard.data import DashboardData

pytestmark = pytest.mark.servers

SPEC = spec()
AUTH = ("ops", "s3cret")


# ---- the checker -------------------------------------------------------------------------------------
def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = SPEC["components"]["schemas"][name]
    return schema


TYPES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def errors(value: Any, schema: dict[str, Any], where: str = "$") -> Iterator[str]:
    """Where `value` breaks `schema` (nothing: it conforms)."""
    schema = resolve(schema)
    if "anyOf" in schema:
        if all(list(errors(value, s, where)) for s in schema["anyOf"]):
            yield f"{where}: matches none of anyOf"
        return
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(TYPES[t](value) for t in types):
            yield f"{where}: {value!r:.60} is not {'/'.join(types)}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield f"{where}: {value!r} not in {schema['enum']}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{where}: {value} < {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{where}: {value} > {schema['maximum']}"
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                yield f"{where}: required {k!r} missing"
        extra = schema.get("additionalProperties")
        for k, v in value.items():
            if k in props:
                yield from errors(v, props[k], f"{where}.{k}")
            elif isinstance(extra, dict):
                yield from errors(v, extra, f"{where}.{k}")
            elif extra is None and props:
                yield f"{where}: {k!r} is not in the document"  # an undocumented field
            elif extra is False:
                yield f"{where}: {k!r} is not allowed"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            yield f"{where}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield f"{where}: more than {schema['maxItems']} items"
        prefix = schema.get("prefixItems", [])
        for i, v in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                yield from errors(v, sub, f"{where}[{i}]")


def test_the_checker_catches_what_it_should() -> None:
    s = {"$ref": "#/components/schemas/BurrowPartition"}
    good = {
        "topic": "t",
        "partition": 0,
        "owner": "",
        "client_id": "",
        "status": "OK",
        "start": None,
        "end": {"offset": 1, "timestamp": 2, "observedAt": 2, "lag": None},
        "current_lag": 0,
        "complete": 1,
    }
    assert list(errors(good, s)) == []
    assert any("missing" in e for e in errors({k: v for k, v in good.items() if k != "owner"}, s))
    assert any("not in the document" in e for e in errors({**good, "extra": 1}, s))
    assert any("not in" in e for e in errors({**good, "status": "ERR"}, s))
    assert any("is not integer" in e for e in errors({**good, "partition": 1.5}, s))
    assert any("is not integer" in e for e in errors({**good, "partition": True}, s))
    assert any("anyOf" in e for e in errors({**good, "start": {"offset": "x"}}, s))
    assert (
        list(errors(["t", 1], SPEC["components"]["schemas"]["Member"]["properties"]["assignment"]["items"]))
        == []
    )
    assert list(errors([["t", "1"]], SPEC["components"]["schemas"]["Member"]["properties"]["assignment"]))


# ---- the document itself -----------------------------------------------------------------------------
def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def test_the_document_is_whole_and_names_every_endpoint_served() -> None:
    assert SPEC["openapi"].startswith("3.1")
    for r in refs(SPEC):
        kind, name = r.removeprefix("#/components/").split("/")
        assert name in SPEC["components"][kind], r
    for path, item in SPEC["paths"].items():
        assert set(item) == {"get"}, path
        op = item["get"]
        assert "200" in op["responses"] and "401" in op["responses"], path
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert declared == set(re.findall(r"{(\w+)}", path)), path
    assert {p for p in SPEC["paths"] if p.startswith("/api/v1")} == set(api.ENDPOINTS)
    assert {p for p in SPEC["paths"] if not p.startswith("/api/v1")} == {
        "/v3/kafka",
        "/v3/kafka/{cluster}",
        "/v3/kafka/{cluster}/topic",
        "/v3/kafka/{cluster}/topic/{topic}",
        "/v3/kafka/{cluster}/topic/{topic}/consumers",
        "/v3/kafka/{cluster}/consumer",
        "/v3/kafka/{cluster}/consumer/{group}",
        "/v3/kafka/{cluster}/consumer/{group}/status",
        "/v3/kafka/{cluster}/consumer/{group}/lag",
        "/burrow/admin",
    }


# ---- the real answers --------------------------------------------------------------------------------
G = quote(SLASHED, safe="")
# (path template, URL, the status it answers); together every path and every status but 401 and 503
CASES: list[tuple[str, str, int]] = [
    ("/api/v1", "/api/v1", 200),
    ("/api/v1/openapi.json", "/api/v1/openapi.json", 200),
    ("/api/v1/clusters", "/api/v1/clusters", 200),
    ("/api/v1/clusters/{cluster}", "/api/v1/clusters/default", 200),
    ("/api/v1/clusters/{cluster}", "/api/v1/clusters/prod", 200),
    ("/api/v1/clusters/{cluster}", "/api/v1/clusters/nope", 404),
    ("/api/v1/clusters/{cluster}/groups", "/api/v1/clusters/default/groups", 200),
    (
        "/api/v1/clusters/{cluster}/groups",
        "/api/v1/clusters/default/groups?sort=lag&order=desc&state=Stable&state=Empty&type=classic&name=g&offset=2&limit=5",
        200,
    ),
    ("/api/v1/clusters/{cluster}/groups", "/api/v1/clusters/default/groups?limit=0", 200),
    ("/api/v1/clusters/{cluster}/groups", "/api/v1/clusters/default/groups?sort=size", 400),
    ("/api/v1/clusters/{cluster}/groups", "/api/v1/clusters/nope/groups", 404),
    ("/api/v1/clusters/{cluster}/groups/{group}", f"/api/v1/clusters/default/groups/{G}", 200),
    ("/api/v1/clusters/{cluster}/groups/{group}", "/api/v1/clusters/default/groups/g00", 200),
    ("/api/v1/clusters/{cluster}/groups/{group}", "/api/v1/clusters/default/groups/g07", 200),
    ("/api/v1/clusters/{cluster}/groups/{group}", f"/api/v1/clusters/prod/groups/{BURROW_GROUP}", 200),
    ("/api/v1/clusters/{cluster}/groups/{group}", "/api/v1/clusters/default/groups/nope", 404),
    ("/api/v1/clusters/{cluster}/groups/{group}", "/api/v1/clusters/default/groups/broken", 500),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/timeline",
        f"/api/v1/clusters/default/groups/{G}/timeline",
        200,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/timeline",
        f"/api/v1/clusters/default/groups/{G}/timeline?since={T0}&until={T0 + 30_000}",
        200,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/timeline",
        f"/api/v1/clusters/default/groups/{G}/timeline?since=x",
        400,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/timeline",
        "/api/v1/clusters/default/groups/nope/timeline",
        404,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/timeline",
        "/api/v1/clusters/default/groups/badhistory/timeline",
        500,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/generations",
        f"/api/v1/clusters/default/groups/{G}/generations",
        200,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/generations",
        f"/api/v1/clusters/default/groups/{G}/generations?since={T0 + 50_000}",
        200,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/generations",
        f"/api/v1/clusters/default/groups/{G}/generations?until=-1",
        400,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/generations",
        "/api/v1/clusters/prod/groups/g01/generations",
        404,
    ),
    (
        "/api/v1/clusters/{cluster}/groups/{group}/generations",
        "/api/v1/clusters/default/groups/badhistory/generations",
        500,
    ),
    ("/api/v1/clusters/{cluster}/topics", "/api/v1/clusters/default/topics", 200),
    (
        "/api/v1/clusters/{cluster}/topics",
        "/api/v1/clusters/default/topics?sort=lag_seconds&order=desc&name=t&offset=1&limit=2",
        200,
    ),
    ("/api/v1/clusters/{cluster}/topics", "/api/v1/clusters/default/topics?limit=1001", 400),
    ("/api/v1/clusters/{cluster}/topics", "/api/v1/clusters/nope/topics", 404),
    ("/api/v1/clusters/{cluster}/topics/{topic}", "/api/v1/clusters/default/topics/orders", 200),
    ("/api/v1/clusters/{cluster}/topics/{topic}", "/api/v1/clusters/prod/topics/pay", 200),
    ("/api/v1/clusters/{cluster}/topics/{topic}", "/api/v1/clusters/default/topics/nope", 404),
    ("/api/v1/alerts", "/api/v1/alerts", 200),
    ("/api/v1/alerts", "/api/v1/alerts?cluster=prod&group=payments&rule=stalled&severity=critical", 200),
    ("/api/v1/alerts", "/api/v1/alerts?since=1", 400),
    ("/api/v1/alerts", "/api/v1/alerts?cluster=nope", 404),
    ("/v3/kafka", "/v3/kafka", 200),
    ("/v3/kafka/{cluster}", "/v3/kafka/prod", 200),  # servers registered
    ("/v3/kafka/{cluster}", "/v3/kafka/default", 200),  # none registered: []
    ("/v3/kafka/{cluster}", "/v3/kafka/nope", 404),
    ("/v3/kafka/{cluster}/topic", "/v3/kafka/default/topic", 200),
    ("/v3/kafka/{cluster}/topic", "/v3/kafka/prod/topic", 200),
    ("/v3/kafka/{cluster}/topic", "/v3/kafka/nope/topic", 404),
    ("/v3/kafka/{cluster}/topic/{topic}", "/v3/kafka/default/topic/orders", 200),
    ("/v3/kafka/{cluster}/topic/{topic}", "/v3/kafka/prod/topic/pay", 200),
    ("/v3/kafka/{cluster}/topic/{topic}", "/v3/kafka/default/topic/nope", 404),
    ("/v3/kafka/{cluster}/topic/{topic}", "/v3/kafka/nope/topic/orders", 404),
    ("/v3/kafka/{cluster}/topic/{topic}/consumers", "/v3/kafka/default/topic/t1/consumers", 200),
    ("/v3/kafka/{cluster}/topic/{topic}/consumers", "/v3/kafka/prod/topic/nope/consumers", 200),  # []
    ("/v3/kafka/{cluster}/topic/{topic}/consumers", "/v3/kafka/nope/topic/t1/consumers", 404),
    ("/v3/kafka/{cluster}/consumer", "/v3/kafka/default/consumer", 200),
    ("/v3/kafka/{cluster}/consumer", "/v3/kafka/nope/consumer", 404),
    ("/v3/kafka/{cluster}/consumer/{group}", f"/v3/kafka/prod/consumer/{BURROW_GROUP}", 200),
    ("/v3/kafka/{cluster}/consumer/{group}", f"/v3/kafka/default/consumer/{G}", 200),
    ("/v3/kafka/{cluster}/consumer/{group}", "/v3/kafka/prod/consumer/nope", 404),
    ("/v3/kafka/{cluster}/consumer/{group}", "/v3/kafka/default/consumer/g07", 404),  # a share group
    ("/v3/kafka/{cluster}/consumer/{group}", "/v3/kafka/default/consumer/broken", 500),
    ("/v3/kafka/{cluster}/consumer/{group}/status", f"/v3/kafka/prod/consumer/{BURROW_GROUP}/status", 200),
    ("/v3/kafka/{cluster}/consumer/{group}/status", f"/v3/kafka/default/consumer/{G}/status", 200),
    ("/v3/kafka/{cluster}/consumer/{group}/status", "/v3/kafka/prod/consumer/nope/status", 404),
    ("/v3/kafka/{cluster}/consumer/{group}/status", "/v3/kafka/default/consumer/broken/status", 500),
    ("/v3/kafka/{cluster}/consumer/{group}/lag", f"/v3/kafka/prod/consumer/{BURROW_GROUP}/lag", 200),
    ("/v3/kafka/{cluster}/consumer/{group}/lag", f"/v3/kafka/default/consumer/{G}/lag", 200),
    ("/v3/kafka/{cluster}/consumer/{group}/lag", "/v3/kafka/nope/consumer/g00/lag", 404),
    ("/v3/kafka/{cluster}/consumer/{group}/lag", "/v3/kafka/default/consumer/broken/lag", 500),
    ("/burrow/admin", "/burrow/admin", 200),
]


def fill(template: str) -> str:
    return template.replace("{cluster}", "default").replace("{group}", "g01").replace("{topic}", "t1")


def check(template: str, url: str, resp: Any) -> str:
    """The answer's status is documented for the path and its body matches that status's schema;
    the query parameters asked are declared. Returns the status as the document keys it."""
    op = SPEC["paths"][template]["get"]
    status = str(resp.status_code)
    assert status in op["responses"], (url, status, resp.data[:300])
    documented = op["responses"][status]
    if "$ref" in documented:
        documented = SPEC["components"]["responses"][documented["$ref"].rsplit("/", 1)[1]]
    (mime, media), *_ = documented["content"].items()
    assert resp.mimetype == mime, (url, resp.mimetype)
    body = resp.get_json() if mime == "application/json" else resp.get_data(as_text=True)
    problems = list(errors(body, media["schema"]))
    assert not problems, (url, problems[:5])
    declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
    asked = set(re.findall(r"[?&]([^=&]+)=", url))
    assert asked <= declared or status == "400", (url, asked - declared)
    return status


@pytest.fixture()
def apps(redis_client, redis_server) -> dict[str, Any]:
    seed(redis_client)
    store = RedisStore(redis_client)
    redis_client.set(store.group_key("broken", "doc"), '{"group": "broken", "members": [{"client_id": "x"}]}')
    # a group whose indexed history holds rows that are not timeline spans or generations
    store.write_groups([{**slashed_doc(), "group": "badhistory"}], NOW)
    for what, junk in (("timeline", '{"start": 1}'), ("generations", "[1]")):
        key = store.group_key("badhistory", what)
        redis_client.hset(key, mapping={f: junk for f in redis_client.hkeys(key)})
    settings = Settings(redis_url=redis_server.url)
    down = DashboardData(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.5)
    return {
        "open": create_app(settings, background_mode="celery").server.test_client(),
        "auth": create_app(
            Settings(redis_url=redis_server.url, dashboard_user=AUTH[0], dashboard_password=AUTH[1]),
            background_mode="celery",
        ).server.test_client(),
        "down": create_app(settings, data=down, background_mode="celery").server.test_client(),
    }


def test_every_answer_matches_the_document(apps) -> None:
    met: set[tuple[str, str]] = set()
    for template, url, want in CASES:
        resp = apps["open"].get(url)
        assert resp.status_code == want, (url, resp.status_code, resp.data[:300])
        met.add((template, check(template, url, resp)))
    # without credentials, with authentication on: every path; with Redis down: every groupscope path
    for template, item in SPEC["paths"].items():
        url = fill(template)
        met.add((template, check(template, url, apps["auth"].get(url))))
        if "503" in item["get"]["responses"]:
            resp = apps["down"].get(url)
            assert resp.status_code == 503, (url, resp.status_code)
            met.add((template, check(template, url, resp)))
    documented = {(p, s) for p, item in SPEC["paths"].items() for s in item["get"]["responses"]}
    assert documented - met == set(), "statuses the document lists that no answer met"
    # the document served is this one
    assert apps["open"].get("/api/v1/openapi.json").get_json() == SPEC


def test_the_declared_query_parameters_are_the_ones_the_api_takes(apps) -> None:
    """Each declared enum value is taken and a value outside it refused; a parameter the document
    does not declare is refused."""
    client = apps["open"]
    for template, item in SPEC["paths"].items():
        if not template.startswith("/api/v1"):
            continue
        base = fill(template)
        params = [p for p in item["get"].get("parameters", []) if p["in"] == "query"]
        for p in params:
            s = p["schema"]
            values = s.get("enum") or s.get("items", {}).get("enum") or []
            for v in values:
                assert client.get(f"{base}?{p['name']}={quote(str(v))}").status_code == 200, (
                    template,
                    p["name"],
                    v,
                )
            if values:
                assert client.get(f"{base}?{p['name']}=zzz").status_code == 400, (template, p["name"])
            if s.get("type") == "integer":
                assert client.get(f"{base}?{p['name']}=1").status_code == 200, (template, p["name"])
                assert client.get(f"{base}?{p['name']}=-5").status_code == 400, (template, p["name"])
        assert client.get(f"{base}?undeclared=1").status_code == 400, template


def test_a_streams_groups_answer_carries_its_lag_per_task(apps, redis_client) -> None:
    """A streams group's answer has its lag per active task, as the group page shows it
    (coordinator_model/streams/tasks.py); any other group's has none. Both match the document."""
    from test_alert_docs import wordcount_doc

    doc = wordcount_doc()
    RedisStore(redis_client).write_groups([doc], NOW)
    template = "/api/v1/clusters/{cluster}/groups/{group}"
    resp = apps["open"].get("/api/v1/clusters/default/groups/wordcount")
    assert check(template, resp.request.path, resp) == "200"
    assert resp.get_json()["tasks"] == [
        {"task": "0_0", "member_id": "m1", "client_id": "app-1", "partitions": [["lines", 0]], "lag": 10,
         "lag_seconds": 2.5},
        {"task": "0_1", "member_id": "m2", "client_id": "app-2", "partitions": [["lines", 1]], "lag": 0,
         "lag_seconds": 0.0},
        {"task": "1_0", "member_id": "m1", "client_id": "app-1", "partitions": [["words-repartition", 0]],
         "lag": 7, "lag_seconds": 1.0},
    ]  # fmt: skip
    assert apps["open"].get("/api/v1/clusters/default/groups/g01").get_json()["tasks"] == []
