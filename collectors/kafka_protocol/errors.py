"""The exceptions of the protocol client, and Kafka's names for the error codes it meets.

Every message here is built from host names, API names, mechanism and user names and the broker's
own error text: never from a password (`scrub` removes one should a broker ever echo it back).
"""

from __future__ import annotations

# Kafka's error codes (org.apache.kafka.common.protocol.Errors) for the APIs this client speaks.
ERROR_NAMES: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    7: "REQUEST_TIMED_OUT",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    24: "INVALID_GROUP_ID",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    42: "INVALID_REQUEST",
    58: "SASL_AUTHENTICATION_FAILED",
    69: "GROUP_ID_NOT_FOUND",
    100: "UNKNOWN_TOPIC_ID",
}
# Per-group errors worth another FindCoordinator + describe round (the coordinator moved or is loading).
RETRIABLE_GROUP_ERRORS = frozenset({14, 15, 16})

NETWORK_EXCEPTION = 13


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


def scrub(text: str, secrets: tuple[str | None, ...]) -> str:
    """`text` with every non-empty secret replaced: the last line of defence for broker-echoed text."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class KafkaProtocolError(Exception):
    """Base class: anything this client raises."""


class ConfigError(KafkaProtocolError):
    """A setting the client cannot honour (unknown protocol, unsupported mechanism, missing user)."""


class KafkaConnectionError(KafkaProtocolError):
    """A broker could not be reached, or closed the connection."""


class KafkaTimeoutError(KafkaConnectionError):
    """A socket operation did not finish before the call's deadline."""


class AuthenticationError(KafkaProtocolError):
    """SASL authentication was refused (wrong user or password, mechanism not enabled)."""


class UnsupportedVersionError(KafkaProtocolError):
    """The broker does not speak any version of an API that this client implements."""


class ProtocolDecodeError(KafkaProtocolError):
    """A response did not parse against its schema."""


class BrokerError(KafkaProtocolError):
    """A request-level (not per-group) error code in a response."""

    def __init__(self, api: str, code: int, message: str | None = None) -> None:
        self.api, self.code, self.name = api, code, error_name(code)
        super().__init__(f"{api}: {self.name} ({code})" + (f": {message}" if message else ""))
