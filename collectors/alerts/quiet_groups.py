"""Which changed groups the evaluator need not judge again.

A changed group is often only a lag refresh of a healthy group. Before judging it again the
evaluator compares the signature of what its rebalance rules read (the rule head's key, from the
facts; for a group without summaries, the fleet row and the current generation's row: state,
generation or epoch, start of the current state, member count, the generation as stored) with the
one it judged last; when that is unchanged, the group has no active alert, and no lag rule can count
its lag (the facts, or for a group without summaries its fleet row: total 0, or worst seconds below
every configured threshold, and not in a state group_empty alerts in with messages waiting), the
verdict cannot have changed and the group is not judged again.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

from collectors.alerts.cycle_results import CycleResult
from collectors.alerts.summary_rules import PackedEvaluator
from collectors.storage.alerts import AlertStore
from collectors.storage.redis_store import RedisStore
from collectors.storage.summaries import Facts, decode_facts
from coordinator_model.document.types import GroupDocument
from coordinator_model.document.view import GONE_STATES


def chunks(items: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


class QuietGroups:
    """The Evaluator's test of which changed groups need no judging again (collectors/alerts/evaluate.py)."""

    r: Any
    data: RedisStore
    alerts: AlertStore
    chunk: int
    use_summaries: bool
    packed: PackedEvaluator
    quiet_seconds: float

    def _signatures(self, groups: list[str]) -> tuple[list[str | None], list[dict[str, Any] | None]]:
        """Per group: the signature of what the rebalance rules read, and the fleet row."""
        rows: list[dict[str, Any] | None] = []
        for raw in self.r.hmget(self.data.fleet_key, groups):
            try:
                rows.append(json.loads(raw) if raw else None)
            except ValueError:
                rows.append(None)
        pipe = self.r.pipeline(transaction=False)
        for g, row in zip(groups, rows, strict=True):
            gen = (
                None
                if row is None
                else (row.get("generation") if row.get("generation") is not None else row.get("group_epoch"))
            )
            pipe.hget(self.data.generations_key(g), str(gen))
        sigs: list[str | None] = []
        for row, gen_raw in zip(rows, pipe.execute(), strict=True):
            if row is None:
                sigs.append(None)
                continue
            head = (
                row.get("state"),
                row.get("generation"),
                row.get("group_epoch"),
                row.get("last_change"),
                row.get("members"),
            )
            sigs.append(f"{head}|{zlib.crc32(gen_raw or b'')}")
        return sigs, rows

    @staticmethod
    def _doc_signature(doc: GroupDocument) -> str:
        """The signature `_signatures` computes from Redis, computed from the document itself (the
        fleet row and the generation row are derived from it by collectors/storage/redis_store.py). Were the
        two ever to differ, the group would only be re-read more often, never judged less."""
        gen = doc.generation if doc.generation is not None else doc.group_epoch
        gen_raw = b""
        for g in reversed(doc.generations):
            if g.generation == gen and g.start is not None:
                gen_raw = json.dumps(g.to_json(), separators=(",", ":"), sort_keys=True, default=str).encode()
                break
        head = (
            doc.state or "Unknown",
            doc.generation,
            doc.group_epoch,
            doc.last_change(),
            len(doc.members),
        )
        return f"{head}|{zlib.crc32(gen_raw)}"

    def _lag_quiet(self, row: dict[str, Any]) -> bool:
        lag = row.get("lag") or 0
        if lag == 0:
            return True
        if row.get("state") in GONE_STATES:
            return False  # messages wait for a group nobody consumes: group_empty may fire
        return float(row.get("lag_seconds") or 0.0) < self.quiet_seconds

    def _facts_quiet(self, facts: Facts, now: int) -> bool:
        """Whether a change of lag alone cannot change the verdict of a group with these facts: no
        lag rule can count a row, and group_empty (which sums the lag waiting) cannot apply."""
        silence = self.packed.silence
        return silence.lag(facts) and (not facts.lagging or silence.empty(facts, now))

    def _skip_quiet(
        self, groups: list[str], refreshed: dict[str, str], result: CycleResult, now: int
    ) -> list[str]:
        """Mark the quiet groups as judged and return the others (to be read and evaluated)."""
        out: list[str] = []
        for chunk in chunks(groups, self.chunk):
            pipe = self.r.pipeline(transaction=False)
            pipe.hmget(self.alerts.signatures_key, chunk)
            pipe.hmget(self.data.facts_key, chunk)
            old, facts = pipe.execute()
            if not self.use_summaries:
                facts = [None] * len(chunk)
            quiet: dict[str, str] = {}
            # Never judged (a cold start): nothing to compare with, read them. With summary facts the
            # signature is the key of the group's rule head; without, it comes from the fleet row.
            known: list[tuple[str, str]] = []
            for g, prev, raw in zip(chunk, old, facts, strict=True):
                if prev is None:
                    out.append(g)
                    continue
                f = decode_facts(raw)
                if f is None:
                    known.append((g, prev.decode()))
                elif f.key == prev.decode() and self._facts_quiet(f, now):
                    quiet[g] = refreshed[g]
                else:
                    out.append(g)
            if known:
                sigs, rows = self._signatures([g for g, _ in known])
                for (g, prev), sig, row in zip(known, sigs, rows, strict=True):
                    if sig is not None and row is not None and prev == sig and self._lag_quiet(row):
                        quiet[g] = refreshed[g]
                    else:
                        out.append(g)
            if quiet:
                self.r.hset(self.alerts.seen_key, mapping=quiet)
                result.skipped_quiet += len(quiet)
        return out
