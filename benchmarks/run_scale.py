"""How a run's cost grows with its calls: `fbi evaluate` as a user runs it, whole processes.

    python benchmarks/run_scale.py [--small-limit 2] [--skip-full]

Against the loopback OpenAI-protocol server answering at once (0 ms), on the original FBI
release (`../shared/data/fbi-original`) × all 11 strategies:

1. a small run (``--limit`` instances per category, about 1,000 calls) and the whole
   release (50,400 calls), each into a fresh folder with a fresh cache: wall time, time
   per call and peak RSS, so a cost that grows with the run shows as a ratio;
2. a fully cached re-run of the whole release into a new folder (every reply from the
   cache, 0 requests to the model).

Each run is a child process that reports its own peak RSS (``ru_maxrss``) as it exits;
times are measured from outside, start-up included. Results go to stdout as JSON; copy
them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = ROOT.parent / "shared" / "data" / "fbi-original"

#: Runs the fbi CLI in this process with argv[1:] and prints its peak RSS (MB) last.
MEASURED_FBI = """
import resource, sys
from fbi.cli import main
try:
    main(sys.argv[1:], prog_name="fbi")
finally:
    print("peak_rss_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
          file=sys.stderr)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small-limit", type=int, default=2,
                        help="instances per category of the small run")
    parser.add_argument("--skip-full", action="store_true",
                        help="only the small run (a quick check)")
    args = parser.parse_args()
    if not FBI_ORIGINAL.is_dir():
        raise SystemExit(f"needs the original FBI release at {FBI_ORIGINAL}")
    work = Path(tempfile.mkdtemp(prefix="fbi-scale-"))
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py")],
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    base_env = {**os.environ, "OPENAI_API_KEY": "sk-benchmark", "COLUMNS": "100",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    common = ["evaluate", "--judge", "openai/bench", "--api-base", url, "--dataset",
              str(FBI_ORIGINAL), "--strategy", "all", "--concurrency", "64", "--no-probe"]
    results = {}
    try:
        sizes = [("small", ["--limit", str(args.small_limit)])]
        if not args.skip_full:
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
        if not args.skip_full:
            env = {**base_env, "FBI_CACHE": str(work / "full.sqlite")}
            run = measured_fbi(*common, "--output", str(work / "cached"), env=env)
            results["cached_rerun_new_folder"] = {
                "seconds": run["seconds"], "peak_rss_mb": run["peak_rss_mb"],
                "totals": calls_line(run["stdout"])}
    finally:
        server.terminate()
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
