"""A throwaway certificate authority and broker certificate for the embedded broker's SSL listener.

Made with Debian's `openssl` command: a CA, and a broker key (unencrypted PKCS#8, which Kafka's PEM
keystore reads without a password) signed by it for 127.0.0.1 and localhost. Tests and the demo use
it; nothing here is meant for a real deployment.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from collectors.demo.servers.kafka.broker import TlsFiles
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
    return TlsFiles(
        key_pem=folder / "broker.pk8", cert_pem=folder / "broker-chain.pem", ca_pem=folder / "ca.pem"
    )
