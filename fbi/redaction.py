"""Secrets kept out of everything fbi stores or prints: API keys, bearer and basic
credentials, URL passwords, and the exact values of the keys fbi was given or finds in
the environment, in every form a provider may echo them."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable

_SECRET_PATTERNS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]{6,}"), r"\1 [redacted]"),
    (re.compile(r"(?i)((?:authorization|x-api-key|api[-_ ]?key|token)[\"']?\s*[:=]\s*[\"']?)"
                r"(?:(?:basic|bearer|token)\s+)?[^\s\"',}]+"), r"\1[redacted]"),
    (re.compile(r"\bsk-[\w-]{6,}"), "sk-[redacted]"),
    (re.compile(r"\bhf_[A-Za-z0-9]{6,}"), "hf_[redacted]"),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@"), r"\1[redacted]@"),
)


#: Secret values given to fbi (``--api-key``), beside the environment's secret variables.
_KEPT_SECRETS: set[str] = set()

#: Arguments that carry the connection's secrets and never go into a file fbi writes.
SECRET_CARRIERS = ("api_key",)
#: --model-arg names whose every value is secret: HTTP headers (an Authorization, a
#: provider's key header, a signed token) and credentials (an AWS key, a token, a
#: password). ``max_completion_tokens`` is not one: a name must hold the word alone.
_HEADER_ARGS = ("extra_headers", "headers", "default_headers")
_SECRET_ARG = re.compile(r"(?:^|[_-])(?:key|keys|apikey|token|secret|password|passwd|pwd|"
                         r"pass|pat|credentials?|authorization|auth|signature|sig)(?:$|[_-])"
                         r"|access_key|api_?key|secret|private",
                         re.IGNORECASE)
#: What a secret argument's value is recorded as (run.json, the command line).
SECRET_PLACEHOLDER = "[secret]"


def is_secret_arg(name: str) -> bool:
    """Whether a model argument (``--model-arg NAME=VALUE``) holds a secret: a header, or
    a name of a key, secret, token, password or credential (see `_SECRET_ARG`)."""
    return name in _HEADER_ARGS or bool(_SECRET_ARG.search(name))


def keep_secret_values(value: object) -> None:
    """Every text inside a secret argument's value (a header dict's values too) kept as a
    secret: redacted wherever provider text enters fbi."""
    if isinstance(value, str):
        keep_secret(value)
    elif isinstance(value, dict):
        for item in value.values():
            keep_secret_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            keep_secret_values(item)


def keep_nested_secrets(value: object) -> None:
    """The values under secret-named keys anywhere inside ``value`` (an ``extra_body``'s
    ``metadata.api_key``, a list of such objects) kept as secrets, and so are the
    passwords and secret query parameters of URLs in any text inside it (a proxy's
    ``http://user:PASS@proxy:3128``)."""
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(name, str) and is_secret_arg(name):
                keep_secret_values(item)
            else:
                keep_nested_secrets(item)
    elif isinstance(value, list | tuple):
        for item in value:
            keep_nested_secrets(item)
    elif isinstance(value, str):
        for url in _URL.findall(value):
            keep_url_secrets(url)


def without_nested_secrets(value: object) -> object:
    """``value`` with every value under a secret-named key, at any depth, written as
    ``[secret]``, and every URL in its texts without its password and secret query
    parameters (`public_url`): what run.json keeps of a model argument."""
    if isinstance(value, dict):
        return {name: SECRET_PLACEHOLDER if isinstance(name, str) and is_secret_arg(name)
                else without_nested_secrets(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_nested_secrets(item) for item in value]
    if isinstance(value, str):
        return _URL.sub(lambda found: public_url(found.group()) or "", value)
    return value


def holds_url_credentials(value: object) -> bool:
    """Whether a URL somewhere in ``value`` (its texts, at any depth) carries a password
    or a secret-named query parameter: a model argument holding one (a proxy's
    ``http://user:PASS@proxy:3128``) is a secret argument, recorded as ``[secret]``."""
    if isinstance(value, dict):
        return any(holds_url_credentials(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(holds_url_credentials(item) for item in value)
    if isinstance(value, str):
        return any(public_url(url) != url for url in _URL.findall(value))
    return False


#: A URL inside a text: a scheme, then everything up to a space or a quote.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.IGNORECASE)


def keep_url_secrets(url: str | None) -> None:
    """A URL's password and its secret-named query parameters' values kept as secrets
    (``--api-base https://user:PASS@host/v1?api-key=…``)."""
    if not url:
        return
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    if parts.password:
        keep_secret(parts.password)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if is_secret_arg(name):
            keep_secret(value)


def keep_secret(value: str) -> None:
    """Redact ``value`` (and its encodings) wherever provider text enters fbi from now on."""
    if len(value) >= 8:
        _KEPT_SECRETS.add(value)


def is_credential_variable(name: str) -> bool:
    """Whether an environment variable holds a credential, by the words of its name
    (``OPENAI_API_KEY``, ``HF_TOKEN``, ``GATEWAY_PASSWORD``, ``AZURE_AD_TOKEN_V2``,
    ``DB_PASS``): the same words as a secret model argument's — but not the shell's
    working directory (``PWD``) nor a variable naming a place (``*_FILE``, ``*_DIR``,
    ``SSH_AUTH_SOCK``): a path redacted from every message helps nobody."""
    return bool(_SECRET_ARG.search(name)) and not _PLACE_VARIABLE.search(name)


_PLACE_VARIABLE = re.compile(r"^(?:OLD)?PWD$|_(?:SOCK|DIR|PATH|FILE|HOME|CONTROL|ID)$",
                             re.IGNORECASE)


def _secret_values() -> frozenset[str]:
    from_environment = {value for name, value in os.environ.items()
                        if len(value) >= 8 and is_credential_variable(name)}
    return frozenset(_KEPT_SECRETS | from_environment)


def _percent_encoded(value: str) -> str:
    """A pattern matching ``value`` with any of its characters percent-encoded (either
    case of hex) or, for a space, a plus: every URL-encoded form of it, whichever
    characters an encoder left alone (``quote`` keeps "/", ``quote_plus`` does not)."""
    parts = []
    for char in value:
        encoded = "".join(f"%(?i:{byte:02x})" for byte in char.encode())
        plus = "|\\+" if char == " " else ""
        parts.append(f"(?:{re.escape(char)}|{encoded}{plus})")
    return "".join(parts)


@functools.lru_cache(maxsize=8)
def _secrets_pattern(values: frozenset[str]) -> re.Pattern | None:
    """One pattern for every form a secret can be echoed in: as given, URL-encoded in any
    way (`_percent_encoded`), and base64 (standard and URL-safe) at each of the
    three byte alignments it can have inside a longer encoded string (a Basic auth
    header, an encoded JSON body)."""
    import base64

    forms: set[str] = set()
    encoded_forms = {_percent_encoded(value) for value in values}
    for value in values:
        forms.add(value)
        raw = value.encode()
        for shift in range(3):
            bits_before, bits_after = shift * 8, (shift + len(raw)) * 8
            first, last = -(-bits_before // 6), bits_after // 6  # chars of the value alone
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(b"\0" * shift + raw).decode()[first:last]
                if len(encoded) >= 8:
                    forms.add(encoded)
    if not forms:
        return None
    literal = [re.escape(f) for f in sorted(forms, key=len, reverse=True)]
    return re.compile("|".join([*sorted(encoded_forms, key=len, reverse=True), *literal]))


def redact_known_secrets(text: str) -> str:
    """``text`` without the secrets fbi was given or finds in the environment, in any of
    their echoed forms (`_secrets_pattern`). For replies: nothing else is touched."""
    return known_secrets_redactor()(text)


def known_secrets_redactor() -> Callable[[str], str]:
    """`redact_known_secrets` for the secrets known now, looked up once: for a model
    client, which redacts every reply (scanning the environment for each of thousands of
    replies cost more than the rest of a reply's handling)."""
    pattern = _secrets_pattern(_secret_values())
    if pattern is None:
        return lambda text: text
    return lambda text: pattern.sub("[redacted]", text) if text else text


def redact(text: str) -> str:
    """``text`` without API keys, bearer tokens, ``Authorization`` values and URL
    credentials — and without any secret fbi was given (``--api-key``) or finds in a
    secret-looking environment variable (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``), as
    given, URL-encoded or base64-encoded, wherever a provider echoed it."""
    text = redact_known_secrets(text)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def public_url(url: str | None) -> str | None:
    """A URL without its user:password part and with its secret-named query parameters'
    values as ``[secret]``, fit to be written down."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        parts = parts._replace(netloc=host + (f":{parts.port}" if parts.port else ""))
    if parts.query:
        query = parse_qsl(parts.query, keep_blank_values=True)
        if any(is_secret_arg(name) for name, _ in query):
            parts = parts._replace(query=urlencode(
                [(name, SECRET_PLACEHOLDER if is_secret_arg(name) else value)
                 for name, value in query], safe="[]"))
    return urlunsplit(parts)
