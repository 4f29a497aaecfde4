"""`fbi view`'s HTTP side: the standard library's threading server, GET only.

Why the standard library and not an ASGI server: the viewer is read-only, serves one
person on loopback, and renders every page on the server (no script), so nothing in it
needs async or websockets — and `fbi view` then works on the plain install, with no
extra to add. Each request runs on its own thread; slow work (indexing a run) happens
once per run, behind a per-run lock (`fbi.view._viewer.Viewer`).

Every page is sent with a Content-Security-Policy that allows nothing but this server's
own stylesheet: no script runs, and the page makes no request elsewhere.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jinja2

from fbi.errors import InputError
from fbi.view._index import Filters
from fbi.view._viewer import Viewer

#: Sent with every response.
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; style-src 'self'; img-src 'self'; "
                                "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Characters of a reply, reasoning or repair a page shows; the rest is one link away
#: (a 40 MB reply would make a page no browser opens).
TEXT_SHOWN = 20_000


class ViewServer(ThreadingHTTPServer):
    """The viewer's server; ``url`` is where it listens. Port 0 takes a free one."""

    daemon_threads = True
    request_queue_size = 64  # a browser opens several connections at once

    def __init__(self, viewer: Viewer, host: str = "127.0.0.1", port: int = 0):
        self.viewer = viewer
        host = host.strip("[]")
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _Handler)
        except socket.gaierror:
            raise InputError(f"--host {host}: no such address here. Fix: give an address "
                             "of this machine (127.0.0.1, ::1, or 0.0.0.0 for every "
                             "one)") from None
        except OSError as error:
            if error.errno == errno.EADDRNOTAVAIL:  # not an address of this machine
                raise InputError(f"--host {host}: not an address of this machine. Fix: "
                                 "give one of its addresses (127.0.0.1, ::1, or 0.0.0.0 "
                                 "for every one)") from None
            raise InputError(f"cannot listen on {host}:{port} ({error.strerror}). Fix: "
                             "choose another --port (0 takes a free one)") from None
        self.hosts = _host_names(host, self.server_address[1])

    def allows(self, host_header: str | None) -> bool:
        """Whether a request was addressed to this server: its Host header names this
        server's host and port (a page elsewhere that rebinds its own name to
        127.0.0.1 sends its own name, and is refused). None: any (a wildcard address,
        which the user was warned about)."""
        return self.hosts is None or (host_header or "").lower() in self.hosts

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests, the screenshot script)."""
        thread = threading.Thread(target=self.serve_forever, name="fbi-view", daemon=True)
        thread.start()
        return thread

    @cached_property
    def templates(self) -> jinja2.Environment:
        environment = jinja2.Environment(
            loader=jinja2.PackageLoader("fbi.view", "templates"), autoescape=True,
            undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        environment.filters["percent"] = _percent
        environment.filters["clip"] = _clip
        environment.globals["url"] = _url
        return environment


def _host_names(host: str, port: int) -> frozenset[str] | None:
    """The Host headers this server answers: every loopback name with its port for a
    loopback address, the address itself otherwise; None for a wildcard address."""
    if host in ("0.0.0.0", "::", ""):
        return None
    names = ("127.0.0.1", "localhost", "[::1]") if host in LOOPBACK else \
        (f"[{host}]" if ":" in host else host,)
    return frozenset(f"{name}:{port}".lower() for name in names)


def _clip(text: str | None) -> tuple[str, int]:
    """A long text's first `TEXT_SHOWN` characters, and how many more there are."""
    text = text or ""
    return text[:TEXT_SHOWN], max(0, len(text) - TEXT_SHOWN)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _url(path: str, **params: Any) -> str:
    """A link with its query: list values repeat the parameter; empty ones are left out."""
    pairs = [(name, item) for name, value in params.items()
             for item in (value if isinstance(value, (list, tuple)) else [value])
             if item not in (None, "", False)]
    return path + ("?" + urlencode(pairs) if pairs else "")


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "fbi-view"

    def do_GET(self) -> None:
        if not self.server.allows(self.headers.get("Host")):
            return self._send(421, b"fbi view answers only requests addressed to it "
                              b"(its host and port)\n", "text/plain; charset=utf-8")
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=False)
        if parts.path == "/static/view.css":
            css = resources.files("fbi.view").joinpath("static/view.css").read_bytes()
            return self._send(200, css, "text/css; charset=utf-8")
        if parts.path == "/text":
            return self._text(query)
        pages = {"/": self._runs, "/grid": self._grid, "/instances": self._instances,
                 "/instance": self._instance, "/run": self._run}
        page = pages.get(parts.path)
        if page is None:
            return self._page(404, "error.html.jinja", message=f"No page {parts.path}.")
        try:
            template, context = page(query)
            self._page(200, template, **context)
        except InputError as error:
            self._page(404, "error.html.jinja", message=str(error))
        except Exception as error:  # one message on the page; the server keeps serving
            print(f"fbi view: {self.path}: {type(error).__name__}: {error}", file=sys.stderr)
            self._page(500, "error.html.jinja",
                       message=f"This page failed: {type(error).__name__}: {error}")

    def _refuse(self) -> None:
        self._send(405, b"fbi view is read-only\n", "text/plain; charset=utf-8",
                   {"Allow": "GET"})

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def _runs(self, query):
        return "runs.html.jinja", self.server.viewer.runs_page()

    def _grid(self, query):
        return "grid.html.jinja", self.server.viewer.grid_page(
            query.get("run", []), query.get("strategy", []))

    def _instances(self, query):
        return "instances.html.jinja", self.server.viewer.instances_page(filters_of(query))

    def _instance(self, query):
        instance_id = (query.get("id") or [""])[0]
        if not instance_id:
            raise InputError("which instance? The link needs ?id=")
        return "instance.html.jinja", self.server.viewer.instance_page(
            instance_id, query.get("run", []))

    def _text(self, query) -> None:
        """A clipped text whole, as plain text (never rendered as a page)."""
        def one(name: str) -> str:
            return (query.get(name) or [""])[0]

        try:
            text = self.server.viewer.full_text(one("run"), one("id"), one("call"),
                                                one("field"))
        except InputError as error:
            return self._send(404, f"{error}\n".encode(), "text/plain; charset=utf-8")
        self._send(200, text.encode("utf-8", errors="replace"), "text/plain; charset=utf-8")

    def _run(self, query):
        return "run.html.jinja", self.server.viewer.run_page((query.get("run") or [""])[0])

    def _page(self, status: int, template: str, **context) -> None:
        html = self.server.templates.get_template(template).render(**context)
        self._send(status, html.encode("utf-8"), "text/html; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {**SECURITY_HEADERS, "Content-Type": content_type,
                            "Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        pass  # quiet: the terminal shows the URL and errors, not every request


def filters_of(query: dict[str, list[str]]) -> Filters:
    """The instances page's filters from its URL parameters."""
    def one(name: str) -> str:
        return (query.get(name) or [""])[0].strip()

    try:
        page = max(1, int(one("page") or 1))
    except ValueError:
        page = 1
    outcomes = list(query.get("outcome", []))
    if one("unparseable"):
        outcomes.append("unparseable")
    return Filters(runs=tuple(query.get("run", [])),
                   categories=tuple(query.get("category", [])),
                   abilities=tuple(query.get("ability", [])),
                   strategies=tuple(query.get("strategy", [])),
                   outcomes=tuple(dict.fromkeys(outcomes)), missed_by=one("missed_by"),
                   caught_by=one("caught_by"), text=one("q"), page=page)
