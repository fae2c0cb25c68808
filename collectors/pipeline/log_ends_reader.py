"""The cluster's log-end histories (storage/log_ends.py) as a Python worker of the pipeline reads
them: one cache per worker process and sink settings (like sink.model_writer's client), which
outlives the task or bucket, so a reader reloads only the topics whose ends moved. The first stage's
commit path (known_commits.py) and the model stage (model_state.py) read through it."""

from __future__ import annotations

from typing import Any

_CACHES: dict[Any, Any] = {}


class LogEndsReader:
    """topics -> {(topic, partition): EndOffsetHistory} for this worker, through its cache. A class,
    not a closure: Spark pickles the stages' functions with what they hold, and a closure's globals
    went with it by value (the driver's own cache, with its Redis client)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink  # sink.SinkConfig

    def __call__(self, topics: set[str], copy: bool = True) -> dict:
        """Every history of these topics: copies, for an engine to add to, or the cache's own."""
        from collectors.pipeline.sink import with_retry

        cache = self.cache()
        return with_retry(lambda: cache.histories(topics, copy=copy), "log ends", self.sink.redis_retry_s)

    def view(self, tps: set[tuple[str, int]]) -> dict:
        """The cache's own histories of these partitions, only to be read."""
        from collectors.pipeline.sink import with_retry

        cache = self.cache()
        return with_retry(lambda: cache.view(tps), "log ends", self.sink.redis_retry_s)

    def once(self) -> Any:
        """A context within which each topic's version is asked of Redis once (LogEndsCache.once)."""
        return self.cache().once()

    def cache(self) -> Any:
        from collectors.pipeline.sink import model_store
        from collectors.storage.log_ends import LogEnds, LogEndsCache

        cache = _CACHES.get(self.sink)
        if cache is None:
            store = model_store(self.sink)
            cache = _CACHES[self.sink] = LogEndsCache(LogEnds(store.r, store.p))
        return cache
