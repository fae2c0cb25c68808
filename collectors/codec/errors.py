"""The codec's one error type: whatever bytes come in, decoding fails only with `DecodeError`."""

from __future__ import annotations


class DecodeError(ValueError):
    """Truncated or inconsistent bytes.

    `position` is the byte offset inside the key or value where reading failed (None when not
    known); `part` says which ("key" or "value"); `partition` / `offset` name the record of
    `__consumer_offsets` when the caller knows them (`with_record` fills them in).
    """

    def __init__(
        self,
        position: int | None,
        message: str,
        *,
        part: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.position = position
        self.message = message
        self.part = part
        self.partition = partition
        self.offset = offset
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.partition is not None or self.offset is not None:
            where.append(f"record {self.partition}/{self.offset}")
        if self.part is not None:
            where.append(self.part)
        if self.position is not None:
            where.append(f"byte {self.position}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def with_record(
        self, *, part: str | None = None, partition: int | None = None, offset: int | None = None
    ) -> DecodeError:
        """The same error, naming where it happened (keeps what is already known)."""
        return DecodeError(
            self.position,
            self.message,
            part=self.part or part,
            partition=self.partition if self.partition is not None else partition,
            offset=self.offset if self.offset is not None else offset,
        )


class EncodeError(ValueError):
    """A record that cannot be written in the requested version (value out of range, null where the
    schema forbids it, string too long)."""
