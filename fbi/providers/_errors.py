"""What a provider's error means, decided once at the boundary (as httpx's
``map_exceptions``): every failed call is classified by its whole exception chain into an
`ErrorKind`, which decides whether it is retried, counts towards the circuit
breaker, or stops the run with a fix; and its text is made safe to store and print.

fbi's own providers raise a [`ProviderError`][fbi.providers.ProviderError], which
carries its kind; only the errors of libraries fbi calls (litellm, aiohttp, the SDKs)
are read by their class names and status codes, here and nowhere else.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from fbi.redaction import redact

#: What went wrong with a call, as fbi sees it. litellm's classes blur the difference
#: that matters (a refused connection and a missing key both arrive as
#: InternalServerError), so `error_kind` reads the exception chain itself.
ErrorKind = Literal["rate_limit", "server", "timeout", "dropped", "unreachable", "auth",
                    "not_found", "wrong_model", "rejected", "interrupted"]
#: Worth another try: the model is there but busy, slow or flaky (or its reply was not
#: one: no choices, a body that is not JSON).
RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "dropped"})
#: The model cannot be reached at all: no other call will fare better.
CONFIGURATION: frozenset[str] = frozenset({"unreachable", "auth", "not_found",
                                           "wrong_model"})
#: A pool's server that failed is left out for this many seconds; its calls go to the
#: others meanwhile (`fbi.providers.ServerPool`).
POOL_COOLDOWN_S = 10.0

_UNREACHABLE = {"ConnectError", "ConnectionRefusedError", "ClientConnectorError",
                "ClientConnectorDNSError", "gaierror", "ConnectTimeout"}
_DROPPED = {"ReadError", "WriteError", "ServerDisconnectedError", "RemoteProtocolError",
            "ConnectionResetError", "ClientOSError", "ClientPayloadError",
            "APIConnectionError", "IncompleteRead"}
_TIMEOUT = {"Timeout", "APITimeoutError", "ReadTimeout", "TimeoutError", "PoolTimeout"}
_SERVER = {"InternalServerError", "ServiceUnavailableError", "APIError", "BadGatewayError"}
_MISSING_KEY = re.compile(r"missing credentials|api_key client option must be set|"
                          r"no api key|missing \w+ api key|api key (?:is )?(?:not set|missing)",
                          re.IGNORECASE)


#: What to do about each configuration failure.
FIXES = {
    "unreachable": "check --api-base (host, port, /v1) and that the server is running",
    "auth": "set the provider's key (e.g. OPENAI_API_KEY) or pass --api-key / FBI_API_KEY, "
            "and check it is valid for this model",
    "not_found": "check the model name (PROVIDER/MODEL, e.g. openai/gpt-4o) and that "
                 "--api-base serves it",
    "wrong_model": "ask for the model by the name the server serves it under (--judge "
                   "openai/NAME, as its /v1/models lists), or point --api-base at a server "
                   "of this model",
}


def _own_error(error: BaseException) -> ProviderError | None:
    """The first of fbi's own provider errors in the exception chain, if any."""
    link: BaseException | None = error
    for _ in range(12):
        if link is None:
            return None
        if isinstance(link, ProviderError):
            return link
        link = link.__cause__ or link.__context__
    return None


def error_kind(error: BaseException) -> ErrorKind:
    """Classify a failed call by its whole exception chain (see `ErrorKind`): fbi's own
    error by the kind it carries, a library's by its class names and status."""
    own = _own_error(error)
    if own is not None:
        return own.kind
    names: set[str] = set()
    link: BaseException | None = error
    while link is not None and len(names) < 12:
        names.add(type(link).__name__)
        link = link.__cause__ or link.__context__
    text = str(error)
    status = getattr(error, "status_code", None)
    if (_MISSING_KEY.search(text) or status in (401, 403)
            or names & {"AuthenticationError", "PermissionDeniedError"}):
        return "auth"
    if names & _UNREACHABLE:
        return "unreachable"
    if status == 404 or "NotFoundError" in names:
        return "not_found"
    if status == 429 or "RateLimitError" in names:
        return "rate_limit"
    if isinstance(error, TimeoutError) or names & _TIMEOUT or status == 408:
        return "timeout"
    if names & _DROPPED or isinstance(error, ConnectionError):
        return "dropped"
    if (isinstance(status, int) and (status >= 500 or status == 409)) or names & _SERVER:
        return "server"
    return "rejected"  # a 400, a context too long, a bug: asking again changes nothing


def retry_after(error: Exception) -> float | None:
    """Seconds from a Retry-After header on the error's HTTP response, if any."""
    for headers in (getattr(getattr(error, "response", None), "headers", None),
                    getattr(error, "litellm_response_headers", None)):
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    return None


def describe_error(error: Exception) -> str:
    """The provider's error in one line, secrets removed: what records and the console
    may hold. This is the one place provider error text enters fbi."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    # trimmed of its final full stop: messages go on with ". Fix: ..."
    return redact(f"{type(error).__name__}: {text}")[:400].rstrip(". ")


# ------------------------------------------------------------------ the errors themselves


class ProviderError(Exception):
    """A failed call, as one of fbi's own providers says it: its `ErrorKind` is
    part of it (a provider's error class sets ``kind``, or computes it)."""

    kind: ErrorKind = "rejected"


class BadReply(ProviderError):
    """A reply that is not a chat completion (no choices, a usage that is no count, a body
    that is not JSON): the call failed on that server, and another try may not."""

    kind: ErrorKind = "server"  # retried; a pool's server cooled
    status_code = 502


class WrongModel(ProviderError):
    """The server answered as another model than the one asked for."""

    kind: ErrorKind = "wrong_model"

    def __init__(self, asked: str, served: str, server: str | None):
        self.asked, self.served, self.server = asked, served, server
        where = f" at {server}" if server else ""
        super().__init__(f"the server{where} answered as model {served!r}, not {asked!r}")


class ProviderHTTPError(ProviderError):
    """An HTTP error status from an OpenAI-protocol server, with its message; raised as
    the subclass the OpenAI SDK names for the status
    (`http_error`)."""

    def __init__(self, status_code: int, message: str, response: Any):
        self.status_code, self.response = status_code, response
        super().__init__(f"HTTP {status_code}: {message}")

    @property
    def kind(self) -> ErrorKind:  # type: ignore[override]
        """What the status means (a 400 that says the key is missing is ``auth``)."""
        return status_kind(self.status_code, str(self))


def status_kind(status: int, text: str = "") -> ErrorKind:
    """The `ErrorKind` of an HTTP error status (and its message)."""
    if status in (401, 403) or _MISSING_KEY.search(text):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"
    return "server" if status >= 500 or status == 409 else "rejected"


class BadRequestError(ProviderHTTPError):
    """400 (and other 4xx the server gives no other meaning)."""


class AuthenticationError(ProviderHTTPError):
    """401."""


class PermissionDeniedError(ProviderHTTPError):
    """403."""


class NotFoundError(ProviderHTTPError):
    """404."""


class RateLimitError(ProviderHTTPError):
    """429."""


class InternalServerError(ProviderHTTPError):
    """5xx."""


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 429: RateLimitError}


def http_error(status_code: int, message: str, response: Any) -> ProviderHTTPError:
    """The error for an HTTP status, named as the OpenAI SDK names it."""
    kind = InternalServerError if status_code >= 500 else \
        _BY_STATUS.get(status_code, ProviderHTTPError)
    return kind(status_code, message, response)
