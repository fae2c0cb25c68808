"""collectors.kafka_protocol: the socket-level client that describes KIP-848 groups with their epochs.

Against the real broker of the harness (Apache Kafka 4.3, PLAINTEXT, SASL_PLAINTEXT with SCRAM users
and SSL listeners): a two-member KIP-848 group described by the client is compared with what
confluent-kafka's describe_consumer_groups, the members themselves and the broker's coordinator log
say about it, over every listener; a wrong password, an unknown and a classic group; and the Admin
poller's describe line. Committed offsets (OffsetFetch v8+) of several real groups in one call, the
same as librdkafka's list_consumer_group_offsets, over PLAINTEXT and SASL; a NOT_COORDINATOR answer
retried; the poller's committed lines over its kept client. Without servers: the SCRAM client
against RFC 7677's example and an independent server-side computation, the codec's round trips, the
schemas against Kafka's JSON, and fake brokers whose coordinators move, load and go away.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import re
import socket
import struct
import threading
import time
import traceback
import zipfile
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from conftest import SASL_USERS
from hypothesis import example, given, settings
from hypothesis import strategies as st

from collectors.kafka_protocol import (
    AuthenticationError,
    ClientSettings,
    GroupError,
    KafkaConnectionError,
    KafkaProtocolClient,
    UnsupportedVersionError,
    codec,
    describe_consumer_groups_kip848,
    sasl,
)
from collectors.kafka_protocol.connection import Deadline
from collectors.kafka_protocol.errors import ProtocolDecodeError
from collectors.kafka_protocol.messages import (
    ALL_APIS,
    API_VERSIONS,
    DESCRIBE_SHARE_GROUP_OFFSETS,
    FIND_COORDINATOR,
    OFFSET_FETCH,
    Api,
    Field,
    in_versions,
    snake,
)

TOPIC_PARTITIONS = 6
WRONG_PASSWORD = "Not-The-Password-7f3a9c"


# -- SCRAM ----------------------------------------------------------------------------------------
RFC7677 = {  # RFC 7677 section 3, SCRAM-SHA-256 with user "user" and password "pencil"
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}


def test_scram_sha256_reproduces_rfc7677_example():
    client = sasl.ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == RFC7677["client_first"]
    assert client.final_message(RFC7677["server_first"]) == RFC7677["client_final"]
    client.verify_server_final(RFC7677["server_final"])
    with pytest.raises(sasl.ScramError, match="signature does not match"):
        client.verify_server_final(b"v=" + base64.b64encode(b"\0" * 32))
    assert "pencil" not in repr(client)


def _server_side(mech: str, password: str, salt: bytes, iterations: int, auth_message: bytes):
    """What a SCRAM server keeps and computes (RFC 5802 section 3), written out independently."""
    h = sasl.SCRAM_HASHES[mech]
    salted = hashlib.pbkdf2_hmac(h, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    stored_key = hashlib.new(h, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", h).digest()
    return (
        stored_key,
        hmac.new(stored_key, auth_message, h).digest(),
        hmac.new(server_key, auth_message, h).digest(),
    )


nonce_chars = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters=","), min_size=1
)


@settings(max_examples=40, deadline=None)
@given(
    mech=st.sampled_from(sorted(sasl.SCRAM_HASHES)),
    user=st.text(min_size=1, max_size=20),
    password=st.text(max_size=30),
    client_nonce=nonce_chars,
    server_nonce=nonce_chars,
    salt=st.binary(min_size=1, max_size=32),
    iterations=st.integers(4096, 4200),
)
@example(
    mech="SCRAM-SHA-256",
    user="user",
    password="pencil",
    client_nonce="rOprNGfwEbeRWgbNEkqO",
    server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="),
    iterations=4096,
)
def test_scram_client_proves_the_password_and_checks_the_server(
    mech, user, password, client_nonce, server_nonce, salt, iterations
):
    client = sasl.ScramClient(mech, user, password, nonce=client_nonce)
    first = client.first_message().decode()
    escaped = sasl.escape_username(user)
    assert first == f"n,,n={escaped},r={client_nonce}"
    assert "," not in escaped and sasl.unescape_username(escaped) == user
    server_first = f"r={client_nonce}{server_nonce},s={base64.b64encode(salt).decode()},i={iterations}"
    final = client.final_message(server_first.encode()).decode()
    without_proof, _, proof_attr = final.rpartition(",p=")
    assert without_proof == f"c=biws,r={client_nonce}{server_nonce}"
    auth_message = f"{first[3:]},{server_first},{without_proof}".encode()
    stored_key, client_signature, server_signature = _server_side(
        mech, password, salt, iterations, auth_message
    )
    # The server recovers ClientKey from the proof and checks it against StoredKey.
    client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof_attr), client_signature, strict=True))
    assert hashlib.new(sasl.SCRAM_HASHES[mech], client_key).digest() == stored_key
    client.verify_server_final(b"v=" + base64.b64encode(server_signature))
    if (
        mech == "SCRAM-SHA-256"
        and user == "user"
        and password == "pencil"
        and salt == base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    ):
        assert final.encode() == RFC7677["client_final"]
    # A server that does not know the password cannot produce the signature.
    _, _, forged = _server_side(mech, password + "x", salt, iterations, auth_message)
    with pytest.raises(sasl.ScramError):
        client.verify_server_final(b"v=" + base64.b64encode(forged))


def test_scram_refuses_weak_or_foreign_server_messages():
    client = sasl.ScramClient("SCRAM-SHA-512", "u", "p", nonce="abc")
    with pytest.raises(sasl.ScramError, match="nonce"):
        client.final_message(b"r=zzz123,s=AAAA,i=4096")
    with pytest.raises(sasl.ScramError, match="iteration"):
        client.final_message(b"r=abcdef,s=AAAA,i=1")
    with pytest.raises(sasl.ScramError, match="refused"):
        client.final_message(b"e=unknown-user")


# -- codec ----------------------------------------------------------------------------------------
_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _value(f: Field, version: int) -> st.SearchStrategy[Any]:
    t = f.type
    if t in _INTS:
        bits = _INTS[t]
        base: st.SearchStrategy[Any] = st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    elif t == "uint16":
        base = st.integers(0, (1 << 16) - 1)
    elif t == "bool":
        base = st.booleans()
    elif t == "uuid":
        base = st.binary(min_size=16, max_size=16).map(codec.uuid_to_str)
    elif t == "string":
        base = st.text(max_size=12)
    elif t == "bytes":
        base = st.binary(max_size=12)
    elif t.startswith("[]"):
        base = st.lists(_value(Field(f.name, t[2:], fields=f.fields), version), max_size=3)
    else:
        base = _fields(f.fields, version)
    return st.none() | base if f.nullable_in(version) else base


def _fields(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.key: _value(f, version) for f in fields if f.present_in(version)})


CASES = [(api, v) for api in ALL_APIS for v in range(api.min_version, api.max_version + 1)]


@pytest.mark.parametrize(("api", "version"), CASES, ids=[f"{a.name}-v{v}" for a, v in CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_requests_and_responses_round_trip(api: Api, version: int, data):
    request = data.draw(_fields(api.request, version))
    cid = data.draw(st.integers(0, 2**31 - 1))
    client_id = data.draw(st.none() | st.text(max_size=10))
    frame = codec.encode_request(api, version, cid, client_id, request)
    assert codec.decode_request(api, frame) == (version, cid, client_id, request)
    response = data.draw(_fields(api.response, version))
    frame = codec.encode_response(api, version, cid, response)
    assert codec.response_correlation_id(frame) == cid
    assert codec.decode_response(api, version, frame) == response


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(CASES))
def test_arbitrary_bytes_fail_cleanly(raw, case):
    api, version = case
    with contextlib.suppress(ProtocolDecodeError):  # anything else fails the test
        codec.decode_response(api, version, b"\0\0\0\1" + raw)


def _kafka_json(name: str) -> dict | None:
    from collectors.demo.servers.kafka.jars import jars_dir, kafka_version

    jar = jars_dir() / f"kafka-clients-{kafka_version()}.jar"
    if not jar.exists():
        return None
    with zipfile.ZipFile(jar) as z:
        text = z.read(f"common/message/{name}.json").decode()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def _shape(fields: list[dict], common: dict[str, list[dict]], version: int) -> list[tuple]:
    """(key, type, nullable, sub-fields) of the untagged fields Kafka's JSON gives a version."""
    out = []
    for f in fields:
        if "tag" in f or not in_versions(f["versions"], version):
            continue
        sub = f.get("fields") or common.get(f["type"].removeprefix("[]"), [])
        out.append(
            (
                snake(f["name"]),
                f["type"],
                in_versions(f.get("nullableVersions"), version),
                tuple(_shape(sub, common, version)),
            )
        )
    return out


def _our_shape(fields: tuple[Field, ...], version: int) -> list[tuple]:
    return [
        (f.key, f.type, f.nullable_in(version), tuple(_our_shape(f.fields, version)))
        for f in fields
        if f.present_in(version)
    ]


@pytest.mark.parametrize("api", ALL_APIS, ids=[a.name for a in ALL_APIS])
def test_schemas_match_kafkas_json(api: Api):
    for side, ours in (("Request", api.request), ("Response", api.response)):
        spec = _kafka_json(api.name + side)
        if spec is None:
            pytest.skip("Kafka's jars are not in the cache (the broker fixture fetches them)")
        assert spec["apiKey"] == api.key
        common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
        for v in range(api.min_version, api.max_version + 1):
            assert in_versions(spec["validVersions"], v)
            assert in_versions(spec["flexibleVersions"], v) == api.is_flexible(v), (side, v)
            assert _our_shape(ours, v) == _shape(spec["fields"], common, v), (side, v)


# -- settings, timeouts -----------------------------------------------------------------------------
def test_settings_read_librdkafka_keys_and_hide_secrets():
    s = ClientSettings.from_conf(
        {
            "bootstrap.servers": "SASL_SSL://b1:9093, [::1]:9094,b3",
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "u",
            "sasl.password": WRONG_PASSWORD,
            "ssl.endpoint.identification.algorithm": "none",
            "linger.ms": 5,  # unknown to this client: ignored
        }
    )
    assert s.bootstrap == (("b1", 9093), ("::1", 9094), ("b3", 9092))
    assert (s.security_protocol, s.sasl_mechanism, s.verify_hostname) == ("SASL_SSL", "SCRAM-SHA-512", False)
    assert WRONG_PASSWORD not in repr(s)
    with pytest.raises(Exception, match="GSSAPI is not supported"):
        ClientSettings.from_conf({"bootstrap.servers": "b:1", "security.protocol": "SASL_PLAINTEXT"})


def test_a_silent_broker_times_out_within_the_deadline():
    """A listener that accepts connections and never answers: the call ends at its timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        t0 = time.monotonic()
        with pytest.raises(KafkaConnectionError, match="timed out"):
            describe_consumer_groups_kip848(
                {"bootstrap.servers": f"127.0.0.1:{silent.getsockname()[1]}"}, ["g"], timeout_s=1.0
            )
        assert time.monotonic() - t0 < 3


# -- against the real broker ----------------------------------------------------------------------
@dataclass
class Kip848Group:
    group: str
    topic: str
    consumers: list[Any]
    bootstrap: str


def _members_by_id(description: Any) -> dict[str, dict[str, Any]]:
    """confluent-kafka's view of a group's members, in the broker block's terms."""

    def tps(assignment: Any) -> list[list[Any]]:
        return sorted([tp.topic, tp.partition] for tp in getattr(assignment, "topic_partitions", None) or [])

    return {
        m.member_id: {
            "client_id": m.client_id,
            "instance_id": m.group_instance_id,
            "assignment": tps(m.assignment),
            "target_assignment": tps(m.target_assignment),
        }
        for m in description.members
    }


def _describe_stable(admin: Any, g: Kip848Group, timeout_s: float = 60.0) -> Any:
    """Poll the members until confluent-kafka describes the group Stable with 3 partitions each."""
    from confluent_kafka import ConsumerGroupState

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in g.consumers:
            c.poll(0.1)
        if all(len(c.assignment()) == TOPIC_PARTITIONS // 2 for c in g.consumers):
            d = admin.describe_consumer_groups([g.group], request_timeout=10)[g.group].result(15)
            members = _members_by_id(d)
            if (
                d.state == ConsumerGroupState.STABLE
                and len(members) == 2
                and all(
                    m["assignment"] == m["target_assignment"] and len(m["assignment"]) == 3
                    for m in members.values()
                )
            ):
                return d
    raise AssertionError(f"group {g.group} did not become stable in {timeout_s} s")


@pytest.fixture(scope="module")
def kip848_group(kafka_broker):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    suffix = time.time_ns()
    bs = kafka_broker.bootstrap_servers
    g = Kip848Group(f"kip848-{suffix}", f"kip848-data-{suffix}", [], bs)
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(g.topic, TOPIC_PARTITIONS, 1)])[g.topic].result(15)
    # Heartbeats every 0.5 s (the harness broker's minimum) instead of 5 s: the members learn their
    # revocations and assignments in a second, not in 20.
    heartbeat = ConfigEntry(
        "consumer.heartbeat.interval.ms", "500", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, g.group, incremental_configs=[heartbeat])
    admin.incremental_alter_configs([resource])[resource].result(15)
    for i in range(2):
        c = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": g.group,
                "group.protocol": "consumer",
                "client.id": f"member-{i}",
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([g.topic])
        g.consumers.append(c)
    _describe_stable(admin, g)
    yield g
    for c in g.consumers:
        c.close()


def _coordinator_epochs(kafka_broker, group: str, timeout_s: float = 15.0) -> tuple[int, int]:
    """(last group epoch bumped, last target-assignment epoch) in the broker's coordinator log."""
    bumped = re.compile(rf"\[GroupId {re.escape(group)}\] Bumped group epoch to (\d+)")
    target = re.compile(rf"\[GroupId {re.escape(group)}\] Computed a new target assignment for epoch (\d+)")
    deadline = time.monotonic() + timeout_s
    while True:
        lines = kafka_broker.coordinator_lines()
        epochs = [int(m.group(1)) for line in lines if (m := bumped.search(line))]
        targets = [int(m.group(1)) for line in lines if (m := target.search(line))]
        if (epochs and targets) or time.monotonic() > deadline:
            return (epochs or [-1])[-1], (targets or [-1])[-1]
        time.sleep(0.2)


def _assert_matches_the_broker(block: dict, g: Kip848Group, kafka_broker) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": g.bootstrap})
    d = _describe_stable(admin, g)
    theirs = _members_by_id(d)
    # epochs: consistent with each other and with what the coordinator logged
    assert block["state"] == "Stable"
    assert 0 < block["assignment_epoch"] <= block["group_epoch"]
    assert (block["group_epoch"], block["assignment_epoch"]) == _coordinator_epochs(kafka_broker, g.group)
    assert block["assignor"] == d.partition_assignor == "uniform"
    # members: the same ids, clients and assignments as confluent-kafka's describe and the consumers
    assert [m["member_id"] for m in block["members"]] == sorted(theirs)
    assert sorted(c.memberid() for c in g.consumers) == sorted(theirs)
    own = {c.memberid(): sorted([tp.topic, tp.partition] for tp in c.assignment()) for c in g.consumers}
    owned: list[list[Any]] = []
    for m in block["members"]:
        other = theirs[m["member_id"]]
        assert m["member_epoch"] == block["group_epoch"]  # a stable member has caught up
        assert m["member_type"] == 1  # a consumer-protocol member
        assert (m["client_id"], m["instance_id"]) == (other["client_id"], other["instance_id"])
        assert m["assignment"] == other["assignment"] == own[m["member_id"]]
        assert m["target_assignment"] == other["target_assignment"]
        assert m["subscribed"] == [g.topic]
        owned += m["assignment"]
    assert sorted(owned) == [[g.topic, p] for p in range(TOPIC_PARTITIONS)]


@pytest.mark.servers
def test_describes_a_real_kip848_group_as_the_broker_does(kafka_broker, kip848_group):
    blocks = describe_consumer_groups_kip848(
        {"bootstrap.servers": kafka_broker.bootstrap_servers}, [kip848_group.group], 15
    )
    assert set(blocks) == {kip848_group.group}
    _assert_matches_the_broker(blocks[kip848_group.group], kip848_group, kafka_broker)


@pytest.mark.servers
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_same_answer_over_sasl_scram(kafka_broker, kip848_group, mechanism, caplog):
    caplog.set_level(logging.DEBUG)
    conf = {
        "bootstrap.servers": kafka_broker.sasl_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "groupscope",
        "sasl.password": SASL_USERS["groupscope"],
    }
    blocks = describe_consumer_groups_kip848(conf, [kip848_group.group], 15)
    _assert_matches_the_broker(blocks[kip848_group.group], kip848_group, kafka_broker)
    plain = describe_consumer_groups_kip848(
        {"bootstrap.servers": kafka_broker.bootstrap_servers}, [kip848_group.group], 15
    )
    assert blocks == plain
    assert f"{mechanism} as groupscope" in caplog.text  # it did authenticate, as that user
    assert SASL_USERS["groupscope"] not in caplog.text


@pytest.mark.servers
def test_same_answer_over_ssl(kafka_broker, kip848_group):
    conf = {
        "bootstrap.servers": kafka_broker.ssl_bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(kafka_broker.tls.ca_pem),
        "ssl.endpoint.identification.algorithm": "https",
    }
    blocks = describe_consumer_groups_kip848(conf, [kip848_group.group], 15)
    _assert_matches_the_broker(blocks[kip848_group.group], kip848_group, kafka_broker)
    # Without the test CA the broker's certificate is not trusted.
    with pytest.raises(KafkaConnectionError, match="certificate verify failed"):
        describe_consumer_groups_kip848({**conf, "ssl.ca.location": None}, [kip848_group.group], 15)


@pytest.mark.servers
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_wrong_password_is_one_clear_error_without_the_password(kafka_broker, mechanism, caplog):
    caplog.set_level(logging.DEBUG)
    conf = {
        "bootstrap.servers": kafka_broker.sasl_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "groupscope",
        "sasl.password": WRONG_PASSWORD,
    }
    with pytest.raises(AuthenticationError) as info:
        describe_consumer_groups_kip848(conf, ["any-group"], 15)
    text = str(info.value)
    assert f"SASL {mechanism} authentication of user 'groupscope'" in text
    if mechanism == "PLAIN":  # the harness's SASL listener enables SCRAM only
        assert "does not enable PLAIN" in text and "SCRAM-SHA-256" in text
    else:
        assert "wrong user name or password" in text and "SASL_AUTHENTICATION_FAILED" in text
    everything = "".join(traceback.format_exception(info.value)) + repr(info.value) + caplog.text
    assert WRONG_PASSWORD not in everything
    assert info.value.__cause__ is None and info.value.__context__ is None  # one error, not a chain


@pytest.mark.servers
def test_unknown_and_classic_groups_are_reported_per_group(kafka_broker, kip848_group):
    from confluent_kafka import Consumer, TopicPartition

    classic = f"classic-{time.time_ns()}"
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": classic})
    c.commit(offsets=[TopicPartition(kip848_group.topic, 0, 1)], asynchronous=False)  # a simple classic group
    c.close()
    unknown = f"no-such-group-{time.time_ns()}"
    blocks = describe_consumer_groups_kip848(
        {"bootstrap.servers": kafka_broker.bootstrap_servers}, [unknown, classic, kip848_group.group, ""], 15
    )
    assert blocks[unknown]["error"] == "GROUP_ID_NOT_FOUND" and blocks[unknown]["error_code"] == 69
    if tuple(int(x) for x in kafka_broker.version.split(".")[:2]) >= (4, 1):
        assert blocks[classic]["error"] == "GROUP_ID_NOT_FOUND"
        assert "not a consumer group" in blocks[classic]["error_message"]
    else:  # Kafka 4.0 answers a classic group's ConsumerGroupDescribe with UNKNOWN_SERVER_ERROR
        assert blocks[classic]["error"] in ("GROUP_ID_NOT_FOUND", "UNKNOWN_SERVER_ERROR")
    assert blocks[""]["error"] == "INVALID_GROUP_ID"
    _assert_matches_the_broker(blocks[kip848_group.group], kip848_group, kafka_broker)


@pytest.mark.servers
def test_one_client_reuses_its_connections(kafka_broker, kip848_group):
    with KafkaProtocolClient({"bootstrap.servers": kafka_broker.bootstrap_servers}, timeout_s=15) as client:
        first = client.describe_kip848([kip848_group.group])
        second = client.describe_kip848([kip848_group.group])
        assert len(client._conns) == 1  # a single broker: bootstrap and coordinator are one connection
    assert first == second


def _admin_lines(bs: str, admin_topic: str, group: str) -> list[dict]:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer(
        {"bootstrap.servers": bs, "group.id": f"r-{time.time_ns()}", "enable.partition.eof": True}
    )
    reader.assign([TopicPartition(admin_topic, 0, 0)])
    lines, deadline = [], time.monotonic() + 20
    while time.monotonic() < deadline:
        m = reader.poll(1.0)
        if m is None:
            continue
        if m.error():
            if lines:
                break
            continue
        if m.key() == group.encode():
            lines.append(json.loads(m.value()))
    reader.close()
    return lines


@pytest.mark.servers
def test_admin_poller_adds_the_broker_block_to_kip848_groups(kafka_broker, kip848_group, monkeypatch, caplog):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    import collectors.kafka_protocol
    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig
    from collectors.pipeline.route import decode_one

    bs = kafka_broker.bootstrap_servers
    admin_topic = f"admin-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(admin_topic, 1, 1)])[admin_topic].result(15)
    cfg = PipelineConfig(
        redis_url="redis://unused",
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
    )
    poller = AdminPoller(cfg, store=None)
    producer = Producer({"bootstrap.servers": bs})
    _describe_stable(admin, kip848_group)
    assert poller.poll_once(admin, producer) >= 1
    described = [x for x in _admin_lines(bs, admin_topic, kip848_group.group) if "members" in x]
    assert len(described) == 1 and described[0]["type"] == "consumer"
    block = described[0]["broker"]
    _assert_matches_the_broker(block, kip848_group, kafka_broker)
    # the librdkafka part of the line and the broker block describe the same members
    assert {m["member_id"]: m["assignment"] for m in described[0]["members"]} == {
        m["member_id"]: m["assignment"] for m in block["members"]
    }
    [(_, _, _, ev)] = decode_one("admin", admin_topic, 0, 0, 0, b"k", json.dumps(described[0]).encode())
    assert (ev.group_epoch, ev.assignment_epoch, ev.broker_state) == (
        block["group_epoch"],
        block["assignment_epoch"],
        "Stable",
    )
    assert {m.member_id: m.member_epoch for m in ev.members} == {
        m["member_id"]: m["member_epoch"] for m in block["members"]
    }

    # The extra call failing: the lines go out without the block, one warning for repeated failures.
    def unreachable(*_a: Any, **_k: Any) -> dict:
        raise KafkaConnectionError("no bootstrap server reachable: connect to 10.255.255.1:9092: timed out")

    monkeypatch.setattr(collectors.kafka_protocol, "describe_consumer_groups_kip848", unreachable)
    caplog.set_level(logging.WARNING, logger="groupscope.admin")
    admin_topic2 = f"admin-{time.time_ns()}"
    admin.create_topics([NewTopic(admin_topic2, 1, 1)])[admin_topic2].result(15)
    poller.cfg = PipelineConfig(
        redis_url="redis://unused",
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic2,
    )
    poller.forget_sent()  # each poll describes the group (a steady one is not described every time)
    assert poller.poll_once(admin, producer) >= 1
    poller.forget_sent()
    assert poller.poll_once(admin, producer) >= 1
    warnings = [
        r
        for r in caplog.records
        if "ConsumerGroupDescribe" in r.getMessage() and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 1
    described = [x for x in _admin_lines(bs, admin_topic2, kip848_group.group) if "members" in x]
    assert len(described) == 2 and all("broker" not in x for x in described)


# -- committed offsets (OffsetFetch v8+) ----------------------------------------------------------
NOT_COORDINATOR, LOADING, GROUP_AUTHORIZATION_FAILED = 16, 14, 30


class FakeBroker:
    """A loopback listener that speaks just ApiVersions, FindCoordinator, OffsetFetch and
    DescribeShareGroupOffsets, answering
    from `handler(broker, api, body)` (None closes the connection): the client's real socket path
    against coordinators that move, load or go away, which one real broker cannot be made to do on
    cue. Requests are decoded and answers encoded with the codec under test's own schemas."""

    APIS: ClassVar[dict[int, Api]] = {
        a.key: a for a in (API_VERSIONS, FIND_COORDINATOR, OFFSET_FETCH, DESCRIBE_SHARE_GROUP_OFFSETS)
    }

    def __init__(self, node_id: int, handler: Any, offset_fetch_max: int = 9) -> None:
        self.node_id, self.handler, self.offset_fetch_max = node_id, handler, offset_fetch_max
        self.requests: list[tuple[str, int, dict]] = []  # (api name, version, body)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(): no longer listening
        self._listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self._listener.accept()
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read(conn: socket.socket, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise ConnectionError
            buf += chunk
        return buf

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while True:
                frame = self._read(conn, struct.unpack(">i", self._read(conn, 4))[0])
                api = self.APIS[struct.unpack_from(">h", frame)[0]]
                version, cid, _, body = codec.decode_request(api, frame)
                self.requests.append((api.name, version, body))
                if api is API_VERSIONS:
                    keys = [(18, 0, 4), (10, 0, 6), (9, 1, self.offset_fetch_max), (90, 0, 1)]
                    answer: dict | None = {
                        "error_code": 0,
                        "api_keys": [
                            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in keys
                        ],
                        "throttle_time_ms": 0,
                    }
                else:
                    answer = self.handler(self, api, body)
                if answer is None:
                    return
                out = codec.encode_response(api, version, cid, answer)
                conn.sendall(struct.pack(">i", len(out)) + out)

    def fetches(self) -> list[list[str]]:
        return [[g["group_id"] for g in b["groups"]] for name, _, b in self.requests if name == "OffsetFetch"]


def _partition(p: int, offset: int, error: int = 0) -> dict:
    return {
        "partition_index": p,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": error,
    }


class FakeCluster:
    """Two fake brokers and the script of a coordinator move: `owner` is where each group lives;
    the first FindCoordinator answers from `stale` (what a broker believed before the move);
    `loading[g]` answers COORDINATOR_LOAD_IN_PROGRESS that many times (-1: forever); a group in
    `drop` makes its coordinator close the connection the first time it is asked for it, and move."""

    def __init__(self, offset_fetch_max: int = 9) -> None:
        self.owner: dict[str, int] = {}
        self.stale: dict[str, int] = {}
        self.loading: dict[str, int] = {}
        self.drop: dict[str, int] = {}  # group -> where it moves when its coordinator drops the connection
        self.offsets: dict[str, list[dict]] = {}
        self.errors: dict[str, int] = {}
        self.finds: list[list[str]] = []
        self.gone_after_finds: int | None = None  # then every broker goes away (at a FindCoordinator)
        self.brokers = {n: FakeBroker(n, self.handle, offset_fetch_max) for n in (1, 2)}

    @property
    def conf(self) -> dict[str, str]:
        return {"bootstrap.servers": f"127.0.0.1:{self.brokers[1].port}"}

    def close(self) -> None:
        for b in self.brokers.values():
            b.close()

    def handle(self, broker: FakeBroker, api: Api, body: dict) -> dict | None:
        if api is FIND_COORDINATOR:
            keys = body["coordinator_keys"]
            if self.gone_after_finds is not None and len(self.finds) >= self.gone_after_finds:
                self.close()
                return None
            where = {**self.owner, **(self.stale if not self.finds else {})}
            self.finds.append(keys)
            return {
                "throttle_time_ms": 0,
                "coordinators": [
                    {
                        "key": k,
                        "node_id": where[k],
                        "host": "127.0.0.1",
                        "port": self.brokers[where[k]].port,
                        "error_code": 0,
                        "error_message": None,
                    }
                    for k in keys
                ],
            }
        groups = []
        for g in (x["group_id"] for x in body["groups"]):
            if g in self.drop and self.owner[g] == broker.node_id:
                self.owner[g] = self.drop.pop(g)
                return None
            code, topics = 0, self.offsets.get(g, [])
            if self.owner[g] != broker.node_id:
                code = NOT_COORDINATOR
            elif self.loading.get(g):
                code = LOADING
                self.loading[g] -= 1
            elif g in self.errors:
                code = self.errors[g]
            groups.append(
                {"group_id": g, "topics": [] if code else topics, "error_code": code, "error_message": None}
            )
        return {"throttle_time_ms": 0, "groups": groups}


@pytest.fixture()
def fake_cluster():
    cluster = FakeCluster()
    yield cluster
    cluster.close()


def test_fetch_committed_follows_coordinator_moves_and_loading(fake_cluster):
    c = fake_cluster
    t = "orders"
    c.owner = {"g1": 1, "moved": 2, "loading": 1, "denied": 1, "dropped": 2, "empty": 2}
    c.stale = {"moved": 1}  # the first FindCoordinator still points at the old coordinator
    c.loading = {"loading": 2}
    c.drop = {"dropped": 1}  # its coordinator goes away mid-request; it comes back on broker 1
    c.errors = {"denied": GROUP_AUTHORIZATION_FAILED}
    c.offsets = {
        "g1": [{"name": t, "partitions": [_partition(1, 7), _partition(0, 5), _partition(2, -1)]}],
        "moved": [
            {"name": "b", "partitions": [_partition(0, 1)]},
            {"name": "a", "partitions": [_partition(3, 9)]},
        ],
        "loading": [{"name": t, "partitions": [_partition(0, 11), _partition(1, 0, error=3)]}],
        "dropped": [{"name": t, "partitions": [_partition(5, 50)]}],
    }
    with KafkaProtocolClient(c.conf, timeout_s=10) as client:
        got = client.fetch_committed(["g1", "moved", "loading", "denied", "dropped", "empty", "g1"])
    assert got == {
        "g1": [(t, 0, 5), (t, 1, 7)],  # offset -1 left out, sorted
        "moved": [("a", 3, 9), ("b", 0, 1)],
        "loading": [(t, 0, 11)],  # a partition with an error left out
        "denied": GroupError(GROUP_AUTHORIZATION_FAILED, None),  # reported, the others unaffected
        "dropped": [(t, 5, 50)],
        "empty": [],
    }
    # One FindCoordinator for all, then only for the groups still to place; one OffsetFetch per
    # coordinator and round, each with all of that coordinator's groups. Round 1: "moved" answered
    # NOT_COORDINATOR by its old coordinator, "loading" loading, broker 2 gone with "dropped" and
    # "empty" in flight; round 2: those four placed again (broker 2 reconnected); round 3: "loading".
    assert c.finds == [
        ["denied", "dropped", "empty", "g1", "loading", "moved"],
        ["dropped", "empty", "loading", "moved"],
        ["loading"],
    ]
    assert c.brokers[1].fetches() == [
        ["denied", "g1", "loading", "moved"],
        ["dropped", "loading"],
        ["loading"],
    ]
    assert c.brokers[2].fetches() == [["dropped", "empty"], ["empty", "moved"]]
    _, version, body = next(r for r in c.brokers[1].requests if r[0] == "OffsetFetch")
    assert version == 9 and body["require_stable"] is False
    assert body["groups"][0] == {"group_id": "denied", "member_id": None, "member_epoch": -1, "topics": None}


def _share_partition(p: int, start: int, lag: int = -1, error: int = 0) -> dict:
    return {
        "partition_index": p,
        "start_offset": start,
        "leader_epoch": 0,
        "lag": lag,
        "error_code": error,
        "error_message": None,
    }


def test_describe_share_group_offsets_per_coordinator_with_retries(fake_cluster):
    """DescribeShareGroupOffsets (API key 90) takes the OffsetFetch path: one FindCoordinator, many
    groups a request to each coordinator (v1, the highest both speak), Topics null for all of a
    group's topics or the topics asked for; moved and loading groups asked again; -1 start offsets
    kept (the poller leaves them out of the group's progress), partitions with an error left out."""
    c = fake_cluster
    tid = "bhmqV4K2TEe9s1FkC9wc5w"
    c.owner = {"sg": 1, "moved": 2, "loading": 1, "denied": 2}
    c.stale = {"moved": 1}
    c.loading = {"loading": 1}
    c.errors = {"denied": GROUP_AUTHORIZATION_FAILED}
    c.offsets = {
        "sg": [
            {
                "topic_name": "orders",
                "topic_id": tid,
                "partitions": [
                    _share_partition(1, 17, 3),
                    _share_partition(0, -1),
                    _share_partition(2, 0, 0, 29),
                ],
            }
        ],
        "moved": [{"topic_name": "a", "topic_id": tid, "partitions": [_share_partition(0, 5, 0)]}],
        "loading": [{"topic_name": "b", "topic_id": tid, "partitions": [_share_partition(3, 9, 1)]}],
    }
    with KafkaProtocolClient(c.conf, timeout_s=10) as client:
        got = client.describe_share_group_offsets(["sg", "moved", "loading", "denied"])
        asked = client.describe_share_group_offsets({"sg": {"orders": [1, 0, 1]}, "moved": None})
    assert got == {
        "sg": [("orders", 0, -1, -1), ("orders", 1, 17, 3)],
        "moved": [("a", 0, 5, 0)],
        "loading": [("b", 3, 9, 1)],
        "denied": GroupError(GROUP_AUTHORIZATION_FAILED, None),
    }
    assert asked == {"sg": got["sg"], "moved": got["moved"]}
    share = [
        (b.node_id, v, body)
        for b in c.brokers.values()
        for name, v, body in b.requests
        if name == "DescribeShareGroupOffsets"
    ]
    assert {v for _, v, _ in share} == {1}
    first = {n: [g["group_id"] for g in body["groups"]] for n, _, body in share[:1]}
    assert first == {1: ["loading", "moved", "sg"]}  # "moved" still thought on broker 1 at first
    assert all(g["topics"] is None for g in share[0][2]["groups"])
    by_group = {g["group_id"]: g["topics"] for _, _, body in share for g in body["groups"]}
    assert by_group["sg"] == [{"topic_name": "orders", "partitions": [0, 1]}]
    assert by_group["moved"] is None


def test_fetch_committed_gives_up_at_the_deadline_per_group(fake_cluster):
    c = fake_cluster
    c.owner = {"stuck": 1, "fine": 1}
    c.loading = {"stuck": -1}  # loads forever
    c.offsets = {"fine": [{"name": "t", "partitions": [_partition(0, 3)]}]}
    t0 = time.monotonic()
    with KafkaProtocolClient(c.conf) as client:
        got = client.fetch_committed(["stuck", "fine"], Deadline(1.5))
    assert time.monotonic() - t0 < 2.5
    assert got == {"stuck": GroupError(LOADING, None), "fine": [("t", 0, 3)]}
    assert len(c.finds) >= 3  # it did go round again while it had time


def test_fetch_committed_keeps_what_it_got_when_a_retry_round_fails(fake_cluster):
    c = fake_cluster
    c.owner = {"stuck": 1, "fine": 1}
    c.loading = {"stuck": -1}
    c.offsets = {"fine": [{"name": "t", "partitions": [_partition(0, 3)]}]}
    c.gone_after_finds = 1  # the cluster goes away before the retry round's FindCoordinator
    with KafkaProtocolClient(c.conf) as client:
        got = client.fetch_committed(["stuck", "fine"], Deadline(10))
        assert got["fine"] == [("t", 0, 3)]
        assert got["stuck"].code == 13 and "FindCoordinator" in (got["stuck"].message or "")
        with pytest.raises(KafkaConnectionError, match="no bootstrap server reachable"):
            client.fetch_committed(["fine"])  # a first round failing is the whole call failing


@pytest.mark.parametrize("max_version", [8, 7])
def test_fetch_committed_version_negotiation(max_version):
    cluster = FakeCluster(offset_fetch_max=max_version)
    try:
        cluster.owner = {f"g{i}": 1 for i in range(5)}
        with KafkaProtocolClient(cluster.conf) as client:
            if max_version < OFFSET_FETCH.min_version:  # before Kafka 3.0: no multi-group OffsetFetch
                with pytest.raises(UnsupportedVersionError, match="OffsetFetch"):
                    client.fetch_committed(["g0"])
                return
            got = client.fetch_committed(cluster.owner, chunk=2)
        assert got == {g: [] for g in cluster.owner}
        assert cluster.brokers[1].fetches() == [["g0", "g1"], ["g2", "g3"], ["g4"]]  # chunks of 2
        assert {v for name, v, _ in cluster.brokers[1].requests if name == "OffsetFetch"} == {8}
    finally:
        cluster.close()


def _librdkafka_committed(admin: Any, group: str) -> list[tuple[str, int, int]]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=15)
    tps = res[group].result(20).topic_partitions or []
    return sorted((tp.topic, tp.partition, tp.offset) for tp in tps if tp.offset >= 0)


@dataclass
class CommittedGroups:
    offsets: dict[str, list[tuple[str, int, int]]]  # what was committed, per group
    member: str  # a classic group with a live member that committed what it consumed
    no_offsets: str  # a group with a live member that never committed
    unknown: str


@pytest.fixture(scope="module")
def committed_groups(kafka_broker):
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = kafka_broker.bootstrap_servers
    suffix = time.time_ns()
    t1, t2 = f"committed-a-{suffix}", f"committed-b-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(t1, 4, 1), NewTopic(t2, 2, 1)]).values():
        f.result(15)
    offsets = {
        f"offsets-1-{suffix}": [(t1, 0, 5), (t1, 3, 17)],
        f"offsets-2-{suffix}": [(t1, 1, 0), (t2, 0, 42), (t2, 1, 7)],
        f"offsets-3-{suffix}": [(t2, 1, 123_456_789_012)],
    }
    for g, tps in offsets.items():
        req = ConsumerGroupTopicPartitions(g, [TopicPartition(t, p, o) for t, p, o in tps])
        admin.alter_consumer_group_offsets([req], request_timeout=15)[g].result(20)
    p = Producer({"bootstrap.servers": bs})
    for i in range(12):
        p.produce(t1, value=b"x", partition=i % 4)
    p.flush(15)
    groups = CommittedGroups(offsets, f"member-{suffix}", f"no-commit-{suffix}", f"unknown-{suffix}")
    consumers = []
    for g, topic in ((groups.member, t1), (groups.no_offsets, t2)):
        c = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": g,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        c.subscribe([topic])
        consumers.append(c)
    deadline, n = time.monotonic() + 60, 0
    while time.monotonic() < deadline and (n < 12 or not consumers[1].assignment()):
        for c in consumers:
            m = c.poll(0.2)
            n += bool(c is consumers[0] and m is not None and not m.error())
    assert n == 12 and consumers[1].assignment()
    consumers[0].commit(asynchronous=False)
    yield groups
    for c in consumers:
        c.close()


def _all_committed_groups(g: CommittedGroups) -> list[str]:
    return [*g.offsets, g.member, g.no_offsets, g.unknown]


@pytest.mark.servers
def test_fetch_committed_matches_librdkafka_on_a_real_broker(kafka_broker, committed_groups, kip848_group):
    from confluent_kafka.admin import AdminClient

    g = committed_groups
    names = [*_all_committed_groups(g), kip848_group.group]
    with KafkaProtocolClient({"bootstrap.servers": kafka_broker.bootstrap_servers}, timeout_s=15) as client:
        got = client.fetch_committed(names)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    assert got == {name: _librdkafka_committed(admin, name) for name in names}
    for name, tps in g.offsets.items():
        assert got[name] == sorted(tps)
    topic = next(iter(g.offsets.values()))[0][0]
    assert got[g.member] == [(topic, p, 3) for p in range(4)]  # 12 messages over 4 partitions, all consumed
    assert got[g.no_offsets] == [] and got[g.unknown] == []


@pytest.mark.servers
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_fetch_committed_over_sasl_scram(kafka_broker, committed_groups, mechanism):
    names = _all_committed_groups(committed_groups)
    conf = {
        "bootstrap.servers": kafka_broker.sasl_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "groupscope",
        "sasl.password": SASL_USERS["groupscope"],
    }
    with KafkaProtocolClient(conf, timeout_s=15) as client:
        over_sasl = client.fetch_committed(names)
    with KafkaProtocolClient({"bootstrap.servers": kafka_broker.bootstrap_servers}, timeout_s=15) as client:
        plain = client.fetch_committed(names)
    assert over_sasl == plain
    assert over_sasl[next(iter(committed_groups.offsets))]  # not trivially equal: offsets came back


@pytest.mark.servers
def test_fetch_committed_retries_a_not_coordinator_group_on_a_real_broker(
    kafka_broker, committed_groups, monkeypatch
):
    """The real broker's first answer, with one group's part replaced by NOT_COORDINATOR (what a
    coordinator says right after its partition moved): that group alone is placed and asked again."""
    from collectors.kafka_protocol.connection import BrokerConnection

    names = _all_committed_groups(committed_groups)
    victim = names[1]
    receive = BrokerConnection.receive
    finds: list[list[str]] = []

    def first_answer_says_moved(self, api, version, cid, deadline):
        answer = receive(self, api, version, cid, deadline)
        if api is OFFSET_FETCH and len(finds) == 1:
            for group in answer["groups"]:
                if group["group_id"] == victim:
                    group["error_code"], group["topics"] = NOT_COORDINATOR, []
        return answer

    find = KafkaProtocolClient.find_coordinators

    def counted_find(self, group_ids, deadline=None):
        finds.append(sorted(group_ids))
        return find(self, group_ids, deadline)

    monkeypatch.setattr(BrokerConnection, "receive", first_answer_says_moved)
    monkeypatch.setattr(KafkaProtocolClient, "find_coordinators", counted_find)
    with KafkaProtocolClient({"bootstrap.servers": kafka_broker.bootstrap_servers}, timeout_s=15) as client:
        got = client.fetch_committed(names)
    assert finds == [sorted(names), [victim]]
    assert got[victim] == sorted(committed_groups.offsets[victim])
    monkeypatch.undo()
    with KafkaProtocolClient({"bootstrap.servers": kafka_broker.bootstrap_servers}, timeout_s=15) as client:
        assert got == client.fetch_committed(names)


@pytest.mark.servers
def test_admin_poller_committed_lines_over_a_kept_client(kafka_broker, committed_groups, caplog):
    """The poller's committed lines come from OffsetFetch, over one protocol client kept across polls;
    dead connections and a failing call are survived (reconnect), and stop() closes it."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig

    bs = kafka_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    producer = Producer({"bootstrap.servers": bs})
    g = next(iter(committed_groups.offsets))

    def config() -> PipelineConfig:
        admin_topic = f"admin-{time.time_ns()}"
        admin.create_topics([NewTopic(admin_topic, 1, 1)])[admin_topic].result(15)
        return PipelineConfig(
            redis_url="redis://unused",
            checkpoint_dir="/tmp",
            kafka={"bootstrap.servers": bs},
            admin_topic=admin_topic,
        )

    def committed_lines(cfg: PipelineConfig, group: str) -> list[dict]:
        return [x for x in _admin_lines(bs, cfg.admin_topic, group) if "committed" in x]

    poller = AdminPoller(config(), store=None)
    assert poller.poll_once(admin, producer) >= 1
    client = poller.link.kept
    assert client is not None
    # Its connections die under it (a broker restart): the next poll reconnects on its own.
    for conn in client._conns.values():
        conn._sock.shutdown(socket.SHUT_RDWR)
    # Unchanged answers are held back (admin_changes.py): forget what was sent, so the second poll's
    # committed lines show what it fetched over the new connections.
    poller.forget_sent()
    assert poller.poll_once(admin, producer) >= 1
    assert poller.link.kept is client
    lines = committed_lines(poller.cfg, g)
    assert [x["committed"] for x in lines] == [[list(tp) for tp in sorted(committed_groups.offsets[g])]] * 2
    assert set(lines[0]) == {"ts", "group", "committed"}
    assert [x["committed"] for x in committed_lines(poller.cfg, committed_groups.no_offsets)] == [[], []]
    # The whole call failing: the poll goes on without committed lines, warned once, then recovers.
    caplog.set_level(logging.WARNING, logger="groupscope.admin")
    poller.cfg = config()
    good = poller.cfg.kafka
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        poller.cfg.kafka = {"bootstrap.servers": f"127.0.0.1:{closed.getsockname()[1]}"}  # nobody listens
        assert poller.poll_once(admin, producer) >= 1
        assert poller.poll_once(admin, producer) >= 1
    assert poller.link.kept is None  # dropped after the failure: the next poll starts afresh
    assert len([r for r in caplog.records if "OffsetFetch" in r.getMessage()]) == 1
    poller.cfg.kafka = good
    assert poller.poll_once(admin, producer) >= 1
    assert [x["committed"] for x in committed_lines(poller.cfg, g)] == [
        [list(tp) for tp in sorted(committed_groups.offsets[g])]
    ]
    kept = poller.link.kept
    poller.stop()
    assert poller.link.kept is None and kept is not None and not kept._conns


@pytest.mark.servers
def test_poller_sends_no_committed_offsets_when_the_offsets_topic_is_read(
    kafka_broker: Any, committed_groups: Any
) -> None:
    """With `__consumer_offsets` readable the pipeline has every commit first hand: the poller still
    fetches committed offsets (they say which partitions need log-end offsets, for a group without
    members too) but sends none of them; the log-end offsets go as the cluster's, a line per topic."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from collectors.pipeline.admin_poller import AdminPoller
    from collectors.pipeline.job import PipelineConfig
    from collectors.pipeline.route import decode_one

    bs = kafka_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    producer = Producer({"bootstrap.servers": bs})
    admin_topic = f"admin-{time.time_ns()}"
    admin.create_topics([NewTopic(admin_topic, 1, 1)])[admin_topic].result(15)
    cfg = PipelineConfig(
        redis_url="redis://unused",
        checkpoint_dir="/tmp",
        kafka={"bootstrap.servers": bs},
        admin_topic=admin_topic,
    )
    poller = AdminPoller(cfg, store=None, offsets_readable=True)
    try:
        assert poller.poll_once(admin, producer) >= 1
    finally:
        poller.stop()
    g = next(iter(committed_groups.offsets))
    lines = _admin_lines(bs, admin_topic, g)
    assert not [x for x in lines if "committed" in x or "end_offsets" in x]
    mine = {t for t, _, _ in committed_groups.offsets[g]}
    ends = [x for x in _admin_lines(bs, admin_topic, "") if "end_offsets" in x]  # and the clock
    cluster = [x for x in ends if x["end_offsets"][0][0] in mine]
    assert sorted(x["end_offsets"][0][0] for x in cluster) == sorted(mine)  # a line per topic
    rows = {(t, p) for x in cluster for t, p, _ in x["end_offsets"]}
    assert {(t, p) for t, p, _ in committed_groups.offsets[g]} <= rows
    # the model reads each as one EndOffsets with a row per partition, the cluster's (group "")
    for line in cluster:
        [(grp, _, _, ev)] = decode_one("admin", admin_topic, 0, 0, 0, b"", json.dumps(line).encode())
        assert grp == ""
        assert sorted(ev.rows) == sorted((t, p, off) for t, p, off in line["end_offsets"])
