"""Dashboard speed with a large fleet, against a real redis-server on a loopback port.

    .venv/bin/python benchmarks/dashboard.py [--groups 50000] [--repeat 20]

Prints:
- the server time of the fleet page's data callback (the AG Grid block request, through Dash's
  callback endpoint: first page, sorted by lag, filtered by state), target < 300 ms;
- the server time of the group page's callbacks for a group of 100 members on 1,000 partitions
  (header, timeline, generations, members, heatmap, offsets; and the lag chart), target < 1 s;
- the topics page's data callback (first 50 of ~10,000 topics by worst lag), target < 300 ms, and a
  topic page's callback for a topic read by 200 groups (table, heatmap, lag history), target < 1 s;
- page load times in headless Chromium (until the grid shows its rows / the heatmap is drawn).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.dashboard_data import small_fleet_doc, synthetic_group
from collectors.config import Settings
from collectors.demo.servers.processes import RedisServer, free_port
from collectors.storage.redis_store import RedisStore
from dashboard.app import create_app
from dashboard.pages import group as group_page
from dashboard.urls import group_url, topic_url

BIG = "bench-big-group"
TOPICS = 10_000  # the fleet's groups read this many topics, five groups each
HOT = "bench-hot-topic"  # ... but one group in 250 reads this one: 200 groups at 50,000


def topic_of(i: int) -> str:
    return HOT if i % 250 == 0 else f"topic-{i % TOPICS:05d}"


def fill(url: str, n: int) -> float:
    import redis

    store = RedisStore(redis.Redis.from_url(url))
    now = int(time.time() * 1000)
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for i in range(n):
        batch.append(small_fleet_doc(i, now, topic_of(i)))
        if len(batch) == 1000:
            store.write_groups(batch, now)
            batch = []
    if batch:
        store.write_groups(batch, now)
    big = synthetic_group(BIG, 100, 1000, now, n_topics=10, n_generations=50)
    store.write_group(big, now)
    # an hour of lag history, one point a minute, per partition and member
    for k in range(60):
        ts = now - (60 - k) * 60_000
        store.write_lag_points(
            BIG,
            ts,
            total=k * 1000,
            lag_seconds=float(k),
            partitions={
                f"{p['topic']}:{p['partition']}": p["lag"] * k // 60 for p in big["lag"]["partitions"]
            },
            members={m["member_id"]: k * 10 for m in big["members"]},
        )
    # an hour of lag history, one point a minute, for each group of the hot topic
    p = store.pipeline()
    for i in range(0, n, 250):
        doc = small_fleet_doc(i, now, HOT)
        for k in range(60):
            parts = {f"{r['topic']}:{r['partition']}": r["lag"] * k // 60 for r in doc["lag"]["partitions"]}
            store.write_lag_points(
                doc["group"],
                now - (60 - k) * 60_000,
                total=sum(parts.values()),
                lag_seconds=k,
                pipe=p,
                partitions=parts,
            )
        if len(p) > 5000:
            p.execute()
    p.execute()
    store.heartbeat_collector(now, batch_id=1, event_ms=now)
    return time.perf_counter() - t0


def callback(
    client: Any, outputs: list[tuple[str, str]], inputs: list[tuple[str, str, Any]]
) -> tuple[float, Any]:
    """POST one callback to Dash's endpoint, as the browser does; (server time, response JSON)."""
    names = [f"{i}.{p}" for i, p in outputs]
    multi = len(outputs) > 1
    body = {
        "output": ".." + "...".join(names) + ".." if multi else names[0],
        "outputs": [{"id": i, "property": p} for i, p in outputs]
        if multi
        else {"id": outputs[0][0], "property": outputs[0][1]},
        "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
        "changedPropIds": [f"{inputs[0][0]}.{inputs[0][1]}"],
        "state": [],
    }
    t0 = time.perf_counter()
    resp = client.post("/_dash-update-component", json=body)
    dt = time.perf_counter() - t0
    if resp.status_code != 200:
        raise RuntimeError(f"callback failed: {resp.status_code} {resp.data[:500]!r}")
    return dt, json.loads(resp.data)


def report(label: str, samples: list[float], target: str = "") -> None:
    print(f"{label:<78} {stats(samples)}{'   target ' + target if target else ''}", flush=True)


def stats(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms   (n={len(ms)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()

    with RedisServer() as redis_server:
        print(
            f"filling Redis with {args.groups:,} groups + one of 100 members x 1,000 partitions ...",
            flush=True,
        )
        print(f"  written in {fill(redis_server.url, args.groups):.1f} s")
        app = create_app(Settings(redis_url=redis_server.url), background_mode="celery")
        client = app.server.test_client()

        request = {
            "startRow": 0,
            "endRow": 50,
            "sortModel": [{"colId": "lag", "sort": "desc"}],
            "filterModel": {"state": {"filterType": "text", "type": "equals", "filter": "Stable"}},
        }
        outs = [("fleet-grid", "getRowsResponse"), ("fleet-count", "children")]
        samples, last = [], None
        for _ in range(args.repeat):
            dt, last = callback(client, outs, [("fleet-grid", "getRowsRequest", request)])
            samples.append(dt)
        resp = last["response"]["fleet-grid"]["getRowsResponse"]
        lags = [r["lag"] for r in resp["rowData"]]
        assert lags == sorted(lags, reverse=True) and all(r["state"] == "Stable" for r in resp["rowData"])
        report(
            f"fleet data callback (first 50 by lag, state=Stable: {resp['rowCount']:,} rows)",
            samples,
            "< 300 ms",
        )

        request2 = {
            **request,
            "filterModel": {
                "state": {"filterType": "text", "type": "equals", "filter": "Stable"},
                "name": {"filterType": "text", "type": "contains", "filter": "group-4"},
            },
        }
        samples = [
            callback(client, outs, [("fleet-grid", "getRowsRequest", request2)])[0]
            for _ in range(max(3, args.repeat // 4))
        ]
        report("fleet data callback, plus a name-substring filter (server-side scan)", samples)

        summary_outs = [
            ("fleet-summary", "children"),
            ("fleet-states", "figure"),
            ("fleet-storms", "children"),
            ("fleet-lagging", "children"),
        ]
        samples = [
            callback(client, summary_outs, [("tick", "n_intervals", 1), ("url", "pathname", "/")])[0]
            for _ in range(args.repeat)
        ]
        report("fleet summary callback (counts, storms, lagging)", samples)

        path = group_url(BIG)
        group_outs = list(group_page.VIEW_OUTPUTS)
        samples = []
        for _ in range(max(3, args.repeat // 2)):
            dt, last = callback(
                client,
                group_outs,
                [("tick", "n_intervals", 1), ("group-range", "value", -1), ("url", "pathname", path)],
            )
            samples.append(dt)
        assert len(last["response"]["group-members"]["rowData"]) == 100
        assert len(last["response"]["group-partitions"]["rowData"]) == 1000
        report("group page main callback (100 members x 1,000 partitions)", samples, "< 1 s")
        lag_in = [
            ("tick", "n_intervals", 1),
            ("group-range", "value", -1),
            ("group-lag-metric", "value", "lag"),
            ("group-lag-by", "value", "partition"),
            ("url", "pathname", path),
        ]
        samples = [
            callback(client, [("group-lag", "figure")], lag_in)[0] for _ in range(max(3, args.repeat // 2))
        ]
        report("group page lag-history callback (1,000 partition lines x 60 points)", samples)

        topics_request = {"startRow": 0, "endRow": 50, "sortModel": [{"colId": "lag", "sort": "desc"}]}
        topics_outs = [("topics-grid", "getRowsResponse"), ("topics-count", "children")]
        samples = []
        for _ in range(args.repeat):
            dt, last = callback(client, topics_outs, [("topics-grid", "getRowsRequest", topics_request)])
            samples.append(dt)
        resp = last["response"]["topics-grid"]["getRowsResponse"]
        lags = [r["lag"] for r in resp["rowData"]]
        assert len(lags) == 50 and lags == sorted(lags, reverse=True)
        report(
            f"topics data callback (first 50 by worst lag of {resp['rowCount']:,} topics)",
            samples,
            "< 300 ms",
        )
        filtered = {**topics_request, "filterModel": {"name": {"filterType": "text", "filter": "topic-04"}}}
        samples = [
            callback(client, topics_outs, [("topics-grid", "getRowsRequest", filtered)])[0]
            for _ in range(max(3, args.repeat // 4))
        ]
        report("topics data callback, plus a name-substring filter (server-side scan)", samples)
        topic_outs = [
            ("topic-header", "children"),
            ("topic-groups", "rowData"),
            ("topic-heatmap", "figure"),
            ("topic-lag", "figure"),
            ("topic-groups", "style"),
        ]
        topic_in = [
            ("url", "pathname", topic_url(HOT)),
            ("tick", "n_intervals", 1),
            ("topic-lag-metric", "value", "lag"),
            ("topic-lag-range", "value", 3_600_000),
        ]
        samples = []
        for _ in range(max(3, args.repeat // 2)):
            dt, last = callback(client, topic_outs, topic_in)
            samples.append(dt)
        n_groups = len(last["response"]["topic-groups"]["rowData"])
        n_lines = len(last["response"]["topic-lag"]["figure"]["data"])
        assert n_groups == len(range(0, args.groups, 250)) and n_lines == min(10, n_groups)
        report(
            f"topic page callback (a topic of {n_groups} groups: table, heatmap, {n_lines} lag lines)",
            samples,
            "< 1 s",
        )

        if not args.no_browser:
            browser_load(app, path)


def browser_load(app: Any, group_path: str) -> None:
    import logging

    from werkzeug.serving import make_server

    from collectors.demo.servers.chromium import headless_chromium

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver, _profile = headless_chromium(1400, 1000, prefix="gs-bench-")
    base = f"http://127.0.0.1:{port}"
    try:

        def timed(path: str, ready_js: str, n: int = 3) -> list[float]:
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                driver.get(base + path)
                while not driver.execute_script(ready_js):
                    if time.perf_counter() - t0 > 60:
                        raise RuntimeError(f"{path} did not become ready")
                    time.sleep(0.02)
                out.append(time.perf_counter() - t0)
            return out

        fleet_ready = (
            "try { const api = dash_ag_grid.getApi('fleet-grid'); let n = 0;"
            " api.forEachNode(x => { if (x.data) n++; }); return n >= 50; } catch (e) { return false; }"
        )
        report("page load, fleet (until the grid shows its first 50 rows)", timed("/", fleet_ready))
        group_ready = (
            "const h = document.querySelector('#group-heatmap .js-plotly-plot');"
            " const l = document.querySelector('#group-lag .js-plotly-plot');"
            " return !!(h && h.data && h.data.length && l && l.data && l.data.length);"
        )
        report(
            "page load, group of 100 x 1,000 (until heatmap and lag chart drawn)",
            timed(group_path, group_ready),
        )
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
