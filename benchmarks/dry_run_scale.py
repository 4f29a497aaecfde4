"""`fbi evaluate --dry-run` on large datasets: wall time and peak RSS, whole processes.

    python benchmarks/dry_run_scale.py [--rows 20000,200000] [--source release|sample]
                                       [--work DIR]

Builds datasets of N rows from the original FBI release (``../shared/data/fbi-original``;
long-form answers, about 4.8 kB a row) or from fbi's built-in sample (about 1 kB a row),
their instances repeated under new ids and written as .jsonl by fbi itself, then times
``fbi evaluate --dry-run`` on each with ``--strategy vanilla`` and with ``--strategy all``
as a user runs it (fresh cache, an API judge at an address that is never called). Each
run is a child process reporting its own peak RSS (see ``run_scale.py``). Results go to
stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path

from run_scale import FBI_ORIGINAL, measured_fbi


def build_dataset(rows: int, source: str, path: Path) -> Path:
    """``rows`` instances of ``source``, repeated with an ``~k`` suffix on each id."""
    from fbi import load_dataset, write_dataset

    if path.exists():
        return path
    release = load_dataset(str(FBI_ORIGINAL) if source == "release" else source).instances
    write_dataset((release[n % len(release)].model_copy(
        update={"id": f"{release[n % len(release)].id}~{n // len(release)}"})
        for n in range(rows)), path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="20000,200000")
    parser.add_argument("--source", choices=("release", "sample"), default="release")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    if not FBI_ORIGINAL.is_dir():
        raise SystemExit(f"needs the original FBI release at {FBI_ORIGINAL}")
    work = args.work or Path(tempfile.mkdtemp(prefix="fbi-dry-run-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OPENAI_API_KEY": "sk-benchmark", "COLUMNS": "100",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "FBI_CACHE": str(work / "cache.sqlite")}
    results = {}
    for rows in (int(n) for n in args.rows.split(",")):
        dataset = build_dataset(rows, args.source, work / f"{args.source}-{rows}.jsonl")
        for strategy in ("vanilla", "all"):
            run = measured_fbi("evaluate", "--judge", "openai/gpt-4o", "--api-base",
                               "http://127.0.0.1:9/v1", "--dataset", str(dataset),
                               "--strategy", strategy, "--dry-run", "--output",
                               str(work / "never-written"), env=env)
            said = " ".join(run["stdout"].split())
            planned = re.search(r"([\d,]+) calls planned", said)
            margin = re.search(r"Prompt tokens ±([\d,]+ \([\d.]+%\))", said)
            results[f"{args.source}_{rows}_rows_{strategy}"] = {
                "file_mb": round(dataset.stat().st_size / 1e6), "seconds": run["seconds"],
                "peak_rss_mb": run["peak_rss_mb"],
                "calls_planned": planned.group(1) if planned else None,
                "sampled_margin": margin.group(1) if margin else "exact"}
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
