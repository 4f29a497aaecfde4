"""Every fenced ``bash`` block of the README, Getting started and the how-to guides runs
as written (issue 39), so a wrong path, option or file name in the docs cannot return.

The harness runs a page's blocks in order, in one fresh folder (a guide's steps build on
each other), with the installed ``fbi`` first on PATH. It changes three things, and
nothing else:

* **servers**: a server on this machine (``http://localhost:8000/v1``) is the page's own
  business — a page that needs one starts fbi's stand-in judge as a user would
  (``fbi stand-in --detach``: issue 63), and the harness stops it after the page; a
  server on another machine (``http://gpu1:8000/v1``, a user's GPU box) is a loopback
  server the harness starts with the stand-in's replies (``tests/openai_server.py``,
  which also serves OpenAI's batch API), one per distinct URL, and so is a provider's
  own endpoint (``--judge gpt-4-turbo``: ``OPENAI_BASE_URL``), with a stand-in key;
* **installs**: a ``pip install`` of the checkout is what the test environment already
  is, so it is left out (any other install fails the test: the harness cannot vouch for
  it);
* **the test command**: the README's own test command is what is running this test.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
from openai_server import SCRIPTS, ChatServer

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md",
         *sorted((ROOT / "docs" / "how-to").glob("*.md"))]
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
#: A server on another machine: the harness stands in for it (localhost is the page's).
REMOTE_SERVER = re.compile(r"https?://(?!localhost\b|127\.0\.0\.1\b)[\w.-]+:\d+/v1\b")
#: What `fbi stand-in --detach` prints: the pid to stop it by.
DETACHED = re.compile(r"stand-in judge at \S+ \(pid (\d+);")
#: pip installing the checkout, with extras and a torch pin, as the README says
OWN_INSTALL = re.compile(
    r'^pip install (--only-binary=:all: )?(torch==[\d.]+ )?"\.(\[[\w,]+\])?"( && |$)')
#: the README's test command, which .ci/run runs (tests/test_docs.py checks both say it)
TEST_COMMAND = 'pip install --only-binary=:all: torch==2.13.0 ".[local,embeddings,dev]" && pytest'


def blocks(page: Path) -> list[tuple[int, str]]:
    """A page's bash blocks, each with the line it starts on."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def as_run(block: str) -> str | None:
    """The block as the harness runs it (see the module docstring), or None."""
    if block.strip() == TEST_COMMAND:
        return None
    lines = []
    for line in block.splitlines():
        if line.startswith("pip "):
            own = OWN_INSTALL.match(line)
            assert own, f"the harness cannot run {line!r}: say how to in test_doc_commands"
            line = line[own.end():]
        lines.append(line)
    return "\n".join(lines).strip() or None


def test_the_harness_finds_the_blocks_and_reads_them_as_documented():
    found = {page.name: len(blocks(page)) for page in PAGES}
    assert found["README.md"] == 3 and all(found[page.name] for page in PAGES[2:]), found
    assert as_run('pip install ".[local]" && fbi evaluate') == "fbi evaluate"
    assert as_run(TEST_COMMAND) is None
    with pytest.raises(AssertionError):
        as_run("pip install something-else")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_command_of_the_page_runs_as_written(page, tmp_path):
    servers: dict[str, ChatServer] = {}
    detached: list[int] = []
    with ExitStack() as stack:
        def server_for(match: re.Match) -> str:
            if match.group(0) not in servers:
                servers[match.group(0)] = stack.enter_context(ChatServer(SCRIPTS["any"]))
            return servers[match.group(0)].url

        @stack.callback
        def stop_the_page_s_stand_ins() -> None:
            import signal

            for pid in detached:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

        default = stack.enter_context(ChatServer(SCRIPTS["any"]))
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
               f"{os.environ['PATH']}", "OPENAI_API_KEY": "sk-docs",
               "OPENAI_BASE_URL": default.url, "OPENAI_API_BASE": default.url}
        ran = 0
        for line, block in blocks(page):
            script = as_run(block)
            if script is None:
                continue
            script = REMOTE_SERVER.sub(server_for, script)
            # a hang guard only (no test asserts a duration): the main job is a minute
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=1800)
            detached += [int(pid) for pid in DETACHED.findall(done.stdout)]
            assert done.returncode == 0, (
                f"{page.relative_to(ROOT)}, line {line}: exit {done.returncode}\n"
                f"{script}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n"
                f"{done.stderr[-3000:]}")
            ran += 1
    assert ran or page.name == "getting-started.md", f"{page.name}: no block ran"
