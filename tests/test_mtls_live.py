"""Client certificates (mutual TLS) in every form librdkafka reads them, against the embedded broker's
listener that requires one: the protocol client (committed offsets, as the Admin poller fetches them
when __consumer_offsets is not readable) and librdkafka answer alike, and a missing or unreadable
certificate is one clear error without its secrets (collectors/kafka_protocol/client_cert.py)."""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

import pytest

from collectors.kafka_protocol import KafkaProtocolClient
from collectors.kafka_protocol.client_cert import ClientCert
from collectors.kafka_protocol.connection import ClientSettings, Deadline
from collectors.kafka_protocol.errors import ConfigError, KafkaConnectionError

pytestmark = pytest.mark.servers


def base(broker: Any) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.mtls_bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(broker.tls.ca_pem),
    }


def forms(broker: Any) -> dict[str, dict[str, str]]:
    tls = broker.tls
    return {
        "pem files": {
            "ssl.certificate.location": str(tls.client_cert_pem),
            "ssl.key.location": str(tls.client_key_pem),
        },
        "pem files, encrypted key": {
            "ssl.certificate.location": str(tls.client_cert_pem),
            "ssl.key.location": str(tls.client_key_encrypted_pem),
            "ssl.key.password": tls.client_password,
        },
        "inline pem": {
            "ssl.certificate.pem": tls.client_cert_pem.read_text(),
            "ssl.key.pem": tls.client_key_pem.read_text(),
        },
        "inline pem, encrypted key": {
            "ssl.certificate.pem": tls.client_cert_pem.read_text(),
            "ssl.key.pem": tls.client_key_encrypted_pem.read_text(),
            "ssl.key.password": tls.client_password,
        },
        "pkcs12 keystore": {
            "ssl.keystore.location": str(tls.client_p12),
            "ssl.keystore.password": tls.client_password,
        },
    }


@pytest.fixture(scope="module")
def committed_group(kafka_broker) -> tuple[str, str]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"mtls-{time.time_ns()}", f"mtls-group-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(15)
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, 20 + p) for p in range(3)])
    admin.alter_consumer_group_offsets([req])[group].result(15)
    return topic, group


@pytest.mark.parametrize(
    "form",
    ["pem files", "pem files, encrypted key", "inline pem", "inline pem, encrypted key", "pkcs12 keystore"],
)
def test_each_form_of_client_certificate_reaches_a_listener_that_requires_one(
    kafka_broker, committed_group, form, caplog
):
    caplog.set_level(logging.DEBUG)
    topic, group = committed_group
    conf = {**base(kafka_broker), **forms(kafka_broker)[form]}
    client = KafkaProtocolClient(conf, timeout_s=15)
    try:
        got = client.fetch_committed([group], Deadline(15))
    finally:
        client.close()
    assert got[group] == [(topic, p, 20 + p) for p in range(3)]
    # librdkafka, given the same settings, answers the same (the Admin client beside it)
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(conf)  # kept: a client dropped while its futures wait never answers them
    answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    assert sorted((tp.topic, tp.partition, tp.offset) for tp in answer.topic_partitions) == got[group]
    assert kafka_broker.tls.client_password not in caplog.text


def test_no_client_certificate_is_refused_with_a_clear_error(kafka_broker, committed_group):
    client = KafkaProtocolClient(base(kafka_broker), timeout_s=10)
    try:
        with pytest.raises(KafkaConnectionError) as info:
            client.fetch_committed([committed_group[1]], Deadline(10))
    finally:
        client.close()
    assert kafka_broker.mtls_bootstrap_servers in str(info.value) or "127.0.0.1" in str(info.value)


def test_an_unreadable_keystore_is_one_clear_error_without_its_password(kafka_broker, tmp_path):
    wrong = "not-the-keystore-password"
    conf = {
        **base(kafka_broker),
        "ssl.keystore.location": str(kafka_broker.tls.client_p12),
        "ssl.keystore.password": wrong,
    }
    with pytest.raises(ConfigError) as info:
        ClientSettings.from_conf(conf).ssl_context()
    text = "".join(traceback.format_exception(info.value))
    assert "ssl.keystore.password is wrong" in text and wrong not in text
    bad_key = {
        **base(kafka_broker),
        **forms(kafka_broker)["inline pem, encrypted key"],
        "ssl.key.password": wrong,
    }
    with pytest.raises(ConfigError) as info:
        ClientSettings.from_conf(bad_key).ssl_context()
    text = "".join(traceback.format_exception(info.value))
    assert "TLS settings" in text and wrong not in text and "PRIVATE KEY" not in text


@pytest.mark.parametrize(
    ("conf", "says"),
    [
        ({"ssl.key.location": "/k.pem"}, "ssl.key.location is set without ssl.certificate.location"),
        ({"ssl.certificate.pem": "x"}, "ssl.certificate.pem and ssl.key.pem go together"),
        ({"ssl.keystore.password": "p"}, "ssl.keystore.password is set without ssl.keystore.location"),
        ({"ssl.certificate.location": "/c", "ssl.keystore.location": "/k.p12"}, "more than one form"),
        ({"ssl.engine.id": "pkcs11"}, "ssl.engine.id is not supported"),
    ],
)
def test_half_or_unusable_certificate_settings_are_refused(conf: dict, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        ClientCert.from_conf(conf)


def test_the_admin_poller_fetches_committed_offsets_over_mutual_tls(kafka_broker, committed_group):
    """Admin-only mode (the offsets topic not readable) on a cluster that wants client certificates:
    the poller's committed offsets come through the protocol client, not the librdkafka fallback."""
    from confluent_kafka.admin import AdminClient

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    topic, group = committed_group
    conf = {**base(kafka_broker), **forms(kafka_broker)["pkcs12 keystore"]}
    poller = AdminPoller(
        PipelineConfig(redis_url="redis://unused", checkpoint_dir="/tmp", kafka=conf), store=None
    )
    admin = AdminClient(conf)
    try:
        fetched, refused = poller.committed.fetch(poller.link, admin, [group], 15)
    finally:
        poller.link.close()
    assert not poller.link.unusable and not refused
    assert fetched[group] == [(topic, p, 20 + p) for p in range(3)]
