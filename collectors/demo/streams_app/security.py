"""groupscope's Kafka security settings for the demo's Kafka Streams application (a Java client).

groupscope takes librdkafka's settings (`kafka:` in the config file, `GROUPSCOPE_KAFKA__<name>`:
docs/security.md), and the demo's Python clients pass them through untouched. The Streams
application is a Java client, which names the same things otherwise; `java_client_properties(conf)`
maps them, and refuses, with one message naming it, a setting it cannot carry (rather than connect
without it, or not at all and say nothing):

- `security.protocol` -> the same (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL);
- `sasl.mechanism` (or `sasl.mechanisms`) PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with `sasl.username`
  and `sasl.password` -> `sasl.mechanism`, and `sasl.jaas.config`: PlainLoginModule or
  ScramLoginModule with the user name and password;
- `ssl.ca.location` (a PEM file) -> `ssl.truststore.type=PEM`, `ssl.truststore.location`;
  `ssl.ca.pem` (with or without it) -> `ssl.truststore.type=PEM`, `ssl.truststore.certificates`;
  `ssl.ca.location=probe`, or no CA -> nothing: the JVM's trusted CAs, as librdkafka the system's;
- a client certificate, in any form librdkafka reads (`ssl.certificate.location` and
  `ssl.key.location`, `ssl.certificate.pem` and `ssl.key.pem`, each with `ssl.key.password` for an
  encrypted key; a PKCS#12 `ssl.keystore.location` with `ssl.keystore.password`) ->
  `ssl.keystore.type=PEM`, `ssl.keystore.certificate.chain` and `ssl.keystore.key`: the chain, and
  the key as unencrypted PKCS#8 (opened here with its password, so the Java client, which reads
  PKCS#8 only, needs none);
- `ssl.endpoint.identification.algorithm` https (the default of both) or none -> `https` or empty.

Refused: SASL mechanisms other than those three (GSSAPI, librdkafka's default, and OAUTHBEARER need
settings of their own the application is not given), `enable.ssl.certificate.verification=false` (the
Java client has no such switch), a CA directory (`ssl.ca.location` as OpenSSL's CApath), and
OpenSSL's own settings (`ssl.cipher.suites`, `ssl.curves.list`, `ssl.sigalgs.list`,
`ssl.crl.location`, `ssl.engine.*`, `ssl.providers`, any other `ssl.*`). As librdkafka, `ssl.*` is
looked at only over SSL or SASL_SSL, and `sasl.*` only over SASL; `sasl.kerberos.*` and
`sasl.oauthbearer.*` belong to the refused mechanisms and are ignored with the others. Settings that
tune librdkafka itself (timeouts, `debug`, `client.id`, ...) do not decide whether the Java client
can connect and are left out.

The properties hold secrets (the JAAS line holds the password, the keystore its key):
`write_private_properties` writes them to a file of mode 0600 in a new folder of mode 0700, and the
application is given its path (`--config-file`), never the values, on its command line.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.kafka_protocol.client_cert import ClientCert, _read_pkcs12
from collectors.kafka_protocol.errors import ConfigError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# the settings mapped above, looked at when their protocol is in use
SASL_CARRIED = {"sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password"}
# librdkafka's settings for GSSAPI and OAUTHBEARER: refused through sasl.mechanism, else unused
SASL_OTHER_MECHANISMS = ("sasl.kerberos.", "sasl.oauthbearer.", "enable.sasl.oauthbearer.")
SSL_CARRIED = {
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.certificate.pem",
    "ssl.key.pem",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.endpoint.identification.algorithm",
    "enable.ssl.certificate.verification",
}
PROPERTIES_FILE = "client.properties"


class StreamsSecurityError(ValueError):
    """A security setting the Streams application (a Java client) cannot carry; the message names it."""


def _cannot(setting: str, why: str) -> StreamsSecurityError:
    return StreamsSecurityError(
        f"the Kafka setting {setting} cannot be carried to the demo's Kafka Streams application "
        f"(a Java client): {why}"
    )


def _get(conf: Mapping[str, Any], key: str) -> str | None:
    value = conf.get(key)
    return None if value is None or value == "" else str(value)


def _false(value: Any) -> bool:
    return str(value).strip().lower() in ("false", "0", "no", "off")


def java_client_properties(conf: Mapping[str, Any]) -> dict[str, str]:
    """The Java client properties that connect as librdkafka's `conf` does ({} for PLAINTEXT);
    StreamsSecurityError naming the first setting that cannot be carried."""
    protocol = (_get(conf, "security.protocol") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise _cannot("security.protocol", f"{protocol} is not one of {', '.join(PROTOCOLS)}")
    props: dict[str, str] = {}
    if protocol != "PLAINTEXT":
        props["security.protocol"] = protocol
    if protocol.startswith("SASL_"):
        props |= _sasl(conf)
    if protocol in ("SSL", "SASL_SSL"):
        props |= _ssl(conf)
    return props


def _sasl(conf: Mapping[str, Any]) -> dict[str, str]:
    for key in sorted(conf):
        if key.startswith("sasl.") and key not in SASL_CARRIED and not key.startswith(SASL_OTHER_MECHANISMS):
            raise _cannot(key, "it has no counterpart the application is given")
    # the name the user wrote (librdkafka's own is sasl.mechanisms; sasl.mechanism is its alias)
    setting = (
        "sasl.mechanisms"
        if _get(conf, "sasl.mechanisms") and not _get(conf, "sasl.mechanism")
        else "sasl.mechanism"
    )
    # librdkafka's default mechanism is GSSAPI (Kerberos)
    mechanism = (_get(conf, "sasl.mechanism") or _get(conf, "sasl.mechanisms") or "GSSAPI").upper()
    if mechanism not in LOGIN_MODULES:
        raise _cannot(
            setting,
            f"{mechanism}{' (librdkafka default)' if mechanism == 'GSSAPI' else ''} is not supported "
            f"there; it takes {', '.join(LOGIN_MODULES)} with sasl.username and sasl.password",
        )
    username, password = _get(conf, "sasl.username"), conf.get("sasl.password")
    if not username:
        raise _cannot("sasl.username", f"SASL {mechanism} needs it and it is not set")
    if password is None:
        raise _cannot("sasl.password", f"SASL {mechanism} needs it and it is not set")
    for key, value in (("sasl.username", username), ("sasl.password", str(password))):
        # a JAAS configuration's quoted string ends at a line break: no escape carries one
        if "\n" in value or "\r" in value:
            raise _cannot(key, "it holds a line break, which a JAAS configuration cannot quote")
    jaas = (
        f"{LOGIN_MODULES[mechanism]} required "
        f"username={_jaas_quote(username)} password={_jaas_quote(str(password))};"
    )
    return {"sasl.mechanism": mechanism, "sasl.jaas.config": jaas}


def _jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes: Kafka's JaasConfig reads it with Java's StreamTokenizer,
    which takes a backslash as the escape of the next character."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ssl(conf: Mapping[str, Any]) -> dict[str, str]:
    for key in sorted(conf):
        if key.startswith("ssl.") and key not in SSL_CARRIED:
            raise _cannot(key, "it is an OpenSSL setting of librdkafka's with no Java counterpart")
    if _false(conf.get("enable.ssl.certificate.verification", True)):
        raise _cannot(
            "enable.ssl.certificate.verification",
            "false has no Java counterpart (the Java client always verifies the broker's certificate); "
            "give the broker's CA in ssl.ca.location instead",
        )
    props: dict[str, str] = {}
    algorithm = (_get(conf, "ssl.endpoint.identification.algorithm") or "https").lower()
    if algorithm not in ("https", "none"):
        raise _cannot("ssl.endpoint.identification.algorithm", f"{algorithm} is neither https nor none")
    if algorithm == "none":
        props["ssl.endpoint.identification.algorithm"] = ""  # the Java client's "no host name check"
    props |= _truststore(conf)
    props |= _keystore(conf)
    return props


def _truststore(conf: Mapping[str, Any]) -> dict[str, str]:
    location, pem = _get(conf, "ssl.ca.location"), _get(conf, "ssl.ca.pem")
    if location == "probe":  # librdkafka: the system's CAs; the Java client: the JVM's
        location = None
    if location is not None:
        path = Path(location)
        if path.is_dir():
            raise _cannot(
                "ssl.ca.location", f"{location} is a directory (OpenSSL's CA path); give one PEM file"
            )
        if not path.is_file():
            raise _cannot("ssl.ca.location", f"{location} is not a readable file")
    if location is not None and pem is None:
        return {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(path.resolve())}
    if pem is None:
        return {}
    certificates = pem if location is None else path.read_text() + "\n" + pem
    return {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": certificates}


def _keystore(conf: Mapping[str, Any]) -> dict[str, str]:
    try:
        cert = ClientCert.from_conf(conf)  # the forms librdkafka takes, half settings refused
    except ConfigError as e:
        raise StreamsSecurityError(
            f"the demo's Kafka Streams application (a Java client) cannot take these client certificate "
            f"settings: {e}"
        ) from None
    if cert is None:
        return {}
    if cert.keystore_location:
        try:
            chain, key = _read_pkcs12(Path(cert.keystore_location), cert.keystore_password)
        except ConfigError as e:
            raise StreamsSecurityError(
                f"the demo's Kafka Streams application (a Java client) cannot take {e}"
            ) from None
        except OSError as e:
            raise _cannot("ssl.keystore.location", f"cannot read it ({e.strerror})") from None
        return _pem_keystore(chain.decode(), key.decode())
    if cert.certificate_location:
        setting = "ssl.certificate.location"
        chain = _read(setting, cert.certificate_location).decode(errors="replace")
        # as Python's ssl (client_cert.py): the key in the certificate's file when no key file is named
        key_setting = "ssl.key.location" if cert.key_location else setting
        key_bytes = _read(key_setting, cert.key_location or cert.certificate_location)
    else:
        setting, key_setting = "ssl.certificate.pem", "ssl.key.pem"
        chain, key_bytes = str(cert.certificate_pem), str(cert.key_pem).encode()
    if "-----BEGIN CERTIFICATE-----" not in chain:
        raise _cannot(setting, "no PEM certificate in it")
    return _pem_keystore(chain, _pkcs8(key_bytes, cert.key_password, key_setting))


def _read(setting: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise _cannot(setting, f"cannot read {location} ({e.strerror})") from None


def _pkcs8(data: bytes, password: str | None, setting: str) -> str:
    """The client key as unencrypted PKCS#8 PEM (what the Java client's PEM keystore reads without a
    password), from any PEM form librdkafka reads: PKCS#8, PKCS#1 or SEC1, encrypted or not."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        load_pem_private_key,
    )

    try:
        key = load_pem_private_key(data, password.encode() if password else None)
    except TypeError:  # encrypted without a password, or a password for a key that has none
        if password:
            key = load_pem_private_key(data, None)  # librdkafka ignores a password a key does not need
        else:
            raise _cannot(setting, "the key is encrypted and ssl.key.password is not set") from None
    except ValueError:
        raise _cannot(setting, "not a PEM private key, or ssl.key.password does not open it") from None
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def _pem_keystore(chain: str, key: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain, "ssl.keystore.key": key}


# -- the file the application reads ------------------------------------------------------------------
@dataclass(frozen=True)
class PrivateProperties:
    """A properties file of mode 0600 in a folder of its own (mode 0700); `remove()` deletes both."""

    folder: Path
    path: Path

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        if self.folder.exists():
            self.folder.rmdir()


def write_private_properties(props: Mapping[str, str], parent: Path | None = None) -> PrivateProperties:
    """`props` in Java's properties format (what Properties.load reads back exactly) in a new private
    folder (under `parent`, else the system's temporary folder)."""
    folder = Path(tempfile.mkdtemp(prefix="groupscope-streams-", dir=parent))  # mode 0700
    path = folder / PROPERTIES_FILE
    # created 0600 before a byte is written: no moment where another user could read it
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        for key, value in props.items():
            f.write(f"{properties_escape(key, key=True)}={properties_escape(value)}\n")
    return PrivateProperties(folder, path)


def properties_escape(text: str, key: bool = False) -> str:
    """`text` as java.util.Properties.load reads it back: backslash escapes for the separators, the
    comment marks, a leading space and the control characters, and \\uXXXX for everything beyond
    printable ASCII, so the file is ASCII whichever way it is read."""
    out = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ch == " " and (key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        else:
            # UTF-16 code units, as Java strings hold them (a character beyond U+FFFF: two)
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[j]:02x}{units[j + 1]:02x}" for j in range(0, len(units), 2)]
    return "".join(out)
