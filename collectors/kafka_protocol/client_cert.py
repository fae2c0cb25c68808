"""The client certificate for TLS client authentication (mutual TLS: Aiven's default, MSK's TLS
authentication, any listener with `ssl.client.auth=required`), from each form librdkafka reads it in:

- PEM files: `ssl.certificate.location` (the certificate, and its chain) and `ssl.key.location`, the
  key encrypted or not (`ssl.key.password`);
- inline PEM: `ssl.certificate.pem` and `ssl.key.pem` (and `ssl.key.password`);
- a PKCS#12 keystore: `ssl.keystore.location` and `ssl.keystore.password`.

Python's ssl module loads a certificate chain only from files: inline PEM, and what a keystore holds,
are written to a private temporary folder (mode 0700, files 0600) for the load and removed at once.
A setting the protocol client cannot use (an OpenSSL engine) is a ConfigError: the Admin poller then
fetches committed offsets through librdkafka instead, rather than connect without the certificate.
"""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.kafka_protocol.errors import ConfigError

# librdkafka settings that put the client's key somewhere this module cannot read it from
UNSUPPORTED = ("ssl.engine.location", "ssl.engine.id", "ssl.providers")


@dataclass(frozen=True)
class ClientCert:
    certificate_location: str | None = None
    key_location: str | None = None
    certificate_pem: str | None = field(default=None, repr=False)
    key_pem: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    keystore_location: str | None = None
    keystore_password: str | None = field(default=None, repr=False)

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ClientCert | None:
        """The client certificate the settings name (None: no client authentication); ConfigError for
        settings that name half of one, or one this module cannot read."""
        for key in UNSUPPORTED:
            if conf.get(key):
                raise ConfigError(f"{key} is not supported by groupscope's protocol client")

        def get(key: str) -> str | None:
            v = conf.get(key)
            return str(v) if v not in (None, "") else None

        cert = cls(
            certificate_location=get("ssl.certificate.location"),
            key_location=get("ssl.key.location"),
            certificate_pem=get("ssl.certificate.pem"),
            key_pem=get("ssl.key.pem"),
            key_password=get("ssl.key.password"),
            keystore_location=get("ssl.keystore.location"),
            keystore_password=get("ssl.keystore.password"),
        )
        forms = [
            bool(cert.certificate_location or cert.key_location),
            bool(cert.certificate_pem or cert.key_pem),
            bool(cert.keystore_location),
        ]
        if sum(forms) > 1:
            raise ConfigError(
                "a client certificate is set in more than one form: use the PEM files "
                "(ssl.certificate.location, ssl.key.location), inline PEM (ssl.certificate.pem, ssl.key.pem) "
                "or a PKCS#12 keystore (ssl.keystore.location)"
            )
        if cert.key_location and not cert.certificate_location:
            raise ConfigError("ssl.key.location is set without ssl.certificate.location")
        if bool(cert.certificate_pem) != bool(cert.key_pem):
            raise ConfigError("ssl.certificate.pem and ssl.key.pem go together")
        if cert.keystore_password and not cert.keystore_location:
            raise ConfigError("ssl.keystore.password is set without ssl.keystore.location")
        return cert if any(forms) else None

    @property
    def secrets(self) -> tuple[str | None, ...]:
        return (self.key_password, self.keystore_password, self.key_pem)

    def load_into(self, ctx: ssl.SSLContext) -> None:
        """Load the certificate chain and key into `ctx` (OSError/ssl.SSLError/ConfigError when they
        cannot be read: the caller says so without the secrets)."""
        if self.certificate_location:
            ctx.load_cert_chain(self.certificate_location, self.key_location, password=self.key_password)
            return
        if self.certificate_pem and self.key_pem:
            _load_pem(ctx, self.certificate_pem.encode(), self.key_pem.encode(), self.key_password)
            return
        if self.keystore_location:
            chain, key = _read_pkcs12(Path(self.keystore_location), self.keystore_password)
            _load_pem(ctx, chain, key, None)


def _load_pem(ctx: ssl.SSLContext, chain: bytes, key: bytes, password: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="groupscope-cert-") as d:  # 0700, removed on leaving
        cert_file, key_file = Path(d) / "cert.pem", Path(d) / "key.pem"
        for path, data in ((cert_file, chain), (key_file, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        ctx.load_cert_chain(str(cert_file), str(key_file), password=password)


def _read_pkcs12(path: Path, password: str | None) -> tuple[bytes, bytes]:
    """(certificate chain, unencrypted key) as PEM, from a PKCS#12 keystore."""
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    data = path.read_bytes()
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        raise ConfigError(
            f"ssl.keystore.location {path}: not a PKCS#12 keystore, or ssl.keystore.password is wrong"
        ) from None
    if key is None or cert is None:
        raise ConfigError(f"ssl.keystore.location {path}: the keystore holds no key and certificate")
    chain = cert.public_bytes(Encoding.PEM) + b"".join(c.public_bytes(Encoding.PEM) for c in extra or ())
    return chain, key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
