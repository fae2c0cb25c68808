"""A throwaway certificate authority and broker certificate for the embedded broker's SSL listeners,
and a client certificate for the one that asks for it (mutual TLS, as Aiven and MSK's TLS auth do).

Made with Debian's `openssl` command: a CA, and a broker key (unencrypted PKCS#8, which Kafka's PEM
keystore reads without a password) signed by it for 127.0.0.1 and localhost; a client key and
certificate (CN=groupscope-client) in the three shapes librdkafka reads them: PEM files (the key also
encrypted with CLIENT_PASSWORD) and a PKCS#12 keystore with that password. Tests and the demo use
it; nothing here is meant for a real deployment.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from collectors.demo.servers.kafka.broker import CLIENT_CN, TlsFiles
from collectors.demo.servers.processes import ServerError


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ServerError(f"openssl {args[0]} failed: {proc.stderr.strip()[-500:]}")


def make_test_tls(folder: Path, days: int = 2) -> TlsFiles:
    if shutil.which("openssl") is None:
        raise ServerError("the 'openssl' command is needed to make a test CA (Debian package 'openssl')")
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", str(days), "-subj", "/CN=groupscope test CA", cwd=folder,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
        "-subj", "/CN=localhost", cwd=folder,
    )  # fmt: skip
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(
        "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "broker.crt", "-days", str(days), "-extfile", "san.cnf", cwd=folder,
    )  # fmt: skip
    # Kafka's PEM keystore wants PKCS#8 ("BEGIN PRIVATE KEY"), and the chain up to the CA.
    _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "broker.key", "-out", "broker.pk8", cwd=folder)
    (folder / "broker-chain.pem").write_text(
        (folder / "broker.crt").read_text() + (folder / "ca.pem").read_text()
    )
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr",
        "-subj", f"/CN={CLIENT_CN}", cwd=folder,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "client.pem", "-days", str(days), cwd=folder,
    )  # fmt: skip
    _openssl(
        "pkcs8", "-topk8", "-in", "client.key", "-out", "client-encrypted.key",
        "-passout", f"pass:{CLIENT_PASSWORD}", cwd=folder,
    )  # fmt: skip
    _openssl(
        "pkcs12", "-export", "-inkey", "client.key", "-in", "client.pem", "-certfile", "ca.pem",
        "-out", "client.p12", "-passout", f"pass:{CLIENT_PASSWORD}", cwd=folder,
    )  # fmt: skip
    for name in ("ca.key", "broker.key", "client.key", "client-encrypted.key", "client.p12", "broker.pk8"):
        (folder / name).chmod(0o600)
    return TlsFiles(
        key_pem=folder / "broker.pk8",
        cert_pem=folder / "broker-chain.pem",
        ca_pem=folder / "ca.pem",
        client_cert_pem=folder / "client.pem",
        client_key_pem=folder / "client.key",
        client_key_encrypted_pem=folder / "client-encrypted.key",
        client_p12=folder / "client.p12",
        client_password=CLIENT_PASSWORD,
    )


CLIENT_PASSWORD = "client-key-secret"  # the test client key's and keystore's (a throwaway CA's)
