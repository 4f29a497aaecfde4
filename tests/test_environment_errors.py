"""A broken environment or a hostile input ends in one message and exit code 2 (1 for a
run the environment stopped midway), never a traceback, and nothing finished is lost
(issue 12, item 3).

Read-only and full disks are real: as root (CI on this machine) a tmpfs is mounted
read-only or with a few kilobytes; otherwise folder permissions make it read-only and
the full-disk test is skipped, since only root can mount."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

FRONT = ('---\ndisplay_name: "X"\nparadigm: single\nexplanation: false\n'
         'score_range: [1, 3]\nversion: 1\n---\n')


def fbi(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "COLUMNS": "200",
           "OPENAI_API_KEY": "sk-test"}
    return subprocess.run([sys.executable, "-m", "fbi", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=OUTSIDE_CHECKOUT)


def one_message(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("error:") == 1
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_a_cache_file_of_random_bytes_is_named(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(os.urandom(4096))
    one_message(fbi("evaluate", "--cache", str(junk), "--dry-run", tmp_path=tmp_path),
                str(junk), "delete it")


def test_a_cache_corrupted_mid_run_is_left_aside_with_one_warning(tmp_path):
    from fbi.cache import ResponseCache
    from fbi.errors import FbiWarning

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", "m", {"text": "x"})
    cache._db.execute("DROP TABLE responses")  # what a corrupt page does to every query
    with pytest.warns(FbiWarning, match="goes on without it"):
        assert cache.get("k") is None
    assert cache.get("other") is None and cache.broken  # no second warning, no error
    cache.put("k2", "m", {"text": "y"})


@pytest.mark.slow
@pytest.mark.parametrize(("body", "expected"), [
    ('{% extends "bad.jinja" %}\n', "extends itself"),
    ("{% for i in range(10**7) %}x{% endfor %}\n", "10,000,000 steps"),
    ("fine\n{% if %}\n", "bad.jinja, line 9"),
    # issue 22: templates that would hang fbi or fill its memory
    ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}\n",
     "at most 100,000 steps per render"),
    ("{{ lipsum(n=200000) }}\n", "lipsum"),
    ('{{ "x" * 300000000 }}\n', "repeated 300,000,000 times"),
    ('{{ [1] * 300000000 }}\n', "repeated 300,000,000 times"),
    ('{{ "x"|center(300000000) }}\n', "a width of 300,000,000"),
    ('{{ "%0300000000d"|format(1) }}\n', "format width of 300,000,000"),
    ('{{ "%0300000000d" % 1 }}\n', "format width of 300,000,000"),
    ('{{ "{:300000000}".format(1) }}\n', "format width of 300,000,000"),
    ("{{ 2 ** 100000000 }}\n", "a power of 100000000"),
    ('{% for i in range(2000) %}{{ "x" * 999 }}{% endfor %}\n', "output passed 1,000,000"),
    # issue 50: an integer too long to print (Python writes at most 4,300 digits)
    ("{% set ns = namespace(n=10 ** 64) %}{% for i in range(128) %}"
     "{% set ns.n = ns.n * 10 ** 64 %}{% endfor %}{{ ns.n }}\n", "the template failed"),
])
def test_broken_templates_are_named_with_their_line(tmp_path, body, expected):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "bad.jinja").write_text(FRONT + body)
    one_message(fbi("evaluate", "--prompts", str(folder), "--strategy", "bad", "--dry-run",
                    tmp_path=tmp_path), expected)


#: Issue 38: every way a template can build a long text, and what its refusal says.
GROWING = {
    "ljust": ('{{ "x".ljust(10**9) }}', "a text ljust of 1,000,000,000"),
    "rjust by a variable": ('{% set w = 4000 * 1000 %}{{ "x".rjust(w) }}', "rjust of 4,000,000"),
    "zfill": ('{{ "1".zfill(5000000) }}', "zfill of 5,000,000"),
    "center method": ('{{ "x".center(3000000) }}', "center of 3,000,000"),
    "replace method": ('{{ ("x" * 1000).replace("x", "y" * 100000) }}', "replace of 100,000,000"),
    "replace of the empty text": ('{{ ("x" * 999999).replace("", "ab") }}', "replace of 2,99"),
    "replace filter": ('{{ ("x" * 1000) | replace("x", "y" * 10000) }}', "replace of 10,000,000"),
    "join method": ('{{ ("y" * 100000).join(["a"] * 100) }}', "join of 9,900,100"),
    "join filter": ('{{ ["a" * 900000, "b" * 900000] | join }}', "join of 1,800,000"),
    "expandtabs": ('{{ ("\t" * 1000).expandtabs(100000) }}', "expandtabs of 100,001,000"),
    "bytes": ('{{ ("x".encode() * 10).ljust(10**9) }}', "ljust of 1,000,000,000"),
    "~ doubling": ('{% set ns = namespace(s="xx") %}{% for i in range(60) %}'
                   '{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}', "joined with ~"),
    "+ doubling": ('{% set ns = namespace(s="xx") %}{% for i in range(60) %}'
                   '{% set ns.s = ns.s + ns.s %}{% endfor %}', "joined with +"),
    "list + doubling": ('{% set ns = namespace(s=[1]) %}{% for i in range(60) %}'
                        '{% set ns.s = ns.s + ns.s %}{% endfor %}', "joined with +"),
    "many long texts": ('{% set ns = namespace(s=[]) %}{% set big = "x" * 900000 %}'
                        '{% for i in range(1000) %}{% set ns.s = ns.s + [big ~ i] %}'
                        '{% endfor %}{{ ns.s|length }}', "built more than 20,000,000"),
    "* width": ('{{ "%*d" % (1000000000, 1) }}', "format width taken from the arguments"),
    ".* precision": ('{{ "%.*f" % (1000000000, 1.5) }}', "taken from the arguments"),
    "nested format width": ('{{ "{:{}}".format("x", 1000000000) }}', "taken from the"),
}


@pytest.mark.parametrize("name", sorted(GROWING))
def test_no_template_builds_a_long_text_by_any_means(tmp_path, name):
    """Refused before (or, for ``~``, as soon as) a text past the limit is built: the
    render's memory stays a few times the limit, whatever the template does."""
    import tracemalloc

    from fbi import templates
    from fbi.errors import InputError

    body, said = GROWING[name]
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "grow.jinja").write_text(body)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"grow\.jinja") as refused:
            templates.TemplateFolder("prompts", folder).render("grow.jinja")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert said in str(refused.value)
    assert peak < 60_000_000, peak  # bytes: the limit is 1,000,000 characters


def test_the_checks_leave_ordinary_templates_alone(tmp_path):
    from fbi import templates

    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "ok.jinja").write_text('{{ "x".ljust(3) }}|{{ "a b".replace(" ", "-") }}|'
                                     '{{ ["a", "b"]|join(",") }}|{{ "x" ~ "y" }}|'
                                     '{{ "%5d" % 7 }}|{{ "{:>4}".format("z") }}|{{ "ab" + "c" }}')
    assert templates.TemplateFolder("prompts", folder).render("ok.jinja") == \
        "x  |a-b|a,b|xy|    7|   z|abc\n"


def test_a_user_template_that_runs_too_long_is_stopped_and_named(tmp_path, monkeypatch):
    from fbi import templates
    from fbi.errors import InputError

    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "slow.jinja").write_text("{% for a in answer %}{% for b in answer %}{% for c in "
                                       "answer %}{% endfor %}{% endfor %}{% endfor %}\n")
    monkeypatch.setattr(templates, "MAX_RENDER_S", 0.5)
    with pytest.raises(InputError, match=r"slow.jinja: rendering took more than 0.5 s"):
        templates.TemplateFolder("prompts", folder).render("slow.jinja", answer="x" * 2000)


def test_a_template_that_is_not_utf8_is_named(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "bad.jinja").write_bytes(FRONT.encode() + b"caf\xe9\n")
    one_message(fbi("evaluate", "--prompts", str(folder), "--strategy", "bad", "--dry-run",
                    tmp_path=tmp_path), "line 8", "not UTF-8")


def test_a_fifo_given_as_the_dataset_does_not_hang(tmp_path):
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    one_message(fbi("datasets", "show", str(fifo), tmp_path=tmp_path), "not a regular file")


def test_deeply_nested_json_is_a_row_problem(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100000 + "]" * 100000 + "\n")
    one_message(fbi("datasets", "show", str(deep), tmp_path=tmp_path), "line 1")


def test_a_line_that_is_not_json_is_named_and_nothing_else_is_printed(tmp_path):
    # datasets' JSON reader logs its own error (with arrow's "row 1", counted from 0)
    # before it raises; fbi's message names the line, so that log would be a second one.
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "category": "spelling", "instruction": "Q?",
                                "gold_answer": "A.", "perturbed_answer": "B."})
                    + "\nnot json\n")
    result = fbi("datasets", "show", str(data), tmp_path=tmp_path)
    one_message(result, str(data), "line 2")
    assert result.stderr.lstrip().startswith("error:"), result.stderr


def test_an_invalid_run_json_is_named_in_evaluate(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for text in ("", "{}", "not json"):
        (run / "run.json").write_text(text)
        one_message(fbi("evaluate", "--output", str(run), "--dry-run", tmp_path=tmp_path),
                    "run.json: not a readable run spec")


def mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir(exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip()}); needs root")


@pytest.fixture
def disk(tmp_path):
    """A small disk of its own: tmpfs of 48 KiB; ``disk.remount(options)`` changes it."""
    where = tmp_path / "disk"
    mount_tmpfs(where, "size=48k")

    class Disk:
        path = where

        @staticmethod
        def remount(options: str) -> None:
            subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)

    yield Disk
    subprocess.run(["umount", "-l", str(where)], check=False)


def make_read_only(disk, folder: Path) -> None:
    if os.geteuid() == 0:
        disk.remount("ro")
    else:
        for path in (folder, *folder.rglob("*")):
            path.chmod(0o500 if path.is_dir() else 0o400)


@pytest.mark.slow
def test_read_only_folders_are_named_and_a_finished_run_can_still_be_read(disk, tmp_path):
    with ChatServer() as server:
        judge = ("--judge", "openai/x", "--api-base", server.url, "--strategy", "vanilla",
                 "--limit", "1", "--category", "entity")
        run = disk.path / "run"
        assert fbi("evaluate", *judge, "--output", str(run), tmp_path=tmp_path).returncode == 0
        make_read_only(disk, disk.path)
        one_message(fbi("evaluate", *judge, "--output", str(disk.path / "new"),
                        tmp_path=tmp_path), str(disk.path / "new"))
        one_message(fbi("evaluate", *judge, "--output", str(tmp_path / "elsewhere"),
                        "--cache", str(disk.path / "cache.sqlite"), tmp_path=tmp_path),
                    str(disk.path / "cache.sqlite"))
        one_message(fbi("evaluate", *judge, "--output", str(run), tmp_path=tmp_path), str(run))
        dry = fbi("evaluate", *judge, "--output", str(run), "--dry-run", tmp_path=tmp_path)
        assert dry.returncode == 0 and "2 already in" in dry.stdout, dry.stderr
        report = fbi("report", str(run), "--output", str(tmp_path / "report"),
                     tmp_path=tmp_path)
        assert report.returncode == 0, report.stderr
        one_message(fbi("report", str(run), tmp_path=tmp_path), str(run / "report.md"))
    assert not list(disk.path.rglob("*.tmp"))


@pytest.mark.slow
def test_a_full_disk_stops_the_run_and_loses_nothing(disk, tmp_path):
    run = disk.path / "run"
    with ChatServer() as server:
        args = ("evaluate", "--judge", "openai/x", "--api-base", server.url, "--strategy",
                "vanilla", "--limit", "1", "--no-cache", "--output", str(run))
        stopped = fbi(*args, tmp_path=tmp_path)
        assert stopped.returncode == 1, stopped.stderr
        assert "Traceback" not in stopped.stderr and stopped.stderr.count("error:") == 1
        assert f"{run / 'judgments.jsonl'}: cannot be written (No space left" in stopped.stderr
        assert "run the same command again to resume" in stopped.stderr
        saved = (run / "judgments.jsonl").read_bytes()
        assert saved.endswith(b"\n")  # no torn line for the next record to glue onto
        records = [json.loads(line) for line in saved.splitlines()]
        assert 0 < len(records) < 46
        assert not list(disk.path.rglob("*.tmp"))
        served = server.counts["ok"]
        disk.remount("size=1m")
        resumed = fbi(*args, tmp_path=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        # the saved judgments are kept; only the rest (and the one that could not be
        # saved) are asked again
        assert server.counts["ok"] - served <= 46 - len(records) + 1
    final = [json.loads(line) for line in (run / "judgments.jsonl").read_bytes().splitlines()]
    assert len(final) == 46 and final[:len(records)] == records


def test_the_atomic_writer_leaves_no_temporary_file_when_it_fails(tmp_path):
    from fbi.outputs import write_atomically

    target = tmp_path / "run.json"
    with pytest.raises(TypeError):
        write_atomically(target, 12345)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    write_atomically(target, json.dumps({"ok": True}))
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_an_annotator_event_that_does_not_fit_on_the_disk_leaves_no_torn_line(disk):
    from pydantic import BaseModel

    from fbi.logs import append_durably, read_log

    class Event(BaseModel):
        call_id: str
        note: str

    log = disk.path / "events.jsonl"
    written = 0
    with pytest.raises(OSError):
        while True:  # until the disk is full
            append_durably(log, Event(call_id=str(written), note="x" * 900))
            written += 1
    assert log.read_bytes().endswith(b"\n")
    disk.remount("size=1m")
    append_durably(log, Event(call_id="after", note="saved"))
    contents = read_log(log, Event)
    assert not contents.bad_lines and not contents.torn_tail
    assert [e.call_id for e in contents.records] == [*map(str, range(written)), "after"]


@pytest.mark.slow
@pytest.mark.parametrize(("arguments", "expected"), [
    (("--score-range", "1-1000000000000000000000"), "too wide"),
    (("--score-range", "1-20000000"), "too wide"),
    (("--temperature", "nan"), "not a finite number"),
    (("--temperature", "-1"), "--temperature"),
    (("--max-cost", "nan"), "not a finite number"),
    (("--max-cost", "inf"), "not a finite number"),
    (("--timeout", "inf"), "--timeout"),
    (("--concurrency", "10000000000"), "1<=x<=1024"),
    (("--seed", "99999999999999999999999"), "--seed"),
    (("--samples", "100000"), "--samples"),
])
def test_every_numeric_option_is_finite_and_in_range(tmp_path, arguments, expected):
    """Issue 22: refused with exit 2 and one message, before anything is planned."""
    result = fbi("evaluate", *arguments, "--dry-run", tmp_path=tmp_path)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr and "Traceback" not in result.stderr
