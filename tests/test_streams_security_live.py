"""The demo's Kafka Streams application (collectors/demo/streams_app, a real Java client) on the
harness's secured listeners with groupscope's own settings, librdkafka's, carried to it by
collectors/demo/streams_app/security.py: over SASL_SSL with SCRAM-SHA-512 as a user whose password
holds a quote, a backslash, the properties format's separators and a non-ASCII letter (the JAAS line
and the properties file must carry each exactly), and over the listener that requires a client
certificate, with an encrypted PEM key. Each time the application runs, its streams group is what
StreamsGroupDescribe says through the project's own protocol client over the same secured listener,
its counts come out, and no secret is on its command line, in its private properties file once it
started (the file is gone), or in anything it printed or logged.

Before this mapping the demo started the application with no security setting at all: a Java client
speaking PLAINTEXT to a TLS listener reads the TLS answer as a huge response size, its threads die of
OutOfMemoryError, and it stays in REBALANCING without a group, forever (the process does not exit,
so the demo does not even restart it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_streams_app import CountsReader, produce, streams_group, until

from collectors.demo.streams_app.security import PROPERTIES_FILE, java_client_properties
from collectors.kafka_protocol.client import describe_streams_groups

pytestmark = [pytest.mark.servers, pytest.mark.slow]

ODD_USER = "gs-streams-odd"
ODD_PASSWORD = 'odd"pass\\word=1: #2 !é'


def _add_odd_user(bootstrap: str) -> None:
    """A SCRAM-SHA-512 user with ODD_PASSWORD, allowed everything a Streams application does (its
    group, its input, output and internal topics, which it creates): ALLOW ALL on every topic, group
    and the cluster. Created over PLAINTEXT, the harness's super user; again harmlessly."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    upsert = UserScramCredentialUpsertion(ODD_USER, info, ODD_PASSWORD.encode())
    for f in admin.alter_user_scram_credentials([upsert]).values():
        f.result(30)
    bindings = [
        AclBinding(
            kind,
            name,
            ResourcePatternType.LITERAL,
            f"User:{ODD_USER}",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
        for kind, name in (
            (ResourceType.TOPIC, "*"),
            (ResourceType.GROUP, "*"),
            (ResourceType.BROKER, "kafka-cluster"),
        )
    ]
    for f in admin.create_acls(bindings, request_timeout=30).values():
        f.result(30)


def _secured(broker: Any, how: str) -> tuple[str, dict[str, str], list[str]]:
    """(bootstrap servers, groupscope's librdkafka settings, the secrets they hold) for `how`."""
    tls = broker.tls
    if how == "sasl_ssl":
        _add_odd_user(broker.bootstrap_servers)
        conf = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": ODD_USER,
            "sasl.password": ODD_PASSWORD,
            "ssl.ca.location": str(tls.ca_pem),
        }
        return broker.sasl_ssl_bootstrap_servers, conf, [ODD_PASSWORD]
    conf = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca_pem),
        "ssl.certificate.location": str(tls.client_cert_pem),
        "ssl.key.location": str(tls.client_key_encrypted_pem),
        "ssl.key.password": tls.client_password,
    }
    # the key's own lines: the unencrypted key the keystore gets must not leak either
    key_line = tls.client_key_pem.read_text().splitlines()[1]
    return broker.mtls_bootstrap_servers, conf, [tls.client_password, key_line]


@pytest.mark.parametrize("how", ["sasl_ssl", "mtls"])
def test_the_streams_application_over_a_secured_listener(kafka_broker, tmp_path: Path, how: str) -> None:
    t0 = time.monotonic()
    plain = kafka_broker.bootstrap_servers  # the harness's super user sets up and reads the output
    bootstrap, conf, secrets = _secured(kafka_broker, how)
    group, source, sink, (app,) = streams_group(plain, f"gs-sec-{how}", tmp_path, instances=1)
    app.bootstrap = bootstrap
    app.client_config = java_client_properties(conf)
    reader = CountsReader(plain, sink)
    try:
        app.start()
        # the properties file's path on the command line, never what it holds
        assert app.proc is not None
        cmdline = Path(f"/proc/{app.proc.pid}/cmdline").read_bytes().decode().split("\0")
        config_file = Path(cmdline[cmdline.index("--config-file") + 1])
        assert config_file.name == PROPERTIES_FILE
        assert not any(s in arg for s in secrets for arg in cmdline)
        assert not any("jaas" in arg or "ssl.keystore.key" in arg for arg in cmdline)

        app.wait_running(60)
        started = app.events[0]
        assert started["event"] == "starting"
        assert started["security_protocol"] == conf["security.protocol"]
        assert started["sasl_mechanism"] == conf.get("sasl.mechanism", "")
        assert not config_file.exists() and not config_file.parent.exists()  # gone once read

        # the group, as the broker answers StreamsGroupDescribe to the project's protocol client over
        # the same secured listener and settings: one member holding the four tasks
        def described() -> dict[str, Any]:
            return describe_streams_groups({**conf, "bootstrap.servers": bootstrap}, [group])[group]

        def one_member_with_all_tasks(block: dict[str, Any]) -> bool:
            members = block.get("members") or []
            return (
                block.get("state") == "Stable"
                and len(members) == 1
                and sorted(members[0]["active"]) == [["0", [0, 1]], ["1", [0, 1]]]
            )

        block = until(described, 30, f"{group} Stable with one member", one_member_with_all_tasks)
        (member,) = block["members"]
        assert member["client_id"].startswith(app.client_id) and not member["is_classic"]

        produce(plain, source, ["secure streams secure"] * 5)
        reader.wait({"secure": 10, "streams": 5}, 30)
        assert app.close() == 0
        assert app.events[-1] == {"event": "closed", "clean": True}
    finally:
        reader.close()
        if app.running:
            app.kill()
    outputs = [app.stderr_path, app.log_path, app.events_path]
    for path in outputs:
        text = path.read_text(errors="replace")
        assert not [s for s in secrets if s in text], f"a secret in {path.name}"
    print(f"{how}: {time.monotonic() - t0:.1f} s")  # the live test's length, for the record
