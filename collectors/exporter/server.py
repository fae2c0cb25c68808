"""The exporter's endpoints: `make_wsgi_app(redis_url)` (mount it anywhere), `start_metrics_server`
(what `groupscope worker --metrics-port` runs: on 127.0.0.1 unless told otherwise; with
`basic_auth=(user, password)` every request must carry those credentials, 401 otherwise) and
`make_registry`, a prometheus_client registry with the same series from the same read, for other
servers. What a scrape holds and how it is read: scrape.py.
"""

from __future__ import annotations

import gzip
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectors.endpoints import CHALLENGE, basic_auth_ok
from collectors.exporter.scrape import CONTENT_TYPE, MetricsSource
from collectors.gc_pause import no_cyclic_gc
from coordinator_model.alert_rules import AlertConfig

log = logging.getLogger(__name__)


class GroupscopeCollector(Collector):
    """The metrics as a prometheus_client collector, for servers built on a registry."""

    def __init__(
        self,
        client: Any,
        prefix: str = "gs",
        per_partition: bool = False,
        chunk: int = 1000,
        summaries: bool = True,
        clusters: Iterable[str] = (),
        config: AlertConfig | None = None,
    ) -> None:
        self.source = MetricsSource(
            client,
            prefix=prefix,
            per_partition=per_partition,
            chunk=chunk,
            summaries=summaries,
            clusters=clusters,
            config=config,
        )

    def describe(self) -> list[Metric]:
        return []  # read Redis only at scrape time, never at registration

    def collect(self) -> Iterator[Metric]:
        errors = GaugeMetricFamily(
            "groupscope_scrape_errors", "1 when Redis could not be read for this scrape", labels=["cluster"]
        )
        try:
            with no_cyclic_gc():
                scrapes = self.source.read()
                families = self.source.families(scrapes)
        except Exception as e:  # an unreachable Redis must give an answer Prometheus can alert on
            log.warning("metrics scrape: cannot read Redis: %s", e)
            for cluster in self.source.unreadable():
                errors.add_metric([cluster], 1)
            yield errors
            return
        yield from families
        for scrape in scrapes:
            errors.add_metric([scrape.cluster], 1 if scrape.error is not None or scrape.dropped else 0)
        yield errors


def _client(redis_url: str) -> Any:
    import redis

    return redis.Redis.from_url(redis_url, socket_timeout=10, socket_connect_timeout=5)


def make_registry(
    redis_url: str,
    prefix: str = "gs",
    per_partition: bool = False,
    clusters: Iterable[str] = (),
    config: AlertConfig | None = None,
) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        GroupscopeCollector(
            _client(redis_url), prefix=prefix, per_partition=per_partition, clusters=clusters, config=config
        )
    )
    return registry


def _gzip_accepted(header: str | None) -> bool:
    return any(part.split(";")[0].strip().lower() == "gzip" for part in (header or "").split(","))


def make_wsgi_app(
    redis_url: str,
    prefix: str = "gs",
    per_partition: bool = False,
    clusters: Iterable[str] = (),
    basic_auth: tuple[str, str] | None = None,
    config: AlertConfig | None = None,
) -> Callable[..., Any]:
    """A WSGI app answering Prometheus scrapes (mount it at /metrics). It answers like
    prometheus_client's (OPTIONS, GET only, `name[]` to select families, gzip when accepted), in the
    text format 0.0.4, which every Prometheus reads. Every cluster of the Redis (its registry's and
    the configured `clusters`) is in every scrape, each series labelled with its `cluster`. With
    `basic_auth` (user, password) a request without those credentials is answered 401. `config`:
    the alert rules that define the statuses (the worker's; default: the built-in ones)."""
    source = MetricsSource(
        _client(redis_url), prefix=prefix, per_partition=per_partition, clusters=clusters, config=config
    )
    lock = threading.Lock()  # one redis client, one scrape at a time
    if basic_auth is not None and not all(basic_auth):
        raise ValueError("basic authentication needs both a user and a password")

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if basic_auth is not None and not basic_auth_ok(environ.get("HTTP_AUTHORIZATION"), *basic_auth):
            start_response("401 Unauthorized", [CHALLENGE, ("Content-Type", "text/plain")])
            return [b"Authentication required\n"]
        method = environ.get("REQUEST_METHOD", "GET")
        if method == "OPTIONS":
            start_response("200 OK", [("Allow", "OPTIONS,GET")])
            return [b""]
        if method != "GET":
            start_response("405 Method Not Allowed", [("Allow", "OPTIONS,GET")])
            return [f"# HTTP 405 Method Not Allowed: {method}; use OPTIONS or GET\n".encode()]
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
        with lock:
            body = source.render(names)
        headers = [("Content-Type", CONTENT_TYPE)]
        if _gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING")):
            # Level 1: a 36 MB exposition of 50,000 groups compresses ~8x in a fraction of the
            # time the default level takes, and the scrape's time is what Prometheus waits on.
            body = gzip.compress(body, compresslevel=1)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body]

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in flight never holds up the worker's shutdown


class _SilentHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def start_metrics_server(port: int, redis_url: str, addr: str = "127.0.0.1", **kw: Any) -> Any:
    """Serve /metrics on a port in a daemon thread (on loopback unless `addr` says otherwise; `kw`
    goes to make_wsgi_app, `basic_auth` included); returns (server, thread)."""
    family = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    server_class = type("_Server", (_ThreadingWSGIServer,), {"address_family": family})
    httpd = make_server(
        addr, port, make_wsgi_app(redis_url, **kw), server_class, handler_class=_SilentHandler
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread
