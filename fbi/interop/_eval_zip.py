"""Inspect's ``.eval`` log format, written one sample at a time.

inspect_ai's own writer (``write_eval_log`` → its recorder) rebuilds its list of buffered
samples and of summaries for every sample it is given: quadratic, 912 s and 2.7 GB for a
whole release's 50,400 judgments (benchmarks/RESULTS.md). The format is a zip archive,
documented by what Inspect's reader reads (inspect_ai 0.3, ``log/_recorders/eval.py``):

* ``_journal/start.json`` — ``{"version", "eval", "plan"}`` (its ``LogStart``);
* ``samples/{id}_epoch_{epoch}.json`` — each ``EvalSample``;
* ``_journal/summaries/1.json`` and ``summaries.json`` — every sample's
  ``EvalSample.summary()``;
* ``header.json`` — the ``EvalLog`` without its samples.

JSON as Inspect writes it: pydantic's, ``None`` fields left out. Deflate compression
(Inspect writes zstandard when it can, and reads either; so does ``inspect view``).
``tests/test_inspect.py`` checks that ``read_eval_log`` reads what this writes as it
reads Inspect's own writer's file of the same log.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _json(value: Any) -> bytes:
    from pydantic_core import to_json

    return to_json(value, exclude_none=True, fallback=lambda _: None)


def write_eval_zip(header: Any, samples: Iterable[Any], path: str | Path) -> int:
    """Write ``header`` (an ``EvalLog`` without samples) and ``samples`` (``EvalSample``
    objects, consumed one at a time) to ``path`` as a ``.eval`` log; returns how many
    samples it holds. Each sample's summary is kept as its JSON in a temporary file, not
    as an object (14 KB a sample in memory: 700 MB for a whole release)."""
    count = 0
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=5) as archive, tempfile.TemporaryFile() as kept:
        archive.writestr("_journal/start.json", _json(
            {"version": header.version, "eval": header.eval, "plan": header.plan}))
        for sample in samples:
            archive.writestr(f"samples/{sample.id}_epoch_{sample.epoch}.json",
                             _json(sample))
            kept.write((b"," if count else b"") + _json(sample.summary()))
            count += 1
        for name in ("_journal/summaries/1.json", "summaries.json"):
            kept.seek(0)
            with archive.open(name, "w") as member:
                member.write(b"[")
                shutil.copyfileobj(kept, member, 1 << 20)
                member.write(b"]")
        archive.writestr("header.json", _json(header.model_copy(update={"samples": None})))
    return count
