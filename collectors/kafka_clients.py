"""librdkafka clients as the collector builds them: one place that turns the user's Kafka settings
into a client configuration whose own log lines go through Python logging, once, and whose errors
are classified, so a wrong password is one clear message and a retry, not a line every 300 ms.

librdkafka logs a failed connection at every reconnect attempt on stderr by default. Here its lines
go to the `groupscope.kafka` logger through a filter that lets the same line (the same text, with the
client instance and the timings taken out) through once a minute, with a count of what it held back.
No setting's value is ever formatted into a message: `describe_auth_failure` names the user, the
mechanism and the servers, never the password.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("groupscope.kafka")

# Codes of librdkafka's own errors (KafkaError._AUTHENTICATION, ._SSL) and Kafka's
# SASL_AUTHENTICATION_FAILED; fixed by the protocol and librdkafka's ABI.
AUTH_ERRORS = {-169, 58}
TLS_ERRORS = {-181}
# What differs between two reports of the same failure: the client instance, timings, counts, ports.
_VOLATILE = re.compile(r"rdkafka#\w+-\d+|\(after \d+ms[^)]*\)|\d+")


class OncePerMinute(logging.Filter):
    """Lets a message through once per `every_s`; the next one says how many were held back."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._seen: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Say everything again (a test that reads what is said starts from here)."""
        with self._lock:
            self._seen.clear()

    def said(self) -> dict[str, float]:
        """What was let through, and when (time.monotonic: one clock for every process of the host)."""
        with self._lock:
            return {key: last for key, (last, _) in self._seen.items()}

    def already_said(self, said: Mapping[str, float]) -> None:
        """Hold back what another process said (`said`) as if said here."""
        with self._lock:
            for key, last in said.items():
                if key not in self._seen:
                    self._seen[key] = (last, 0)

    def filter(self, record: logging.LogRecord) -> bool:
        # `reason` (logging's extra): what the message is about, whoever says it and how
        key = _VOLATILE.sub("", getattr(record, "reason", None) or record.getMessage())
        now = time.monotonic()
        with self._lock:
            last, held = self._seen.get(key, (-1e18, 0))
            if now - last < self.every_s:
                self._seen[key] = (last, held + 1)
                return False
            self._seen[key] = (now, 0)
            if len(self._seen) > 1000:  # bounded: old keys go
                self._seen = dict(list(self._seen.items())[-500:])
        if held:
            record.msg = f"{record.getMessage()} (and {held} times more in the last {self.every_s:.0f} s)"
            record.args = ()
        return True


_librdkafka_log = logging.getLogger("groupscope.kafka.librdkafka")
_librdkafka_log.addFilter(OncePerMinute())

# Why the cluster cannot be used, as the collector's parts find out (the start-up check, the Admin
# poller): logged with extra={"reason": why}, the same reason is said once a minute whoever finds it.
failure_log = logging.getLogger("groupscope.kafka.failures")
failure_log.addFilter(OncePerMinute())
# The loggers whose messages are said once a minute, by name: what one process said is handed to the
# processes it starts (the Admin poller's, admin_process.py), which then do not say it again.
_ONCE_A_MINUTE = {"failures": failure_log, "librdkafka": _librdkafka_log}


def said_so_far() -> dict[str, dict[str, float]]:
    """What the once-a-minute loggers let through, and when."""
    return {
        name: {k: t for f in logger.filters if isinstance(f, OncePerMinute) for k, t in f.said().items()}
        for name, logger in _ONCE_A_MINUTE.items()
    }


def already_said(said: Mapping[str, Mapping[str, float]]) -> None:
    """Hold back in this process what `said_so_far` of another gave."""
    for name, keys in said.items():
        logger = _ONCE_A_MINUTE.get(name)
        for f in logger.filters if logger is not None else ():
            if isinstance(f, OncePerMinute):
                f.already_said(keys)


class ErrorWatch:
    """librdkafka's error callback: keeps the last error, and whether it was an authentication or TLS
    failure, for the code that retries to report clearly."""

    def __init__(self) -> None:
        self.last: Any = None
        self.auth_failed = False
        self.tls_failed = False

    def __call__(self, err: Any) -> None:
        self.last = err
        code = err.code() if hasattr(err, "code") else None
        self.auth_failed = self.auth_failed or code in AUTH_ERRORS
        self.tls_failed = self.tls_failed or code in TLS_ERRORS
        # librdkafka logs the same failure itself (through the filtered logger): debug here
        _librdkafka_log.debug("kafka client error: %s", err.str() if hasattr(err, "str") else err)


def client_config(conf: Mapping[str, Any], watch: ErrorWatch | None = None, **extra: Any) -> dict[str, Any]:
    """The user's librdkafka settings plus our logger and error callback (and `extra`)."""
    out: dict[str, Any] = {**conf, **extra, "logger": _librdkafka_log}
    if watch is not None:
        out["error_cb"] = watch
    return out


def describe_auth_failure(conf: Mapping[str, Any], detail: str = "") -> str:
    """One sentence for a failed login: servers, user and mechanism (never the password)."""
    servers = conf.get("bootstrap.servers", "?")
    user = conf.get("sasl.username")
    mech = conf.get("sasl.mechanism") or conf.get("sasl.mechanisms") or "PLAIN"
    protocol = conf.get("security.protocol", "PLAINTEXT")
    who = f"as user '{user}' ({mech})" if user else f"over {protocol} (no sasl.username set)"
    tail = f": {_strip_secrets(detail, conf)}" if detail else ""
    return (
        f"cannot authenticate to Kafka at {servers} {who}{tail}. Check sasl.username and "
        "sasl.password (GROUPSCOPE_KAFKA__SASL.USERNAME / __SASL.PASSWORD or the config file); "
        "retrying"
    )


def describe_tls_failure(conf: Mapping[str, Any], detail: str = "") -> str:
    servers = conf.get("bootstrap.servers", "?")
    tail = f": {_strip_secrets(detail, conf)}" if detail else ""
    return (
        f"TLS handshake with Kafka at {servers} failed{tail}. Check ssl.ca.location and the "
        "broker's certificate; retrying"
    )


def _strip_secrets(text: str, conf: Mapping[str, Any]) -> str:
    """A message from a library never carries a secret of ours, whatever it chose to print."""
    for key, value in conf.items():
        if value and any(w in key for w in ("password", "secret", "token")) and len(str(value)) >= 3:
            text = text.replace(str(value), "***")
    return text
