"""A broken environment or a hostile input ends in one message and exit code 2, never a
traceback (issue 12, item 3, the cases fixed so far)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT

FRONT = ('---\ndisplay_name: "X"\nparadigm: single\nexplanation: false\n'
         'score_range: [1, 3]\nversion: 1\n---\n')


def fbi(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "COLUMNS": "200"}
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

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", "m", {"text": "x"})
    cache._db.execute("DROP TABLE responses")  # what a corrupt page does to every query
    with pytest.warns(RuntimeWarning, match="goes on without it"):
        assert cache.get("k") is None
    assert cache.get("other") is None and cache.broken  # no second warning, no error
    cache.put("k2", "m", {"text": "y"})


@pytest.mark.parametrize(("body", "expected"), [
    ('{% extends "bad.jinja" %}\n', "extends itself"),
    ("{% for i in range(10**7) %}x{% endfor %}\n", "Range too big"),
    ("fine\n{% if %}\n", "bad.jinja, line 9"),
])
def test_broken_templates_are_named_with_their_line(tmp_path, body, expected):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "bad.jinja").write_text(FRONT + body)
    one_message(fbi("evaluate", "--prompts", str(folder), "--strategy", "bad", "--dry-run",
                    tmp_path=tmp_path), expected)


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


def test_an_invalid_run_json_is_named_in_evaluate(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for text in ("", "{}", "not json"):
        (run / "run.json").write_text(text)
        one_message(fbi("evaluate", "--output", str(run), "--dry-run", tmp_path=tmp_path),
                    "run.json: not a readable run spec")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    one_message(fbi("evaluate", "--output", str(locked / "run"), tmp_path=tmp_path),
                str(locked))


def test_the_atomic_writer_leaves_no_temporary_file_when_it_fails(tmp_path):
    from fbi.runs import write_atomically

    target = tmp_path / "run.json"
    with pytest.raises(TypeError):
        write_atomically(target, 12345)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    write_atomically(target, json.dumps({"ok": True}))
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
