"""groupscope's Prometheus exporter: what a scrape of /metrics holds, read from Redis at scrape time
(scrape.py), and the endpoints that serve it (server.py)."""
