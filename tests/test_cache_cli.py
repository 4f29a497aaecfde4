"""`fbi cache info|prune|clear` on a real SQLite cache (issue 13, item 4)."""

from __future__ import annotations

import sqlite3
import time

from click.testing import CliRunner

from fbi.cache import ResponseCache
from fbi.cli import main


def filled_cache(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    for n in range(3):
        cache.put(f"old-{n}", "openai/a", {"text": "x" * 1000})
    for n in range(2):
        cache.put(f"new-{n}", "openai/b", {"text": "y"})
    cache.close()
    with sqlite3.connect(path) as db:  # three responses stored ten days ago
        db.execute("UPDATE responses SET created = ? WHERE key LIKE 'old-%'",
                   (time.time() - 10 * 86400,))
    return path


def fbi(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, env={"COLUMNS": "80"})


def test_info_lists_models_with_counts_and_ages(tmp_path):
    path = filled_cache(tmp_path)
    result = fbi("cache", "info", "--cache", str(path))
    assert result.exit_code == 0, result.output
    assert "5 responses" in result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()
             if line.strip().startswith("openai/")}
    assert lines["openai/a"].split()[1] == "3" and "10.0 days ago" in lines["openai/a"]
    assert lines["openai/b"].split()[1] == "2" and "hours ago" in lines["openai/b"]


def test_prune_by_age_and_by_model(tmp_path):
    path = filled_cache(tmp_path)
    assert "deleted 3 responses" in fbi("cache", "prune", "--cache", str(path),
                                        "--older-than", "7").output
    assert "deleted 0 responses" in fbi("cache", "prune", "--cache", str(path),
                                        "--older-than", "7", "--model", "openai/b").output
    assert "deleted 2 responses" in fbi("cache", "prune", "--cache", str(path),
                                        "--model", "openai/b").output
    assert len(ResponseCache(path)) == 0
    assert fbi("cache", "prune", "--cache", str(path)).exit_code == 2  # nothing to go by


def test_clear_asks_first(tmp_path):
    path = filled_cache(tmp_path)
    refused = fbi("cache", "clear", "--cache", str(path), input="n\n")
    assert refused.exit_code == 1 and len(ResponseCache(path)) == 5
    cleared = fbi("cache", "clear", "--cache", str(path), "--yes")
    assert cleared.exit_code == 0 and "deleted 5 responses" in cleared.output
    assert len(ResponseCache(path)) == 0


def test_a_missing_cache_is_a_message(tmp_path):
    result = fbi("cache", "info", "--cache", str(tmp_path / "none.sqlite"))
    assert result.exit_code == 2 and "no response cache here yet" in result.output


def test_no_test_can_reach_the_users_cache():
    """Issue 38: tests/conftest.py points the response cache (and every ~/.cache) at a
    folder of the test session, for every test and every process a test starts."""
    import os
    import tempfile
    from pathlib import Path

    from fbi.cache import default_cache_path

    assert default_cache_path().is_relative_to(tempfile.gettempdir())
    assert not default_cache_path().is_relative_to(Path.home() / ".cache")
    assert os.environ["XDG_CACHE_HOME"].startswith(tempfile.gettempdir())
