"""groupscope's Kafka security settings (librdkafka's) carried to the demo's Kafka Streams application,
a Java client (collectors/demo/streams_app/security.py), without servers: each setting's Java
counterpart, each refusal one message naming the setting (and never the secret), the private file the
application reads them from, and the demo's Streams worker and scenario using them. Their live run
over SASL_SSL and mutual TLS on the harness's broker is tests/test_streams_security_live.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from collectors.demo.servers.kafka.broker import TlsFiles
from collectors.demo.servers.kafka.tls import make_test_tls
from collectors.demo.streams_app import StreamsApp, StreamsAppError
from collectors.demo.streams_app.security import (
    PROPERTIES_FILE,
    StreamsSecurityError,
    java_client_properties,
    properties_escape,
    write_private_properties,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSWORD = 'pa"ss\\w=rd: #1'  # a quote, a backslash and the properties format's separators


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_test_tls(tmp_path_factory.mktemp("streams-tls"))


def sasl(mechanism: str = "SCRAM-SHA-512", protocol: str = "SASL_PLAINTEXT", **more: Any) -> dict[str, Any]:
    return {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": "app",
        "sasl.password": PASSWORD,
        **more,
    }


def unencrypted_pkcs8(tls: TlsFiles) -> str:
    key = load_pem_private_key(tls.client_key_pem.read_bytes(), None)
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


# -- what each setting becomes ---------------------------------------------------------------------
def test_plaintext_needs_nothing() -> None:
    assert java_client_properties({}) == {}
    # sasl.* and ssl.* are not looked at when the protocol does not use them, as librdkafka does
    assert java_client_properties({"security.protocol": "plaintext", "sasl.mechanism": "GSSAPI"}) == {}
    assert java_client_properties({"debug": "all", "socket.timeout.ms": "1000"}) == {}


@pytest.mark.parametrize(
    ("mechanism", "module"), [("SCRAM-SHA-512", SCRAM), ("SCRAM-SHA-256", SCRAM), ("PLAIN", PLAIN)]
)
def test_sasl_mechanisms_become_a_jaas_line(mechanism: str, module: str) -> None:
    props = java_client_properties(sasl(mechanism.lower()))
    # the password's quote and backslash escaped as Java's StreamTokenizer (Kafka's JaasConfig) reads them
    assert props == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="app" password="pa\\"ss\\\\w=rd: #1";',
    }


def test_librdkafkas_own_spelling_and_the_settings_of_other_mechanisms() -> None:
    conf = sasl()
    conf["sasl.mechanisms"] = conf.pop("sasl.mechanism")
    conf |= {"sasl.kerberos.service.name": "kafka", "sasl.oauthbearer.method": "default"}
    conf |= {"ssl.cipher.suites": "HIGH"}  # not TLS: not looked at
    assert java_client_properties(conf)["sasl.mechanism"] == "SCRAM-SHA-512"


def test_sasl_ssl_with_a_ca_file(tls: TlsFiles) -> None:
    props = java_client_properties(sasl(protocol="SASL_SSL", **{"ssl.ca.location": str(tls.ca_pem)}))
    assert props["security.protocol"] == "SASL_SSL"
    assert props["ssl.truststore.type"] == "PEM"
    assert props["ssl.truststore.location"] == str(tls.ca_pem.resolve())
    assert "ssl.endpoint.identification.algorithm" not in props  # https, the Java default too
    assert set(props) == {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.type",
        "ssl.truststore.location",
    }


def test_ca_inline_combined_probed_and_no_host_name_check(tls: TlsFiles) -> None:
    ca = tls.ca_pem.read_text()
    inline = java_client_properties({"security.protocol": "SSL", "ssl.ca.pem": ca})
    assert inline == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca,
    }
    both = java_client_properties(
        {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca_pem), "ssl.ca.pem": ca}
    )
    assert both["ssl.truststore.certificates"].count("BEGIN CERTIFICATE") == 2
    # librdkafka's "probe" (the system's CAs) and no CA at all: the JVM's own trusted CAs
    for conf in ({"ssl.ca.location": "probe"}, {}):
        assert java_client_properties({"security.protocol": "SSL", **conf}) == {"security.protocol": "SSL"}
    none = java_client_properties(
        {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"}
    )
    assert none["ssl.endpoint.identification.algorithm"] == ""
    verify = {"security.protocol": "SSL", "enable.ssl.certificate.verification": "true"}
    assert java_client_properties(verify) == {"security.protocol": "SSL"}


def test_a_client_certificate_in_each_form_becomes_a_pem_keystore(tls: TlsFiles) -> None:
    """PEM files (the key plain or encrypted), inline PEM, a PKCS#12 keystore, and a PKCS#1 key
    (`BEGIN RSA PRIVATE KEY`, which librdkafka reads and the Java client does not): each the same
    chain and the same key, as unencrypted PKCS#8 with no password for the Java client."""
    assert tls.client_cert_pem and tls.client_key_pem and tls.client_key_encrypted_pem and tls.client_p12
    key = unencrypted_pkcs8(tls)
    cert = tls.client_cert_pem.read_text()
    pkcs1 = (
        load_pem_private_key(tls.client_key_pem.read_bytes(), None)
        .private_bytes(Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption())
        .decode()
    )
    assert "BEGIN RSA PRIVATE KEY" in pkcs1
    base = {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca_pem)}
    forms = {
        "pem files": {
            "ssl.certificate.location": str(tls.client_cert_pem),
            "ssl.key.location": str(tls.client_key_pem),
        },
        "pem files, encrypted key": {
            "ssl.certificate.location": str(tls.client_cert_pem),
            "ssl.key.location": str(tls.client_key_encrypted_pem),
            "ssl.key.password": tls.client_password,
        },
        "inline pem": {"ssl.certificate.pem": cert, "ssl.key.pem": tls.client_key_pem.read_text()},
        "inline pkcs#1": {"ssl.certificate.pem": cert, "ssl.key.pem": pkcs1},
        "pkcs12 keystore": {
            "ssl.keystore.location": str(tls.client_p12),
            "ssl.keystore.password": tls.client_password,
        },
        # librdkafka ignores a password the key does not need
        "pem files, a needless password": {
            "ssl.certificate.location": str(tls.client_cert_pem),
            "ssl.key.location": str(tls.client_key_pem),
            "ssl.key.password": "unused",
        },
    }
    for form, settings in forms.items():
        props = java_client_properties({**base, **settings})
        assert props["ssl.keystore.type"] == "PEM", form
        assert props["ssl.keystore.key"] == key, form
        assert "ENCRYPTED" not in props["ssl.keystore.key"] and "ssl.key.password" not in props, form
        chain = props["ssl.keystore.certificate.chain"]
        assert cert.strip() in chain, form  # the keystore's chain also holds the CA
        assert props["ssl.truststore.location"] == str(tls.ca_pem.resolve()), form


# -- what is refused -------------------------------------------------------------------------------
def refusals(tmp: Path, tls: TlsFiles) -> list[tuple[dict[str, Any], str]]:
    """(settings, the setting the refusal names)."""
    ssl = {"security.protocol": "SSL"}
    cert = {"ssl.certificate.location": str(tls.client_cert_pem)}
    return [
        ({"security.protocol": "SASL_SSL"}, "sasl.mechanism"),  # librdkafka's default: GSSAPI
        (sasl("GSSAPI"), "sasl.mechanism"),
        (sasl("OAUTHBEARER"), "sasl.mechanism"),
        ({**sasl(), "sasl.mechanisms": "OAUTHBEARER", "sasl.mechanism": ""}, "sasl.mechanisms"),
        ({**sasl(), "sasl.username": ""}, "sasl.username"),
        ({k: v for k, v in sasl().items() if k != "sasl.password"}, "sasl.password"),
        ({**sasl(), "sasl.password": "two\nlines"}, "sasl.password"),
        ({**sasl(), "sasl.something.new": "x"}, "sasl.something.new"),
        ({"security.protocol": "SASL_WHATEVER"}, "security.protocol"),
        ({**ssl, "enable.ssl.certificate.verification": "false"}, "enable.ssl.certificate.verification"),
        ({**ssl, "enable.ssl.certificate.verification": False}, "enable.ssl.certificate.verification"),
        ({**ssl, "ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384"}, "ssl.cipher.suites"),
        ({**ssl, "ssl.curves.list": "P-256"}, "ssl.curves.list"),
        ({**ssl, "ssl.sigalgs.list": "RSA-PSS+SHA256"}, "ssl.sigalgs.list"),
        ({**ssl, "ssl.crl.location": "/etc/crl.pem"}, "ssl.crl.location"),
        ({**ssl, "ssl.engine.id": "pkcs11"}, "ssl.engine.id"),
        ({**ssl, "ssl.providers": "default,legacy"}, "ssl.providers"),
        ({**ssl, "ssl.ca.location": str(tmp)}, "ssl.ca.location"),  # OpenSSL's CA directory
        ({**ssl, "ssl.ca.location": str(tmp / "missing.pem")}, "ssl.ca.location"),
        ({**ssl, "ssl.endpoint.identification.algorithm": "x509"}, "ssl.endpoint.identification.algorithm"),
        ({**ssl, "ssl.key.location": str(tls.client_key_pem)}, "ssl.key.location"),  # half a certificate
        ({**ssl, **cert, "ssl.key.location": str(tmp / "missing.key")}, "ssl.key.location"),
        ({**ssl, **cert, "ssl.key.location": str(tls.client_key_encrypted_pem)}, "ssl.key.location"),
        (
            {
                **ssl,
                **cert,
                "ssl.key.location": str(tls.client_key_encrypted_pem),
                "ssl.key.password": PASSWORD,  # the wrong one
            },
            "ssl.key.location",
        ),
        ({**ssl, "ssl.certificate.pem": "not a certificate", "ssl.key.pem": "x"}, "ssl.certificate.pem"),
        (
            {**ssl, "ssl.keystore.location": str(tls.client_p12), "ssl.keystore.password": PASSWORD},
            "ssl.keystore",
        ),
    ]


def test_each_setting_that_cannot_be_carried_is_refused_naming_it(tmp_path: Path, tls: TlsFiles) -> None:
    for conf, setting in refusals(tmp_path, tls):
        with pytest.raises(StreamsSecurityError) as e:
            java_client_properties(conf)
        message = str(e.value)
        assert setting in message, (conf, message)
        assert "\n" not in message, message  # one line
        assert PASSWORD not in message and "two\nlines" not in message
        assert str(tls.client_password) not in message


# -- the private file ------------------------------------------------------------------------------
def test_the_properties_file_is_private_and_escaped(tmp_path: Path) -> None:
    props = {
        "sasl.jaas.config": f'{SCRAM} required username="app" password="x";',
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        "ssl.endpoint.identification.algorithm": "",
        "odd key": " leading space, é, \U0001f511, tab\t!",
    }
    private = write_private_properties(props, parent=tmp_path)
    assert private.path == private.folder / PROPERTIES_FILE and private.folder.parent == tmp_path
    assert stat.S_IMODE(private.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(private.path.stat().st_mode) == 0o600
    lines = private.path.read_text(encoding="ascii").splitlines()
    assert lines == [
        f'sasl.jaas.config={SCRAM} required username\\="app" password\\="x";',
        "ssl.keystore.key=-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n",
        "ssl.endpoint.identification.algorithm=",
        "odd\\ key=\\ leading space, \\u00e9, \\ud83d\\udd11, tab\\t\\!",
    ]
    private.remove()
    assert not private.folder.exists()


def test_properties_escape() -> None:
    assert properties_escape("a=b:c#d!e\\f") == "a\\=b\\:c\\#d\\!e\\\\f"
    assert properties_escape(" x y") == "\\ x y" and properties_escape("x y", key=True) == "x\\ y"
    assert properties_escape("\r\n\f\x01") == "\\r\\n\\f\\u0001"


# -- the application and the demo ------------------------------------------------------------------
def test_no_secret_on_the_applications_command_line(tmp_path: Path) -> None:
    props = java_client_properties(sasl())
    app = StreamsApp("h:9093", "wc", "in", "out", "wc-1", tmp_path, client_config=props)
    argv = app.argv(Path("/classes"), "java", "/jars/*", config_file=tmp_path / "p" / PROPERTIES_FILE)
    assert argv[argv.index("--config-file") + 1] == str(tmp_path / "p" / PROPERTIES_FILE)
    assert PASSWORD not in " ".join(argv) and "jaas" not in " ".join(argv)
    assert "client_config" not in repr(app) and PASSWORD not in repr(app)
    # a secret given as a command-line setting is refused
    for key in ("sasl.jaas.config", "ssl.keystore.password", "ssl.keystore.key"):
        with pytest.raises(StreamsAppError, match=key):
            StreamsApp("h:9093", "wc", "in", "out", "wc-1", tmp_path, config={key: "x"}).app_args()


def test_the_streams_worker_carries_the_demos_settings(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """`python -m collectors.demo.worker streams`: the user's settings (what every demo client reads)
    mapped onto the Streams application's; a setting it cannot carry ends it with one line naming it."""
    from collectors.demo import worker

    made: list[dict[str, Any]] = []

    class FakeApp:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(kwargs)
            self.proc = type("P", (), {"pid": 1})()
            self.running = False

        def start(self) -> FakeApp:
            return self

        def close(self, timeout: float = 30.0) -> int:
            return 0

        def diagnostics(self) -> str:
            return ""

    monkeypatch.setattr("collectors.demo.streams_app.StreamsApp", FakeApp)
    argv = ["streams", "--bootstrap-servers", "h:9093", "--application-id", "wc", "--input-topic", "in"]
    argv += ["--output-topic", "out", "--client-id", "wc-1", "--workdir", "/tmp/unused"]
    monkeypatch.setattr(worker, "_cluster_conf", lambda: sasl(protocol="SASL_PLAINTEXT"))
    worker.run_streams(worker.parse(argv))
    assert made[-1]["client_config"] == java_client_properties(sasl(protocol="SASL_PLAINTEXT"))
    capsys.readouterr()

    monkeypatch.setattr(worker, "_cluster_conf", lambda: sasl("GSSAPI"))
    assert worker.run_streams(worker.parse(argv)) == 2
    (line,) = capsys.readouterr().out.splitlines()
    said = json.loads(line)
    assert said["event"] == "error" and "sasl.mechanism" in said["error"] and len(made) == 1


def test_the_streams_scenario_is_left_out_naming_the_setting(tmp_path: Path, monkeypatch) -> None:
    """A setting the Java client cannot carry: the demo says so once, naming it, starts no Streams
    instance (which would only fail and be restarted), and runs the other scenarios."""
    import time

    from collectors.demo import scenarios
    from collectors.demo.scenarios import SCENARIOS, Workload
    from collectors.demo.supervisor import Supervisor

    compiled: list[bool] = []
    monkeypatch.setattr("collectors.demo.streams_app.ensure_compiled", lambda *a: compiled.append(True))
    assert scenarios.streams_unavailable(sasl()) is None and compiled
    assert "sasl.mechanism" in (scenarios.streams_unavailable({"security.protocol": "SASL_SSL"}) or "")
    started: list[str] = []
    monkeypatch.setattr(Supervisor, "spawn", lambda self, name, argv, **kw: started.append(name))
    said: list[str] = []
    streams = next(s for s in SCENARIOS if s.protocol == "streams")
    steady = next(s for s in SCENARIOS if s.name == "steady")
    sup = Supervisor(tmp_path, "test-streams-security", say=said.append)
    conf = {**sasl(protocol="SASL_SSL"), "ssl.cipher.suites": "HIGH"}
    w = Workload(sup, "127.0.0.1:9", "hb", scenarios=(streams, steady), kafka_conf=conf)
    w.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "demo-steady-steady-2" not in started:
        time.sleep(0.1)
    w.stop.set()
    assert not [n for n in started if "streams" in n], started
    (msg,) = [m for m in said if "demo-streams" in m]
    assert "left out" in msg and "ssl.cipher.suites" in msg and PASSWORD not in msg
