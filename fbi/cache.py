"""A content-addressed response cache in one SQLite file, shared across runs.

The key is a hash of what decides a model's output (see ``ModelRequest.cache_key``);
the value is the raw response text and its usage, never parsed verdicts, so a parser
change re-parses for free. API keys are never part of a request, so never stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from fbi.errors import ConfigError, FbiWarning
from fbi.files import NotRegularFile, check_regular

CACHE_ENV = "FBI_CACHE"


def default_cache_path() -> Path:
    """$FBI_CACHE, else the user's cache folder (XDG_CACHE_HOME or ~/.cache)/fbi."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fbi" / "responses.sqlite"


class ResponseCache:
    """get/put of raw responses by key. Safe to share between processes (WAL mode)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_cache_path()
        self.broken: str | None = None  # why the cache stopped being used mid-run
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            check_regular(self.path)  # (sqlite would block on a FIFO)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL,"
                " created REAL NOT NULL)"
            )
        except (sqlite3.Error, OSError, NotRegularFile) as error:
            raise ConfigError(
                f"{self.path}: not a usable response cache ({error}). Fix: delete it, pass "
                "another --cache FILE, or run with --no-cache") from None

    def get(self, key: str) -> dict[str, Any] | None:
        if self.broken:
            return None
        try:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?",
                                   (key,)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError) as error:
            self._give_up(error)
            return None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        if self.broken:
            return
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response, created) "
                "VALUES (?, ?, ?, ?)",
                (key, model, json.dumps(response, ensure_ascii=False), time.time()),
            )
        except sqlite3.Error as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        """Corruption found mid-run: the run goes on without the cache, said once."""
        import warnings

        self.broken = str(error)
        warnings.warn(f"{self.path}: the response cache failed ({error}); this run goes on "
                      "without it. Fix: delete the file, or pass another --cache FILE",
                      FbiWarning, stacklevel=3)

    def info(self) -> dict[str, Any]:
        """Where the cache is, how big, and what it holds per model."""
        rows = self._db.execute(
            "SELECT model, COUNT(*), MIN(created), MAX(created) FROM responses "
            "GROUP BY model ORDER BY COUNT(*) DESC, model").fetchall()
        size = sum(p.stat().st_size for p in (self.path, self.path.with_name(
            self.path.name + "-wal")) if p.exists())
        return {"path": str(self.path), "bytes": size, "rows": sum(r[1] for r in rows),
                "models": [{"model": model, "rows": count, "oldest": oldest,
                            "newest": newest} for model, count, oldest, newest in rows]}

    def prune(self, older_than_days: float | None = None, model: str | None = None) -> int:
        """Delete the entries older than the given days and/or of one model (both: those
        matching both); returns how many, and gives the space back to the disk."""
        if older_than_days is None and model is None:
            raise ValueError("prune needs older_than_days or model")
        where, args = [], []
        if older_than_days is not None:
            where.append("created < ?")
            args.append(time.time() - older_than_days * 86400)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        deleted = self._db.execute(f"DELETE FROM responses WHERE {' AND '.join(where)}",
                                   args).rowcount
        self._compact()
        return deleted

    def clear(self) -> int:
        """Delete every entry; returns how many."""
        deleted = self._db.execute("DELETE FROM responses").rowcount
        self._compact()
        return deleted

    def _compact(self) -> None:
        self._db.execute("VACUUM")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self._db.close()
