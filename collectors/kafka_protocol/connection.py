"""One authenticated connection to one broker: TCP (+ TLS), Kafka's size-prefixed framing,
ApiVersions negotiation, and SASL (SaslHandshake v1 + SaslAuthenticate).

Security settings are read from the same librdkafka-style dict the rest of groupscope passes to
confluent-kafka (`ClientSettings.from_conf`), so the protocol client reaches the cluster exactly as
the Admin client does. Every socket operation runs under the caller's deadline (`Deadline`); a
request that does not finish in time raises KafkaTimeoutError and the connection is closed, since
a late response would otherwise be read as the answer to the next request.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.kafka_protocol import codec, sasl
from collectors.kafka_protocol.client_cert import ClientCert
from collectors.kafka_protocol.errors import (
    AuthenticationError,
    ConfigError,
    KafkaConnectionError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_name,
    scrub,
)
from collectors.kafka_protocol.messages import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE, Api

log = logging.getLogger("groupscope.kafka_protocol")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MAX_FRAME = 256 << 20  # refuse absurd sizes (a TLS listener answering a plaintext client, garbage)
_SIZE = struct.Struct(">i")
_UNSUPPORTED_VERSION = 35
_SASL_AUTHENTICATION_FAILED = 58
_UNSUPPORTED_SASL_MECHANISM = 33


class Deadline:
    """The time left for one public call; every socket operation gets what remains."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.end = time.monotonic() + timeout_s

    def remaining(self, what: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise KafkaTimeoutError(f"{what}: timed out after {self.timeout_s:g} s")
        return left


def _truthy(value: Any, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes")


def parse_servers(text: str) -> list[tuple[str, int]]:
    """librdkafka's bootstrap.servers: "h1:9092,h2:9093", "[::1]:9092", "SSL://h:9093", bare "h"."""
    out = []
    for item in str(text).replace(" ", ",").split(","):
        item = item.strip()
        if not item:
            continue
        item = item.split("://", 1)[-1]
        host, port = item, 9092
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else 9092
        elif item.count(":") == 1:
            host, p = item.split(":")
            port = int(p)
        out.append((host, port))
    if not out:
        raise ConfigError("bootstrap.servers is empty")
    return out


@dataclass(frozen=True)
class ClientSettings:
    """What the protocol client takes from a librdkafka config dict (other keys are ignored)."""

    bootstrap: tuple[tuple[str, int], ...]
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "GSSAPI"  # librdkafka's default: refused below unless PLAIN/SCRAM is set
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_ca_location: str | None = None
    ssl_ca_pem: str | None = None
    client_cert: ClientCert | None = None  # TLS client authentication (client_cert.py)
    verify_hostname: bool = True  # ssl.endpoint.identification.algorithm=https (librdkafka's default)
    verify_certificate: bool = True  # enable.ssl.certificate.verification
    client_id: str = "groupscope"

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ClientSettings:
        servers = conf.get("bootstrap.servers") or conf.get("metadata.broker.list")
        if not servers:
            raise ConfigError("bootstrap.servers is not set")
        protocol = str(conf.get("security.protocol", "PLAINTEXT")).upper()
        if protocol not in PROTOCOLS:
            raise ConfigError(f"security.protocol {protocol} is not one of {', '.join(PROTOCOLS)}")
        # librdkafka's name is sasl.mechanisms; sasl.mechanism is its alias (Java clients' spelling)
        mechanism = str(conf.get("sasl.mechanism") or conf.get("sasl.mechanisms") or "GSSAPI").upper()
        settings = cls(
            bootstrap=tuple(parse_servers(servers)),
            security_protocol=protocol,
            sasl_mechanism=mechanism,
            sasl_username=conf.get("sasl.username"),
            sasl_password=conf.get("sasl.password"),
            ssl_ca_location=conf.get("ssl.ca.location"),
            ssl_ca_pem=conf.get("ssl.ca.pem"),
            client_cert=ClientCert.from_conf(conf),
            verify_hostname=str(conf.get("ssl.endpoint.identification.algorithm", "https")).lower()
            == "https",
            verify_certificate=_truthy(conf.get("enable.ssl.certificate.verification"), True),
            client_id=str(conf.get("client.id") or "groupscope"),
        )
        if settings.uses_sasl:
            if mechanism not in sasl.MECHANISMS:
                raise ConfigError(
                    f"sasl.mechanism {mechanism} is not supported by groupscope's protocol client "
                    f"(it speaks {', '.join(sasl.MECHANISMS)})"
                )
            if not settings.sasl_username or settings.sasl_password is None:
                raise ConfigError(f"SASL {mechanism} needs sasl.username and sasl.password")
        return settings

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def secrets(self) -> tuple[str | None, ...]:
        return (self.sasl_password, *(self.client_cert.secrets if self.client_cert else ()))

    def ssl_context(self) -> ssl.SSLContext:
        ca = self.ssl_ca_location if self.ssl_ca_location not in (None, "", "probe") else None
        try:
            ctx = ssl.create_default_context(cafile=ca, cadata=self.ssl_ca_pem or None)
            if not self.verify_certificate:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            elif not self.verify_hostname:
                ctx.check_hostname = False  # the chain is still verified
            if self.client_cert is not None:
                self.client_cert.load_into(ctx)
        except (OSError, ssl.SSLError) as exc:
            # OSError/SSLError texts name files and reasons, never the key password itself
            raise ConfigError(f"TLS settings: {scrub(str(exc), self.secrets)}") from None
        return ctx


class BrokerConnection:
    """A connection to one broker, ready for requests once `open()` returned."""

    def __init__(self, settings: ClientSettings, host: str, port: int, node_id: int | None = None) -> None:
        self.settings = settings
        self.host, self.port, self.node_id = host, port, node_id
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._sock: socket.socket | None = None
        self._next_id = 1

    def __repr__(self) -> str:
        return f"BrokerConnection({self.address}, {self.settings.security_protocol})"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self, deadline: Deadline) -> BrokerConnection:
        s = self.settings
        try:
            sock = socket.create_connection(
                (self.host, self.port), timeout=deadline.remaining(f"connect to {self.address}")
            )
        except TimeoutError:
            raise KafkaTimeoutError(f"connect to {self.address}: timed out") from None
        except OSError as exc:
            raise KafkaConnectionError(f"connect to {self.address}: {exc.strerror or exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        try:
            if s.uses_tls:
                sock.settimeout(deadline.remaining(f"TLS handshake with {self.address}"))
                try:
                    self._sock = s.ssl_context().wrap_socket(sock, server_hostname=self.host)
                except TimeoutError:
                    raise KafkaTimeoutError(f"TLS handshake with {self.address}: timed out") from None
                except (ssl.SSLError, ssl.CertificateError, OSError) as exc:
                    raise KafkaConnectionError(f"TLS handshake with {self.address}: {exc}") from None
            self._negotiate_versions(deadline)
            if s.uses_sasl:
                self._authenticate(deadline)
        except BaseException:
            self.close()
            raise
        log.debug(
            "connected to %s (%s%s)",
            self.address,
            s.security_protocol,
            f", {s.sasl_mechanism} as {s.sasl_username}" if s.uses_sasl else "",
        )
        return self

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    # -- versions ----------------------------------------------------------------------------------
    def _negotiate_versions(self, deadline: Deadline) -> None:
        version = API_VERSIONS.max_version
        for _ in range(2):
            frame = self._roundtrip(API_VERSIONS, version, self._api_versions_body(version), deadline)
            # A broker that does not know the version asked for answers in v0 with UNSUPPORTED_VERSION
            # and its own ApiVersions range: read the error code first, then the body in v0.
            if len(frame) >= 6 and struct.unpack_from(">h", frame, 4)[0] == _UNSUPPORTED_VERSION:
                body = codec.decode_response(API_VERSIONS, 0, frame)
                ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
                lo, hi = ranges.get(API_VERSIONS.key, (0, 0))
                version = min(hi, API_VERSIONS.max_version)
                if version < lo:
                    break
                continue
            body = codec.decode_response(API_VERSIONS, version, frame)
            if body["error_code"]:
                break
            self.api_versions = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
            return
        raise UnsupportedVersionError(f"{self.address}: ApiVersions could not be negotiated")

    @staticmethod
    def _api_versions_body(version: int) -> dict[str, Any]:
        return {"client_software_name": "groupscope", "client_software_version": "1"} if version >= 3 else {}

    def version_for(self, api: Api) -> int:
        """The highest version of `api` that both this client and the broker speak."""
        lo, hi = self.api_versions.get(api.key, (-1, -1))
        version = min(hi, api.max_version)
        if hi < 0 or version < max(lo, api.min_version):
            theirs = "does not offer it" if hi < 0 else f"speaks v{lo}-{hi}"
            raise UnsupportedVersionError(
                f"{api.name} (API key {api.key}): broker {self.address} {theirs}; "
                f"this client speaks v{api.min_version}-{api.max_version}"
            )
        return version

    # -- SASL --------------------------------------------------------------------------------------
    def _authenticate(self, deadline: Deadline) -> None:
        s = self.settings
        mechanism, user = s.sasl_mechanism, s.sasl_username or ""
        who = f"SASL {mechanism} authentication of user {user!r} at {self.address}"
        handshake = self.request(SASL_HANDSHAKE, {"mechanism": mechanism}, deadline)
        if handshake["error_code"] == _UNSUPPORTED_SASL_MECHANISM:
            enabled = ", ".join(handshake["mechanisms"]) or "none"
            raise AuthenticationError(
                f"{who} failed: the listener does not enable {mechanism} (it enables {enabled})"
            )
        if handshake["error_code"]:
            raise AuthenticationError(f"{who} failed: SaslHandshake {error_name(handshake['error_code'])}")

        def step(token: bytes) -> bytes:
            answer = self.request(SASL_AUTHENTICATE, {"auth_bytes": token}, deadline)
            if answer["error_code"]:
                # e.g. SASL_AUTHENTICATION_FAILED "Authentication failed during authentication due to
                # invalid credentials with SASL mechanism SCRAM-SHA-512"; the broker closes afterwards.
                reason = scrub(answer.get("error_message") or "", s.secrets)
                what = (
                    "wrong user name or password"
                    if answer["error_code"] == _SASL_AUTHENTICATION_FAILED
                    else ""
                )
                detail = "; ".join(x for x in (what, f"{error_name(answer['error_code'])}: {reason}") if x)
                raise AuthenticationError(f"{who} failed ({detail})")
            return answer["auth_bytes"] or b""

        password = s.sasl_password or ""
        if mechanism == "PLAIN":
            step(sasl.plain_message(user, password))
            return
        scram = sasl.ScramClient(mechanism, user, password)
        try:
            server_first = step(scram.first_message())
            server_final = step(scram.final_message(server_first))
            scram.verify_server_final(server_final)
        except sasl.ScramError as exc:
            raise AuthenticationError(f"{who} failed: {scrub(str(exc), s.secrets)}") from None

    # -- requests ----------------------------------------------------------------------------------
    def request(self, api: Api, body: dict, deadline: Deadline, version: int | None = None) -> dict:
        """Send one request and read its response (the highest common version unless `version`)."""
        v = self.version_for(api) if version is None else version
        return codec.decode_response(api, v, self._roundtrip(api, v, body, deadline))

    def send(self, api: Api, body: dict, deadline: Deadline) -> tuple[int, int]:
        """Send without waiting: (correlation id, version) for `receive`. Lets a caller have one
        request in flight on each of several brokers."""
        v = self.version_for(api)
        return self._send(api, v, body, deadline), v

    def receive(self, api: Api, version: int, correlation_id: int, deadline: Deadline) -> dict:
        frame = self._receive_frame(correlation_id, api, deadline)
        return codec.decode_response(api, version, frame)

    def _roundtrip(self, api: Api, version: int, body: dict, deadline: Deadline) -> bytes:
        cid = self._send(api, version, body, deadline)
        return self._receive_frame(cid, api, deadline)

    def _send(self, api: Api, version: int, body: dict, deadline: Deadline) -> int:
        cid = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        frame = codec.encode_request(api, version, cid, self.settings.client_id, body)
        self._io(lambda sock: sock.sendall(_SIZE.pack(len(frame)) + frame), f"send {api.name}", deadline)
        return cid

    def _receive_frame(self, correlation_id: int, api: Api, deadline: Deadline) -> bytes:
        (size,) = _SIZE.unpack(self._recv_exact(4, api, deadline))
        if not 4 <= size <= MAX_FRAME:
            self.close()
            raise KafkaConnectionError(
                f"{api.name} from {self.address}: response size {size} is not plausible "
                "(is security.protocol right for this listener?)"
            )
        frame = self._recv_exact(size, api, deadline)
        got = codec.response_correlation_id(frame)
        if got != correlation_id:
            self.close()
            raise KafkaConnectionError(
                f"{api.name} from {self.address}: correlation id {got}, expected {correlation_id}"
            )
        return frame

    def _recv_exact(self, n: int, api: Api, deadline: Deadline) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            want = min(n - len(buf), 1 << 20)
            chunk = self._io(lambda sock, want=want: sock.recv(want), f"read {api.name}", deadline)
            if not chunk:
                self.close()
                raise KafkaConnectionError(
                    f"{api.name}: {self.address} closed the connection"
                    + (" (authentication or TLS settings refused?)" if not buf else "")
                )
            buf += chunk
        return bytes(buf)

    def _io(self, op: Any, what: str, deadline: Deadline) -> Any:
        if self._sock is None:
            raise KafkaConnectionError(f"{what}: the connection to {self.address} is closed")
        try:
            self._sock.settimeout(deadline.remaining(f"{what} ({self.address})"))
            return op(self._sock)
        except KafkaTimeoutError:
            self.close()
            raise
        except TimeoutError:
            self.close()
            raise KafkaTimeoutError(
                f"{what} ({self.address}): timed out after {deadline.timeout_s:g} s"
            ) from None
        except OSError as exc:
            self.close()
            raise KafkaConnectionError(f"{what} ({self.address}): {exc}") from None
