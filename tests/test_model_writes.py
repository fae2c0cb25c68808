"""The model stage writes its documents to Redis itself (collectors/pipeline/model_state.py, "Output";
sink.write_model_docs), and the sink only recomputes the topics those documents touched. Redis must
end up exactly as when the documents travelled to the sink as rows and were written there: driven
here on a real redis-server with the real stages (route, model, sink), once each way."""

from __future__ import annotations

import json

import pandas as pd

from collectors.codec import records as r
from collectors.codec.encoder import encode_key, encode_value
from collectors.pipeline import model_state
from collectors.pipeline.route import decode_batches
from collectors.pipeline.sink import SinkConfig, write_rows
from collectors.storage.redis_store import RedisStore
from tests.test_pipeline_watermark import BucketState
from tests.test_redis_store import dump

T0 = 1_800_000_000_000
BUCKETS = 4
KINDS = {"offsets": "offsets"}


def commits(groups: list[str], parts: int, at: int) -> pd.DataFrame:
    rows = []
    for i, g in enumerate(groups):
        for p in range(parts):
            key = encode_key(r.OffsetCommitKey(g, f"topic-{i % 3}", p))
            value = encode_value(1, r.OffsetCommitValue(offset=100 + p, commit_timestamp=at), 3)
            rows.append(("__consumer_offsets", 0, len(rows), at + len(rows), key, value))
    return pd.DataFrame(rows, columns=["topic", "partition", "offset", "timestamp", "key", "value"])


def run_model(
    raw: pd.DataFrame, sink: SinkConfig | None, states: dict[int, BucketState], monkeypatch
) -> list:
    """Every bucket's update on the routed rows; the output rows as the sink receives them."""
    monkeypatch.setattr(model_state, "_now_ms", lambda: T0 + 60_000)
    update = model_state.make_update(True, 7 * 24 * 3600 * 1000, 5000, 0, sink=sink)
    routed = pd.concat(list(decode_batches(iter([raw]), {"__consumer_offsets": "offsets"}, BUCKETS)))
    out = []
    for bucket, rows in routed.groupby("bucket"):
        state = states.setdefault(int(bucket), BucketState())
        for frame in update((int(bucket),), iter([rows.reset_index(drop=True)]), state):
            out.extend(frame.to_dict("records"))
    return out


def test_documents_written_by_the_model_stage_leave_redis_as_the_sink_did(
    redis_server, redis_client, monkeypatch
):
    groups = [f"g{i}" for i in range(12)]
    raw = commits(groups, 5, T0)
    # the old way: documents as rows, written by the sink
    old = RedisStore.from_url(redis_server.url, prefix="old")
    rows = run_model(raw, None, {}, monkeypatch)
    assert sum(1 for x in rows if x["kind"] == "doc") == len(groups)
    write_rows(old, rows)
    # the model stage writing them: only the topics to aggregate travel as rows
    cfg = SinkConfig(redis_server.url, prefix="new")
    rows = run_model(raw, cfg, {}, monkeypatch)
    assert {x["kind"] for x in rows} == {"topics"}
    assert {x["group"] for x in rows} == {"topic-0", "topic-1", "topic-2"}  # once a bucket
    write_rows(RedisStore.from_url(redis_server.url, prefix="new"), rows)
    a, b = dump(redis_client, "old"), dump(redis_client, "new")
    assert a == b
    assert any(k.startswith(b":topic:") for k in b)  # the topics' aggregates were made
    doc = json.loads(redis_client.get("new:group:{g3}:doc"))
    assert [o["offset"] for o in doc["offsets"]] == [100, 101, 102, 103, 104]


def test_a_redis_that_does_not_answer_fails_the_bucket_and_keeps_its_state(monkeypatch):
    """Retried, then the task fails (Spark runs the batch again from the checkpoint): the bucket's
    state is not moved past documents that were never written."""
    import socket

    import pytest
    import redis

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    cfg = SinkConfig(f"redis://127.0.0.1:{port}/0", prefix="gs", redis_retry_s=0.5)
    states: dict[int, BucketState] = {}
    with pytest.raises(redis.ConnectionError):
        run_model(commits(["a"], 2, T0), cfg, states, monkeypatch)
    assert all(s.value is None for s in states.values())
