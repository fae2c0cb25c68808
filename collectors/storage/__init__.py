"""Where the collector keeps what it knows: the Redis layout (redis_store.py), written by the
pipeline's sink and read by the dashboard, the alerts and the CLI, and the compact per-group
summaries written beside each document (summaries.py)."""
