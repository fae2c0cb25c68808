"""The Admin poller's protocol client (collectors.kafka_protocol), kept across polls with its
connections: the APIs librdkafka does not speak, or speaks one group a request (DescribeGroups for
many groups, OffsetFetch v8+, ListGroups with types, the KIP-848, share and streams describes,
DescribeShareGroupOffsets), go through it. Made again when the Kafka settings changed or after a
failed call (a broker restart or a half-read answer: the next poll starts with new connections)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collectors.kafka_protocol import KafkaProtocolClient

log = logging.getLogger("groupscope.admin")


def say_failure(failing: bool, first: str, again: str, e: BaseException) -> bool:
    """A failed call said at warning the first time and at debug while it keeps failing (a broker
    without the API fails at every poll); returns that it is failing now. `first` and `again` are
    log formats with one %s, the error."""
    if not failing:
        log.warning(first, e)
    else:
        log.debug(again, e)
    return True


class ProtocolLink:
    def __init__(self, settings: Callable[[], Mapping[str, Any]]) -> None:
        self.settings = settings  # the Kafka settings, read at each call: they may change
        self.kept: KafkaProtocolClient | None = None
        self.conf: dict[str, Any] | None = None  # the settings `kept` was made with
        # the settings are ones it cannot use (SASL GSSAPI or OAUTHBEARER, as on AWS MSK IAM): what
        # librdkafka can do instead goes through librdkafka, the rest is not asked
        self.unusable = False

    def client(self, timeout_s: float) -> KafkaProtocolClient:
        """The kept client (made again when the settings changed since, or after `close`)."""
        from collectors.kafka_protocol import KafkaProtocolClient

        if self.kept is None or self.conf != dict(self.settings()):
            self.close()
            self.conf = dict(self.settings())
            self.kept = KafkaProtocolClient(self.conf, timeout_s)
        return self.kept

    def close(self) -> None:
        client, self.kept = self.kept, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
