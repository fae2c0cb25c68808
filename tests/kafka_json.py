"""How a decoded record is held against Kafka's own decoding (kafka-dump-log --offsets-decoder),
the rule of ../shared/tools/check_decode.py: numeric strings compare as ints, and every field Kafka
printed must be present in ours with the same value (fields Kafka leaves out may be extra)."""

from __future__ import annotations

from typing import Any


def norm(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, list):
        return [norm(v) for v in x]
    if isinstance(x, str) and x.lstrip("-").isdigit():
        return int(x)
    return x


def covers(got: Any, exp: Any) -> bool:
    if isinstance(exp, dict):
        return isinstance(got, dict) and all(k in got and covers(got[k], v) for k, v in exp.items())
    if isinstance(exp, list):
        return isinstance(got, list) and len(got) == len(exp) and all(map(covers, got, exp))
    return got == exp


def record_matches(got: dict | None, exp: dict) -> bool:
    """`groupscope decode`'s line for a record against Kafka's ({"key", "value"}; value None: tombstone)."""
    return (
        got is not None
        and "error" not in got
        and covers(norm(got.get("key")), norm(exp["key"]))
        and (
            (exp["value"] is None and got.get("value") is None)
            or covers(norm(got.get("value")), norm(exp["value"]))
        )
    )
