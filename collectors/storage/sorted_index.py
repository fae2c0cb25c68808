"""A page of a sorted-set index (the fleet's `gs:idx:*`, the topics' `gs:tidx:*`): the index's size
and the members at [offset, offset + limit) in its order, in one round trip."""

from __future__ import annotations

from typing import Any


def page(client: Any, index: str, offset: int, limit: int, descending: bool) -> tuple[int, list[bytes]]:
    """(members in the index, one page of them)."""
    p = client.pipeline(transaction=False)
    p.zcard(index)
    if limit:
        p.zrange(index, offset, offset + limit - 1, desc=descending)
    res = p.execute()
    return int(res[0]), (res[1] if limit else [])
