"""How a reply's bytes come from a server, within bounds: a time for the whole call, a
size on the wire and decompressed, and redirects only within the server's own origin. A
server that lies (a compressed bomb, an endless body, a redirect elsewhere) costs a
`BadReply`, never gigabytes or a key sent to another host (issue 50)."""

from __future__ import annotations

import asyncio
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from fbi.errors import ConfigError
from fbi.providers._errors import BadReply


class BoundedHTTP:
    """POSTs a JSON body and reads the reply within bounds: ``timeout_s`` for the whole
    call (body included: an endless trickle is cut off), ``max_reply_bytes`` on the wire
    and decoded (`BoundedBody`), redirects only within the server's origin (`_redirect`:
    no request, key or header ever goes elsewhere). One ``aiohttp`` session per event
    loop (fbi's runner starts one loop per run), unlimited connections: the runner's
    concurrency is the limit; ``httpx`` for the synchronous probe."""

    def __init__(self, timeout_s: float = 120.0, max_reply_bytes: int | None = None):
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes or MAX_REPLY_BYTES
        self._sessions: dict[int, Any] = {}

    def _session(self):
        import aiohttp

        loop = id(asyncio.get_running_loop())
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = self._sessions[loop] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return session

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> RawResponse:
        for _ in range(MAX_REDIRECTS + 1):
            async with self._session().post(url, data=body, headers=headers,
                                            allow_redirects=False) as response:
                found_headers = dict(response.headers)
                location = _redirect(url, response.status, found_headers)
                if location is not None:
                    url = location
                    continue
                decoder = BoundedBody(found_headers.get("Content-Encoding", ""),
                                      self.max_reply_bytes)
                async for chunk in response.content.iter_chunked(65536):
                    decoder.feed(chunk)
                return RawResponse(response.status, decoder.finish(),
                                   response.reason or "", found_headers)
        raise BadReply(f"more than {MAX_REDIRECTS} redirects")

    def post_now(self, url: str, body: bytes, headers: dict[str, str]) -> RawResponse:
        import httpx

        deadline = time.perf_counter() + self.timeout_s
        with httpx.Client(timeout=httpx.Timeout(self.timeout_s),
                          follow_redirects=False) as client:
            for _ in range(MAX_REDIRECTS + 1):
                with client.stream("POST", url, content=body, headers=headers) as response:
                    found_headers = dict(response.headers)
                    location = _redirect(url, response.status_code, found_headers)
                    if location is not None:
                        url = location
                        continue
                    decoder = BoundedBody(found_headers.get("content-encoding", ""),
                                          self.max_reply_bytes)
                    for chunk in response.iter_raw(65536):
                        decoder.feed(chunk)
                        if time.perf_counter() > deadline:  # (httpx's time-out is per read)
                            raise httpx.ReadTimeout(f"no whole reply in {self.timeout_s} s")
                    return RawResponse(response.status_code, decoder.finish(),
                                       response.reason_phrase, found_headers)
        raise BadReply(f"more than {MAX_REDIRECTS} redirects")

    async def aclose(self) -> None:
        session = self._sessions.pop(id(asyncio.get_running_loop()), None)
        if session is not None:
            await session.close()


#: A reply's body, on the wire and decompressed, at most (a chat reply is kilobytes; with
#: log-probabilities of 20 alternatives per token, a megabyte or two).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: Redirects within the server's own origin followed at most (none to another origin).
MAX_REDIRECTS = 3


class BoundedBody:
    """A reply's body, decoded (identity, gzip or deflate) as it comes, never past
    ``limit`` bytes on the wire or decoded: a compressed bomb or an endless body is a
    `BadReply`, not gigabytes in memory."""

    def __init__(self, encoding: str, limit: int):
        import zlib

        self.limit = limit
        self.encoding = encoding.strip().lower()
        if self.encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(wbits=31)
        elif self.encoding == "deflate":
            self._zlib = zlib.decompressobj(wbits=47)  # zlib or gzip header, detected
        elif self.encoding in ("", "identity"):
            self._zlib = None
        else:
            raise BadReply(f"the reply is encoded as {encoding!r}, which fbi does not "
                           "read (ask the server for gzip, deflate or none)")
        self._parts: list[bytes] = []
        self._size = self._wire = 0

    def feed(self, chunk: bytes) -> None:
        self._wire += len(chunk)
        if self._wire > self.limit:
            raise self._too_big()
        if self._zlib is None:
            self._add(chunk)
            return
        import zlib

        try:
            self._add(self._zlib.decompress(chunk, self.limit - self._size + 1))
        except zlib.error as error:
            raise BadReply(f"the reply's {self.encoding} body is broken ({error})") from None
        if self._zlib.unconsumed_tail:  # more would come out than the limit allows
            raise self._too_big()

    def _add(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self.limit:
            raise self._too_big()
        self._parts.append(data)

    def finish(self) -> bytes:
        if self._zlib is not None:
            self._add(self._zlib.flush())
        return b"".join(self._parts)

    def _too_big(self) -> BadReply:
        return BadReply(f"the reply is over {self.limit / (1024 * 1024):g} MB "
                        "(FBI_MAX_REPLY_MB raises the limit)")


def _redirect(url: str, status: int, headers: dict[str, str]) -> str | None:
    """Where a redirect within the server's own origin goes (307/308: the request is
    sent again as it was); a `BadReply` for one to another origin — its key and headers
    are never sent there — or of another kind; None when ``status`` is no redirect."""
    if status not in (301, 302, 303, 307, 308):
        return None
    from urllib.parse import urljoin, urlsplit

    location = headers.get("Location") or headers.get("location")
    if not location:
        raise BadReply(f"HTTP {status} without a Location")
    target = urljoin(url, location)
    here, there = urlsplit(url), urlsplit(target)
    if (here.scheme, here.hostname, here.port) != (there.scheme, there.hostname,
                                                    there.port):
        raise BadReply(f"the server redirected to another origin "
                       f"({there.scheme}://{there.hostname}); fbi sends no request and no "
                       "key there. Fix: give --api-base the address that answers")
    if status not in (307, 308):
        raise BadReply(f"HTTP {status} redirect to {there.path}: a chat request cannot "
                       "be sent again as a GET. Fix: give --api-base that address")
    return target


@dataclass
class RawResponse:
    """What a transport keeps of an HTTP response, whichever library read it: what
    `fbi.providers.retry_after` and the messages read."""

    status_code: int
    """The HTTP status."""
    content: bytes
    """The body, as it came."""
    reason_phrase: str
    """The status's reason (``Not Found``)."""
    headers: dict[str, str]
    """The response headers (Retry-After is read from them)."""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


#: Where a user raises (or lowers) the bound on a reply's size, in MB.
REPLY_LIMIT_VARIABLE = "FBI_MAX_REPLY_MB"


def reply_limit() -> int:
    """The most bytes a reply may hold, on the wire and decompressed: 16 MB, or
    ``FBI_MAX_REPLY_MB``; a value that is no positive number is a ConfigError."""
    given = os.environ.get(REPLY_LIMIT_VARIABLE)
    if not given:
        return MAX_REPLY_BYTES
    try:
        megabytes = float(given)
    except ValueError:
        megabytes = float("nan")
    if not math.isfinite(megabytes) or not 0 < megabytes <= 4096:
        raise ConfigError(f"{REPLY_LIMIT_VARIABLE}={given!r}: give a number of megabytes "
                          "from 0 to 4096 (default 16)")
    return int(megabytes * 1024 * 1024)
