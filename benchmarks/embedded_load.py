"""The embedded judge on a busy machine: the main job's CPU time idle and under load.

    python benchmarks/embedded_load.py [--load 2] [--threads fbi 2]

Runs the README's main job (`fbi evaluate`: the `quick` dataset, the embedded SmolLM2
judge, a fresh cache and folder each time) as a child process, first on the idle machine,
then beside LOAD processes that each keep a core busy (a Python busy loop), and reports
each run's wall time and CPU time (user + system, from the child's rusage).

``--threads`` names the thread counts to compare: ``fbi`` leaves ``FBI_LOCAL_THREADS``
unset so fbi chooses (every core but those busy at the start); a number forces it (2 on
this machine is what fbi did before: every core whatever the load). Issue 26's target:
CPU time under load 2 within 1.5× the idle run's.

Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY_LOOP = "while True:\n    pass\n"


def main_job(work: Path, threads: str) -> dict:
    """One main job in a child process: wall seconds and the child's CPU seconds."""
    env = {**os.environ, "FBI_CACHE": str(work / f"cache-{time.monotonic_ns()}.sqlite"),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "100"}
    env.pop("FBI_LOCAL_THREADS", None)
    if threads != "fbi":
        env["FBI_LOCAL_THREADS"] = threads
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--output",
                           str(work / f"run-{time.monotonic_ns()}")], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"the main job exited {done.returncode}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the job")
    parser.add_argument("--threads", nargs="+", default=["fbi", "2"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fbi-embedded-load-"))
    main_job(work, "fbi")  # warm the page cache and the model's first load
    results: dict = {"cores": len(os.sched_getaffinity(0)), "load": args.load, "runs": {}}
    for threads in args.threads:
        idle = main_job(work, threads)
        busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(args.load)]
        try:
            time.sleep(1)  # let the load settle on the cores
            loaded = main_job(work, threads)
            load_average = os.getloadavg()[0]
        finally:
            for process in busy:
                process.kill()
                process.wait()
        results["runs"][threads] = {
            "idle": idle, "under_load": {**loaded, "load_average_1min": round(load_average, 2)},
            "cpu_ratio": round(loaded["cpu_s"] / idle["cpu_s"], 2)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
