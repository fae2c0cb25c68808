"""One redactor for every message that may carry a URL with a secret in it (the Redis URL of a CLI error,
a webhook URL of a notifier's error or log line).

`redact(text)` masks, wherever a URL appears in the text, with `***`:
- its userinfo, whole (`redis://:pw@h`, `rediss://user:pw@h`, `https://token@h`): the user name is
  often a secret too (a token as user), and `***` says that something was there;
- the values of query parameters whose name says secret (token, key, secret, password, sig,
  signature, access_token, api_key, credential, auth...: `?password=` is how redis-py also takes one);
- the path tokens of chat webhooks, which are the whole secret of the URL: Slack's
  hooks.slack.com/services/T../B../XXXX (and workflows/triggers), Discord's /api/webhooks/ID/TOKEN,
  Mattermost's and Rocket.Chat's /hooks/TOKEN.
Text without such a URL comes back unchanged. It errs toward masking: a raw (not percent-encoded)
password may hold "/", "?", "#", "@" or a quote although no URL may, so the userinfo runs to the last
"@" of the URL's run of non-blank characters; an "@" later in that run (an e-mail address in a query)
then masks more than the secret, never less. A raw blank in a password is beyond it (no URL reader
takes one either): percent-encoded, any password is masked.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "redact", "redact_url"]

MASK = "***"

# scheme://userinfo@ : the userinfo is every character up to the last "@" before a blank (greedy), so
# that a raw password with "@", "/", ":" or a quote in it is masked whole.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+._\-]*://)(?P<userinfo>\S*)@")

# The last character of a masked query value or webhook token: not the punctuation a message puts
# after a URL ("cannot reach URL: why"), which would go with it; one such character of a secret shown
# (a password ending in ":") gives nothing away.
_LAST = r"[^&;#?\s:,.)'\"]"

# A query parameter (after "?", "&" or ";") whose name says it holds a secret; its value runs to the
# next parameter, fragment or blank (a quote in it may be the secret's). "Says" is a substring, case
# aside (apiKey, X-Amz-Signature, client_secret, auth_token): a "monkey=" or "assignor=" masked for
# nothing costs less than a key shown.
_SECRET_NAME = r"[^=&;#\s'\"<>]*?(?:token|key|secret|passw|pwd|sig|auth|credential)[^=&;#\s'\"<>]*"
_SECRET_PARAM = re.compile(
    rf"(?P<head>[?&;](?P<name>{_SECRET_NAME})=)(?P<value>[^&;#\s]*{_LAST})",
    re.IGNORECASE,
)

# Chat webhooks whose path is the secret: everything after the marker, up to a blank, query or
# fragment. Slack's by its host (shown with or without a scheme); the generic /hooks/ and
# /api/webhooks/ only in a URL (after "://host..."), not in any text with such a path (docs/hooks/).
_WEBHOOK_PATH = re.compile(
    r"(?P<head>hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|://[^\s'\"<>?#]*?/(?:api/webhooks|hooks)/)"  # Discord /api/webhooks/ID/TOKEN, Mattermost /hooks/TOKEN
    rf"(?P<token>[^\s?#]*{_LAST})",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """`text` with every URL's secrets (userinfo, secret query values, webhook path tokens) masked."""
    if "://" not in text and "hooks" not in text.lower() and "=" not in text:
        return text  # the common case, a message without a URL: no regex at all
    # Every secret is found in the original text, then the union masked: masked one kind after the
    # other, a raw "@" in a query value let the userinfo's mask swallow the parameter's name (and its
    # value then went unmasked), and "?key=" in a raw password cut the userinfo short.
    spans = [m.span("userinfo") for m in _USERINFO.finditer(text)]
    spans += [m.span("value") for m in _SECRET_PARAM.finditer(text)]
    spans += [m.span("token") for m in _WEBHOOK_PATH.finditer(text)]
    merged: list[list[int]] = []
    for start, end in sorted(s for s in spans if s[0] < s[1]):
        if merged and start <= merged[-1][1]:  # overlapping or touching: one mask
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, at = [], 0
    for start, end in merged:
        out += [text[at:start], MASK]
        at = end
    out.append(text[at:])
    return "".join(out)


def redact_url(url: str) -> str:
    """A URL (Redis, webhook) as it may be shown: `redact` of it alone."""
    return redact(url)
