"""The client side of SASL PLAIN (RFC 4616) and SCRAM (RFC 5802, SCRAM-SHA-256 of RFC 7677 and
SCRAM-SHA-512), as Kafka's brokers speak them inside SaslAuthenticate.

Kafka specifics, from org.apache.kafka.common.security.scram.internals: no channel binding (the
GS2 header is "n,,"), the password is used as its UTF-8 bytes without SASLprep, and the user name
escapes "=" and "," as "=3D" and "=2C". Like Kafka's client, an iteration count below 4096 is
refused (a server, or something in between, asking for a cheap hash).

Nothing here logs, and the password is never part of a repr or an exception message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from collectors.kafka_protocol.errors import KafkaProtocolError

SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)
MIN_ITERATIONS = 4096
GS2_HEADER = "n,,"


class ScramError(KafkaProtocolError):
    """The server's SCRAM messages are malformed, or its signature does not prove it knows the key."""


def plain_message(username: str, password: str) -> bytes:
    """RFC 4616: [authzid] NUL authcid NUL passwd (no authzid: act as the authenticated user)."""
    return b"\0" + username.encode("utf-8") + b"\0" + password.encode("utf-8")


def escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def parse_attributes(message: str) -> dict[str, str]:
    """ "r=abc,s=xyz,i=4096" -> {"r": "abc", "s": "xyz", "i": "4096"} (values may contain "=")."""
    attrs = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"malformed SCRAM attribute {part[:40]!r}")
        attrs[key] = value
    return attrs


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with HMAC-`hash_name`."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def client_proof(hash_name: str, salted: bytes, auth_message: str) -> bytes:
    """ClientKey XOR HMAC(H(ClientKey), AuthMessage)."""
    client_key = _hmac(hash_name, salted, b"Client Key")
    stored_key = hashlib.new(hash_name, client_key).digest()
    signature = _hmac(hash_name, stored_key, auth_message.encode("utf-8"))
    return bytes(a ^ b for a, b in zip(client_key, signature, strict=True))


def server_signature(hash_name: str, salted: bytes, auth_message: str) -> bytes:
    """HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage): what the server proves itself with."""
    server_key = _hmac(hash_name, salted, b"Server Key")
    return _hmac(hash_name, server_key, auth_message.encode("utf-8"))


class ScramClient:
    """One SCRAM exchange: `first_message()`, `final_message(server_first)`, `verify_server_final(...)`."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in SCRAM_HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self.hash_name = SCRAM_HASHES[mechanism]
        self.username = username
        self._password = password
        # printable, no ",": URL-safe base64 of 24 random bytes (Kafka's client uses 32 random chars)
        self.nonce = nonce or secrets.token_urlsafe(24)
        self._first_bare = f"n={escape_username(username)},r={self.nonce}"
        self._expected_signature: bytes | None = None

    def __repr__(self) -> str:
        return f"ScramClient({self.mechanism}, user={self.username!r})"

    def first_message(self) -> bytes:
        return (GS2_HEADER + self._first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        attrs = parse_attributes(text)
        if "e" in attrs:
            raise ScramError(f"server refused the first message: {attrs['e']}")
        try:
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"], validate=True), int(attrs["i"])
        except (KeyError, ValueError) as exc:
            raise ScramError(f"malformed server-first-message ({type(exc).__name__})") from None
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise ScramError("the server nonce does not extend the client nonce")
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"iteration count {iterations} is below the minimum {MIN_ITERATIONS}")
        without_proof = f"c={base64.b64encode(GS2_HEADER.encode()).decode()},r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}"
        salted = salted_password(self.hash_name, self._password, salt, iterations)
        proof = client_proof(self.hash_name, salted, auth_message)
        self._expected_signature = server_signature(self.hash_name, salted, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        if self._expected_signature is None:
            raise ScramError("server-final-message before the client-final-message")
        attrs = parse_attributes(server_final.decode("utf-8", "replace"))
        if "e" in attrs:
            raise ScramError(f"server refused the proof: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs["v"], validate=True)
        except (KeyError, ValueError):
            raise ScramError("malformed server-final-message") from None
        if not hmac.compare_digest(signature, self._expected_signature):
            raise ScramError("the server signature does not match: the server does not know the password")
