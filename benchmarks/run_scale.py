"""How a run's cost grows with its calls: `fbi evaluate` as a user runs it, whole processes.

    python benchmarks/run_scale.py [--small-limit 2] [--skip-full]

Against the loopback OpenAI-protocol server answering at once (0 ms), on the original FBI
release (`../shared/data/fbi-original`) × all 11 strategies:

1. a small run (``--limit`` instances per category, about 1,000 calls) and the whole
   release (50,400 calls), each into a fresh folder with a fresh cache: wall time, time
   per call and peak RSS, so a cost that grows with the run shows as a ratio;
2. a fully cached re-run of the whole release into a new folder (every reply from the
   cache, 0 requests to the model);
3. ``fbi report`` over 5, 10 and 20 run folders of the whole release (copies of the run
   above, each under its own ``--label``: the report's work is the same as for 20 judges).

``--work DIR`` keeps the folders and caches in DIR, and a later invocation with the same
DIR and ``--reuse`` measures the report alone (a cached re-run needs the server the
cache was filled from: its address is part of every cache key).

Each run is a child process that reports its own peak RSS (``VmHWM``, see
``peak_rss.py``) as it exits; times are measured from outside, start-up included.
Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peak_rss import IMPORTABLE_IN_CHILD

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or ROOT.parent / "shared" / "data"
                    / "fbi-original")

#: Runs the fbi CLI in this process with argv[1:] and prints its peak RSS (MB) last.
MEASURED_FBI = IMPORTABLE_IN_CHILD + """
from fbi.cli import main
from peak_rss import peak_rss_mb
try:
    main(sys.argv[1:], prog_name="fbi")
finally:
    print("peak_rss_mb", peak_rss_mb(), file=sys.stderr)
"""


def measured_fbi(*args: str, env: dict[str, str]) -> dict:
    """Run ``fbi ARGS`` in a child process: wall seconds, peak RSS, output."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED_FBI, *args], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"fbi {' '.join(args)} exited {done.returncode}:\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    peak = float(done.stderr.rsplit("peak_rss_mb", 1)[1])
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(peak),
            "stdout": done.stdout}


def calls_line(stdout: str) -> str:
    """What fbi's totals line says: "N calls this time (C from the cache, R requests"."""
    found = re.search(r"(\d+) calls this time \((\d+) from the cache, (\d+) requests",
                      " ".join(stdout.split()))
    return "{} calls, {} from the cache, {} requests".format(*found.groups()) if found \
        else "(no totals line)"


def report_scale(work: Path, counts: list[int], env: dict[str, str]) -> dict:
    """`fbi report` over N copies of the whole release's run folder, each labelled as
    its own judge: wall time and peak RSS per N (markdown and JSON, as a user asks)."""
    folders = []
    for number in range(max(counts)):
        folder = work / f"judge-{number:02d}"
        if not folder.exists():
            shutil.copytree(work / "full", folder)
            spec = json.loads((folder / "run.json").read_text())
            spec["label"] = f"judge-{number:02d}"
            (folder / "run.json").write_text(json.dumps(spec))
        folders.append(str(folder))
    results = {}
    for count in counts:
        run = measured_fbi("report", *folders[:count], "--output",
                           str(work / f"report-{count}"), env=env)
        results[f"{count}_folders"] = {"seconds": run["seconds"],
                                       "peak_rss_mb": run["peak_rss_mb"]}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-limit", type=int, default=2,
                        help="instances per category of the small run")
    parser.add_argument("--skip-full", action="store_true",
                        help="only the small run (a quick check)")
    parser.add_argument("--work", type=Path, help="keep folders and caches here")
    parser.add_argument("--reuse", action="store_true",
                        help="the whole release's run is already in --work: measure "
                             "the report alone")
    parser.add_argument("--report", default="5,10,20",
                        help="numbers of run folders to report on (empty: none)")
    args = parser.parse_args()
    if not FBI_ORIGINAL.is_dir():
        raise SystemExit(f"needs the original FBI release at {FBI_ORIGINAL}")
    work = args.work or Path(tempfile.mkdtemp(prefix="fbi-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.reuse and not (work / "full" / "judgments.jsonl").exists():
        raise SystemExit(f"--reuse: no whole-release run in {work / 'full'}")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py")],
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    base_env = {**os.environ, "OPENAI_API_KEY": "sk-benchmark", "COLUMNS": "100",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    common = ["evaluate", "--judge", "openai/bench", "--api-base", url, "--dataset",
              str(FBI_ORIGINAL), "--strategy", "all", "--concurrency", "64", "--no-probe"]
    results = {}
    try:
        sizes = [] if args.reuse else [("small", ["--limit", str(args.small_limit)])]
        if not args.skip_full and not args.reuse:
            sizes.append(("full", []))
        for name, extra in sizes:
            env = {**base_env, "FBI_CACHE": str(work / f"{name}.sqlite")}
            run = measured_fbi(*common, *extra, "--output", str(work / name), env=env)
            with open(work / name / "judgments.jsonl", "rb") as log:
                calls = sum(1 for _ in log)
            results[name] = {"calls": calls, "seconds": run["seconds"],
                             "ms_per_call": round(1000 * run["seconds"] / calls, 3),
                             "peak_rss_mb": run["peak_rss_mb"],
                             "totals": calls_line(run["stdout"])}
        if not args.skip_full and not args.reuse:
            env = {**base_env, "FBI_CACHE": str(work / "full.sqlite")}
            shutil.rmtree(work / "cached", ignore_errors=True)
            run = measured_fbi(*common, "--output", str(work / "cached"), env=env)
            results["cached_rerun_new_folder"] = {
                "seconds": run["seconds"], "peak_rss_mb": run["peak_rss_mb"],
                "totals": calls_line(run["stdout"])}
        if args.report and not args.skip_full:
            results["report"] = report_scale(
                work, [int(n) for n in args.report.split(",")], base_env)
    finally:
        server.terminate()
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
