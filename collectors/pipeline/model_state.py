"""Second stage: the coordinator model per group, in Spark's stateful operator.

`applyInPandasWithState` keyed by group; the state is the pickled `GroupEngine` (plus when the group
last received evidence and a digest of the last document sent), so it lives in Spark's checkpointed
state store (RocksDB) and survives restarts. In live mode a processing-time timeout wakes every quiet
group after `tick_ms`: the engine is advanced to the wall clock, so a member that stopped heartbeating
expires (and lag in seconds grows) without new input. On replay the clock is the evidence itself and
there is no timeout, so the result is exactly what `groupscope model` computes from the same files.

Output rows: one per group whose document changed (`kind` "doc", `payload` the JSON document), and
the dead letters passed through unchanged (`kind` "dead").
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import time
from collections.abc import Iterator
from typing import Any

from collectors.pipeline.decode import DEAD_LETTER_KEY, Tick, position_of

OUTPUT_SCHEMA = "group string, kind string, ts long, refreshed long, payload string"
STATE_SCHEMA = "engine binary, last_input_ms long, digest string"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, default=str)


def dead_letter_payload(row: Any) -> str:
    b64 = lambda b: base64.b64encode(bytes(b)).decode() if b is not None else None  # noqa: E731
    return _dumps(
        {
            "source": row["topic"],
            "position": position_of(row["topic"], int(row["partition"]), int(row["offset"])),
            "error": row["error"],
            "ts": int(row["ts"]),
            "key": b64(row["raw_key"]),
            "value": b64(row["raw_value"]),
        }
    )


def new_engine(group: str, retention_ms: int) -> Any:
    from coordinator_model.engine import GroupEngine

    return GroupEngine(group, retention_ms=retention_ms)


def make_update(live: bool, retention_ms: int, tick_ms: int):
    """The applyInPandasWithState function for one pipeline configuration."""

    def update(key: tuple, pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        group = key[0]
        if group == DEAD_LETTER_KEY:
            rows = [r for pdf in pdfs for _, r in pdf.iterrows()]
            if rows:
                yield pd.DataFrame(
                    {
                        "group": [DEAD_LETTER_KEY] * len(rows),
                        "kind": ["dead"] * len(rows),
                        "ts": [int(r["ts"]) for r in rows],
                        "refreshed": [_now_ms()] * len(rows),
                        "payload": [dead_letter_payload(r) for r in rows],
                    }
                )
            return
        if state.exists:
            blob, last_input, digest = state.get
            engine = pickle.loads(blob)
        else:
            engine, last_input, digest = new_engine(group, retention_ms), 0, ""
        now = _now_ms()
        if state.hasTimedOut:
            engine.advance(now)
        else:
            frames = [pdf for pdf in pdfs if len(pdf)]
            if frames:
                pdf = pd.concat(frames) if len(frames) > 1 else frames[0]
                # Time order, then the same tie-break the capture merge and `groupscope model` use.
                pdf = pdf.sort_values(["ts", "rank", "partition", "offset"], kind="stable")
                items = [pickle.loads(b) for b in pdf["ev"]]
                ticks = [x.ts for x in items if isinstance(x, Tick)]
                engine.apply_many([x for x in items if not isinstance(x, Tick)])
                if ticks:  # the end of a replayed capture: run the timers to its last moment
                    engine.advance(max(ticks))
                last_input = now
            if live:
                engine.advance(now)
        doc = engine.document()
        new_digest = hashlib.blake2b(_dumps(doc).encode(), digest_size=16).hexdigest()
        state.update((pickle.dumps(engine, 5), int(last_input), new_digest))
        if live:
            state.setTimeoutDuration(tick_ms)
        if new_digest == digest:
            return
        yield pd.DataFrame(
            {
                "group": [group],
                "kind": ["doc"],
                "ts": [int(as_of(doc) or 0)],
                "refreshed": [int(last_input or now)],
                "payload": [_dumps(doc)],
            }
        )

    return update


def as_of(doc: dict) -> int | None:
    """The latest evidence time a document reflects (for lag points and the rebalance window)."""
    for k in ("as_of", "at_ms", "updated", "last_evidence_ms"):
        if isinstance(doc.get(k), int):
            return doc[k]
    best = None
    for t in doc.get("timeline") or []:
        for k in ("start", "end"):
            v = t.get(k)
            if isinstance(v, int) and (best is None or v > best):
                best = v
    lag = doc.get("lag")
    if isinstance(lag, dict):
        for k in ("ts", "as_of", "at_ms"):
            v = lag.get(k)
            if isinstance(v, int) and (best is None or v > best):
                best = v
    return best
