"""How `fbi view` scales: a run of 5,040 and of 50,400 judgments (the whole original
release × 11 strategies, 10× the first), then 20 runs of 50,400 in one server.

    python benchmarks/view_scale.py --work DIR [--runs 20]

DIR holds (or gets) ``full/``, the whole release judged by the loopback server with every
strategy — the folder `benchmarks/run_scale.py --work DIR` leaves — and copies of it,
each under its own label. The 5,040-judgment run is a tenth of its instances (every
tenth), cut from it with their judgments.

Each server is `fbi view` in its own process, as a user starts it; figures are taken
over HTTP from here: the time from the printed URL to the grid of a run that was not
opened before (the index is built then — "opens"), a filtered instance list, a text
search and one instance page, then the server's peak RSS (``VmHWM`` of its process).

Two baselines, in the same invocation, on the same files: the time to ``json.loads``
every line of a run's judgments.jsonl (the least any viewer reading the log must do),
and the peak RSS of a child holding the 20 runs' judgments as parsed dicts (a viewer
that keeps records rather than an index). Results to stdout as JSON; copy them to
benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from peak_rss import IMPORTABLE_IN_CHILD

ROOT = Path(__file__).resolve().parents[1]
FBI_ORIGINAL = Path(os.environ.get("FBI_ORIGINAL") or ROOT.parent / "shared" / "data"
                    / "fbi-original")


def whole_release(work: Path) -> Path:
    """``work/full``: made here as run_scale.py makes it, unless it is there."""
    full = work / "full"
    if (full / "judgments.jsonl").exists():
        return full
    if not FBI_ORIGINAL.is_dir():
        raise SystemExit(f"needs the original FBI release at {FBI_ORIGINAL}")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py")],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--judge", "openai/bench",
                        "--api-base", url, "--dataset", str(FBI_ORIGINAL), "--strategy",
                        "all", "--concurrency", "64", "--no-probe", "--output", str(full)],
                       check=True, env={**os.environ, "OPENAI_API_KEY": "sk-benchmark",
                                        "FBI_CACHE": str(work / "view-full.sqlite"),
                                        "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    finally:
        server.terminate()
    return full


def tenth(full: Path, work: Path) -> Path:
    """Every tenth instance of the whole run, with its judgments: a tenth of the calls."""
    small = work / "view-tenth"
    if (small / "judgments.jsonl").exists():
        return small
    small.mkdir(parents=True)
    lines = (full / "instances.jsonl").read_bytes().splitlines(keepends=True)
    kept = lines[::10]
    ids = {json.loads(line)["id"] for line in kept}
    (small / "instances.jsonl").write_bytes(b"".join(kept))
    with open(full / "judgments.jsonl", "rb") as source, \
            open(small / "judgments.jsonl", "wb") as target:
        for line in source:
            if json.loads(line)["instance_id"] in ids:
                target.write(line)
    spec = json.loads((full / "run.json").read_text())
    spec["label"], spec["dataset"]["instances"] = "tenth", len(ids)
    (small / "run.json").write_text(json.dumps(spec))
    return small


def copies(full: Path, work: Path, count: int) -> list[Path]:
    """``count`` copies of the whole run, each labelled as its own judge (run_scale.py's
    judge-NN folders, where they are)."""
    folders = []
    for number in range(count):
        folder = work / f"judge-{number:02d}"
        if not folder.exists():
            shutil.copytree(full, folder)
            spec = json.loads((folder / "run.json").read_text())
            spec["label"] = f"judge-{number:02d}"
            (folder / "run.json").write_text(json.dumps(spec))
        folders.append(folder)
    return folders


class Server:
    """`fbi view FOLDERS --port 0` in a child process."""

    def __init__(self, folders: list[Path]):
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fbi", "view", *map(str, folders), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "COLUMNS": "200"})
        line = self.process.stdout.readline()
        found = re.search(r"http://\S+/", line)
        if not found:
            raise SystemExit(f"fbi view did not start: {line}{self.process.stderr.read()}")
        self.url = found.group(0)
        self.start_to_url_s = round(time.perf_counter() - started, 3)

    def get(self, path: str, **params) -> tuple[float, str]:
        query = urllib.parse.urlencode(params, doseq=True)
        started = time.perf_counter()
        with urllib.request.urlopen(self.url + path + ("?" + query if query else ""),
                                    timeout=600) as response:
            body = response.read().decode("utf-8")
        return round(time.perf_counter() - started, 3), body

    def peak_rss_mb(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return round(int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def one_run(folder: Path) -> dict:
    """Open one run in a fresh server: grid, filters, search, an instance; peak RSS."""
    server = Server([folder])
    try:
        key = folder.name
        opened, _ = server.get("grid", run=key)
        again, _ = server.get("grid", run=key)
        missed, page = server.get("instances", run=key, outcome="undetected",
                                  strategy="vanilla")
        instance_id = re.search(r'data-instance="([^"]+)"', page).group(1)
        searched, _ = server.get("instances", run=key, q="the answer")
        shown, _ = server.get("instance", run=key, id=instance_id)
        with open(folder / "judgments.jsonl", "rb") as log:
            calls = sum(1 for _ in log)
        return {"judgments": calls, "start_to_url_s": server.start_to_url_s,
                "grid_first_open_s": opened, "grid_again_s": again,
                "undetected_filter_s": missed, "text_search_s": searched,
                "instance_page_s": shown, "server_peak_rss_mb": server.peak_rss_mb()}
    finally:
        server.stop()


def many_runs(folders: list[Path]) -> dict:
    """Every run's grid opened in one server, then two side by side with their tests."""
    server = Server(folders)
    try:
        times = [server.get("grid", run=folder.name)[0] for folder in folders]
        pair, _ = server.get("grid", run=[folders[0].name, folders[1].name])
        every, _ = server.get("instances", outcome="undetected", q="the")
        runs, _ = server.get("")
        return {"runs": len(folders), "judgments": 50400 * len(folders),
                "start_to_url_s": server.start_to_url_s,
                "grid_open_s_max": max(times), "grid_open_s_median": sorted(times)[
                    len(times) // 2], "two_judges_with_comparison_s": pair,
                "filter_over_all_runs_s": every, "runs_page_s": runs,
                "server_peak_rss_mb": server.peak_rss_mb()}
    finally:
        server.stop()


BASELINE_RECORDS = IMPORTABLE_IN_CHILD + """
import json
from peak_rss import peak_rss_mb
held = []
for path in sys.argv[1:]:
    with open(path, "rb") as log:
        held.append([json.loads(line) for line in log])
print(peak_rss_mb())
"""


def baselines(full: Path, folders: list[Path]) -> dict:
    started = time.perf_counter()
    with open(full / "judgments.jsonl", "rb") as log:
        for line in log:
            json.loads(line)
    parse = round(time.perf_counter() - started, 3)
    held = subprocess.run([sys.executable, "-c", BASELINE_RECORDS,
                           *(str(f / "judgments.jsonl") for f in folders)],
                          capture_output=True, text=True, check=True)
    return {"json_loads_every_line_of_one_run_s": parse,
            f"records_of_{len(folders)}_runs_held_as_dicts_peak_rss_mb":
                round(float(held.stdout.split()[-1]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True,
                        help="holds full/ (run_scale.py's) or gets it")
    parser.add_argument("--runs", type=int, default=20, help="runs served at once")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    full = whole_release(args.work)
    folders = copies(full, args.work, args.runs)
    results = {"tenth": one_run(tenth(full, args.work)), "whole_release": one_run(full),
               "many": many_runs(folders), "baselines": baselines(full, folders)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
