"""collectors.redact: what the CLI and the notifiers print of a Redis or webhook URL carries no secret.
`groupscope groups` used to print "cannot reach Redis at redis://:PASSWORD@..." when Redis was down."""

from __future__ import annotations

import logging
import socket
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from collectors.alerts.notify import NotifyError, SlackNotifier, WebhookNotifier, send_with_retry
from collectors.cli.main import cli
from collectors.redact import MASK, redact, redact_url

# A password as users write it in a URL: raw (any printable character but a blank; "@", ":", "/" and
# quotes included, which no URL may hold but people paste anyway), or percent-encoded (anything at all).
raw_passwords = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E)
    | st.characters(min_codepoint=0xA1, exclude_categories=["Cs"]),
    min_size=6,
    max_size=40,
).filter(lambda s: not any(c.isspace() for c in s))
any_passwords = st.text(min_size=6, max_size=40).map(lambda s: quote(s, safe=""))
users = st.from_regex(r"[A-Za-z0-9_.\-]{1,12}", fullmatch=True)
hosts = st.sampled_from(["127.0.0.1", "redis.internal", "[::1]", "cache-01.prod.example.com", "localhost"])
ports = st.integers(1, 65535)


@settings(max_examples=400)
@given(
    scheme=st.sampled_from(["redis", "rediss"]),
    user=st.none() | users,
    password=raw_passwords | any_passwords,
    host=hosts,
    port=ports,
    db=st.integers(0, 15),
    tail=st.sampled_from(["", ": Error 111 connecting to 127.0.0.1:1. Connection refused.", " (timeout)"]),
)
def test_a_redis_urls_password_never_survives(
    scheme: str, user: str | None, password: str, host: str, port: int, db: int, tail: str
) -> None:
    userinfo = f"{user or ''}:{password}"
    text = f"cannot reach Redis at {scheme}://{userinfo}@{host}:{port}/{db}{tail}"
    expected = f"cannot reach Redis at {scheme}://{MASK}@{host}:{port}/{db}{tail}"
    assume(password not in expected)  # a password of "127.0.0" is in the message anyway
    out = redact(text)
    assert out == expected
    assert password not in out
    assert redact_url(f"{scheme}://{userinfo}@{host}:{port}/{db}") == f"{scheme}://{MASK}@{host}:{port}/{db}"


@given(password=raw_passwords)
def test_a_password_in_the_query_never_survives(password: str) -> None:
    assume("&" not in password and ";" not in password and "#" not in password)  # no raw separators

    def exact(secret: str) -> bool:
        # else masked the more (a raw "@" reads as a userinfo's end), or all but a last ":" or ".",
        # which a message puts after a URL: see redact.py
        return "@" not in secret and secret[-1] not in ":,.)'\"?"

    for name in ("password", "token", "api_key", "access_token", "sig", "signature", "secret", "key"):
        out = redact(f"HTTP 500 from https://hooks.example.com/alert?team=ops&{name}={password}&x=1")
        assert password not in out
        if exact(password):
            assert out == f"HTTP 500 from https://hooks.example.com/alert?team=ops&{name}={MASK}&x=1"
    encoded = quote(password, safe="")
    out = redact(f"redis://h:6379/0?password={encoded}")
    assert encoded not in out
    assert out == f"redis://h:6379/0?password={MASK}" or not exact(encoded)


@pytest.mark.parametrize(
    "url,shown",
    [
        ("https://hooks.slack.com/services/T0AAAA/B0BBBB/xyzSECRET", "https://hooks.slack.com/services/***"),
        ("hooks.slack.com/workflows/T0/A0/123/SECRET", "hooks.slack.com/workflows/***"),
        ("https://discord.com/api/webhooks/123/SECRET", "https://discord.com/api/webhooks/***"),
        ("https://chat.example.com/hooks/SECRET?x=1", "https://chat.example.com/hooks/***?x=1"),
        ("https://bob:SECRET@hooks.example.com/x", "https://***@hooks.example.com/x"),
        ("https://SECRET@api.example.com/x", "https://***@api.example.com/x"),
        ("https://h/x?X-Amz-Signature=SECRET&X-Amz-Date=1", "https://h/x?X-Amz-Signature=***&X-Amz-Date=1"),
        ("https://h/x?apiKey=SECRET#top", "https://h/x?apiKey=***#top"),
    ],
)
def test_webhook_secrets_are_masked(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact(f"slack: cannot reach {url}: timed out") == f"slack: cannot reach {shown}: timed out"


def test_a_listener_url_with_an_underscore_in_its_scheme_is_masked() -> None:
    """Kafka's listener names (SASL_SSL, SASL_PLAINTEXT) have "_", which URL schemes do not: a
    `SASL_SSL://user:pw@host` in a message must lose its userinfo all the same."""
    assert redact("SASL_SSL://alice:s3cr3t@kafka-1:9093 refused") == "SASL_SSL://***@kafka-1:9093 refused"
    assert "s3cr3t" not in redact("bootstrap SASL_PLAINTEXT://bob:s3cr3t@k:9092,SSL://k2:9093")


@pytest.mark.parametrize(
    "text",
    [
        "redis://127.0.0.1:6379/0",
        "rediss://cache.example.com:6380/2",
        "cannot reach Redis at redis://127.0.0.1:1/0: Error 111 connecting to 127.0.0.1:1. Refused.",
        "hook: HTTP 500 from http://127.0.0.1:8080/hook?team=ops&page=2",
        "no cluster 'x' in Redis or the configuration (known: default, prod)",
        "see docs/hooks/setup.md and mail ops@example.com",
        "lag=5 key space full, min_offsets=ten",
        "",
    ],
)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    assert redact(text) == text


@given(st.text())
def test_any_text_without_a_url_or_query_is_unchanged(text: str) -> None:
    assume("://" not in text and "hooks.slack.com" not in text.lower())
    assume(not any(c in text for c in "?&;"))  # no query string: nothing to mask
    assert redact(text) == text


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_the_notifiers_errors_and_log_lines_carry_no_webhook_secret(caplog: pytest.LogCaptureFixture) -> None:
    port = _closed_port()
    channels = [
        WebhookNotifier(
            name="hook", url=f"http://ops:pw-SECRET@127.0.0.1:{port}/x?token=tk-SECRET", timeout_s=1
        ),
        # a Slack-compatible server's webhook (Mattermost): the path token is the secret
        SlackNotifier(name="mm", url=f"http://127.0.0.1:{port}/hooks/mm-SECRET", timeout_s=1),
    ]
    event = {
        "event": "firing",
        "cluster": "default",
        "alert": {"rule": "r", "group": "g", "since": 0, "state": "firing"},
    }
    with caplog.at_level(logging.WARNING, logger="collectors.alerts.notify"):
        for n in channels:
            with pytest.raises(NotifyError) as info:
                send_with_retry(n, event, retries=1, backoff_s=0, sleep=lambda _s: None)
            assert "cannot reach" in str(info.value)
            assert "pw-SECRET" not in str(info.value) and "tk-SECRET" not in str(info.value)
            assert "mm-SECRET" not in str(info.value)
    assert len(caplog.records) == 4  # a retry warning and a give-up error per channel
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "pw-SECRET" not in logged and "tk-SECRET" not in logged and "mm-SECRET" not in logged


@pytest.mark.parametrize("command", [["groups"], ["topics"], ["group", "g"], ["alerts", "list"]])
def test_the_cli_does_not_print_the_redis_password_when_redis_is_down(command: list[str]) -> None:
    url = f"redis://:s3cretPW@127.0.0.1:{_closed_port()}/0"
    res = CliRunner().invoke(cli, [*command, "--redis", url])
    assert res.exit_code != 0
    assert "s3cretPW" not in res.output
    assert "Redis" in res.output and "redis://***@127.0.0.1" in res.output


def test_groups_says_it_cannot_reach_redis_without_the_password() -> None:
    res = CliRunner().invoke(cli, ["groups", "--redis", "redis://:s3cretPW@127.0.0.1:1/0"])
    assert res.exit_code != 0
    assert "s3cretPW" not in res.output
    assert "cannot reach Redis at redis://***@127.0.0.1:1/0" in res.output
