"""A small Kafka protocol client over a plain socket, for the few APIs librdkafka lacks: it describes
KIP-848 consumer groups with their epochs (ConsumerGroupDescribe, API key 69) and KIP-932 share
groups (ShareGroupDescribe, API key 77) and KIP-1071 streams groups (StreamsGroupDescribe, API
key 89), lists share and streams groups (ListGroups v5 with a types filter), describes classic
groups many a request (DescribeGroups v5-6, API key 15: librdkafka's describe_consumer_groups asks
one group a request), and fetches the
committed offsets of many groups per request (OffsetFetch v8+, API key 9: librdkafka asks one group
a request, and its answer to a coordinator move crashes librdkafka 2.16, confluentinc/librdkafka#5040).

It connects the way the rest of groupscope does, from the same librdkafka-style config dict
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).

- `client.py`: `describe_consumer_groups_kip848(conf, group_ids, timeout_s)`, `KafkaProtocolClient`
  (`.fetch_committed(group_ids)`, `.describe_groups(group_ids)`, `.describe_kip848(group_ids)`,
  `.describe_share(group_ids)`, `.describe_streams(group_ids)`, `.list_typed_groups(types)`),
  `describe_share_groups(conf, group_ids, timeout_s)`, `describe_streams_groups(conf, group_ids, timeout_s)`
- `coordinators.py`: connections, FindCoordinator, a request per coordinator with retries
- `describe_lines.py`: groupscope's describe-line "broker" blocks from the describe answers
- `connection.py`: socket, TLS, framing, ApiVersions, SASL exchange; the settings (`ClientSettings`)
- `sasl.py`: PLAIN and SCRAM client messages
- `messages.py`: the request/response schemas (transcribed from Kafka's JSON); `codec.py` reads
  and writes them
- `errors.py`: exceptions and Kafka's error code names
"""

from collectors.kafka_protocol.client import (
    Committed,
    KafkaProtocolClient,
    StartOffsets,
    describe_consumer_groups_kip848,
    describe_share_groups,
    describe_streams_groups,
    start_offsets,
)
from collectors.kafka_protocol.connection import ClientSettings
from collectors.kafka_protocol.coordinators import GroupError, Node
from collectors.kafka_protocol.describe_lines import broker_block, share_broker_block, streams_broker_block
from collectors.kafka_protocol.errors import (
    AuthenticationError,
    BrokerError,
    ConfigError,
    KafkaConnectionError,
    KafkaProtocolError,
    KafkaTimeoutError,
    UnsupportedVersionError,
)

__all__ = [
    "AuthenticationError",
    "BrokerError",
    "ClientSettings",
    "Committed",
    "ConfigError",
    "GroupError",
    "KafkaConnectionError",
    "KafkaProtocolClient",
    "KafkaProtocolError",
    "KafkaTimeoutError",
    "Node",
    "StartOffsets",
    "UnsupportedVersionError",
    "broker_block",
    "describe_consumer_groups_kip848",
    "describe_share_groups",
    "describe_streams_groups",
    "share_broker_block",
    "start_offsets",
    "streams_broker_block",
]
