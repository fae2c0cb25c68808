"""The shapes of the rows the pipeline's stages hand each other, and the state bucket of a group.

Raw records (RAW_SCHEMA) come out of the sources (kafka_source, capture_source); the first stage
(decode.route_arrow) turns them into routed rows (ROUTED_SCHEMA), keyed by state bucket, for the model
stage (model_state). Kept apart from the stages so that each of them can name the others' rows without
importing them.
"""

from __future__ import annotations

import zlib
from typing import Any

RAW_SCHEMA = "topic string, partition int, offset long, timestamp long, key binary, value binary"

# A key no Kafka group id can be (group ids are UTF-8 text; this one starts with NUL).
DEAD_LETTER_KEY = "\x00dead-letters"

# The topic name of the clock rows the Kafka source adds to a batch that reads every partition to
# its log end (kafka_source.clock_row): no Kafka topic has it (a topic name has no spaces).
CLOCK_TOPIC = "groupscope clock"

DEAD_BUCKET = -1
# The Admin poller's unchanged resends go to this bucket, which keeps no state: they only stamp their
# group refreshed (model_state), and a resend that reached the group's own bucket made Spark hand that
# bucket's whole state (the pickled engines of its groups) to Python and back for nothing.
REFRESH_BUCKET = -2
# Live, the Admin poller's end-offsets lines go to this bucket, which keeps no state: it merges them
# into the cluster's log-end histories (storage/log_ends.py), one per partition, not one per group.
ENDS_BUCKET = -3
ROUTED_SCHEMA = (
    "bucket int, group string, ts long, rank int, kind string, topic string, partition int, offset long, "
    "key binary, value binary, error string, "
    "c_topic string, c_partition int, c_offset long, c_commit_ts long, c_epoch int, c_expire long, "
    "c_first_ts long, c_last_log long, c_mono boolean, c_slot_start long, c_slots binary, c_run binary, "
    "c_topic_id string"
)
ROUTED_COLUMNS = [c.split()[0] for c in ROUTED_SCHEMA.split(", ")]
# The c_* columns belong to runs of `__consumer_offsets` commits decoded in the first stage (kind
# "commits", see commit_runs: the committed topic and partition, the last commit's offset, commit
# timestamp, leader epoch and expire timestamp, then the run's summary and packed commits); a run's raw
# keys and values are not carried on. Other rows leave the c_* columns empty. In the model stage a run
# may be taken apart into one row per commit, of kind "commit", with the first six c_* fields and
# c_topic_id (the committed topic's id, from version 4 values that carry it; null otherwise).
COMMIT_KIND = "commit"


def bucket_of(group: str, buckets: int) -> int:
    """The state bucket of a group: stable across processes and restarts (not Python's hash)."""
    return zlib.crc32(group.encode("utf-8")) % buckets


def arrow_schema(ddl: str = ROUTED_SCHEMA) -> Any:
    """The pyarrow schema of a Spark DDL string of ours ("name type, ...")."""
    import pyarrow as pa

    types = {
        "int": pa.int32(),
        "long": pa.int64(),
        "string": pa.string(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
    }
    return pa.schema([(name, types[t]) for name, t in (c.split() for c in ddl.split(", "))])
