"""Key-press latency of the vetting TUI as the queue grows.

    python benchmarks/tui_keypress.py [--items 300 1200 2400] [--presses 40]

For each size: a queue of that many items (the built-in sample repeated with new ids),
half of them already labelled in the annotator's event log, opened in the app through
Textual's pilot; then ``--presses`` label presses (each saves an event, fsyncs it and
moves on) and as many moves, timed one by one. Reports the median and the 95th
percentile in milliseconds. The FBI release is 2,400 items.

Results go to stdout as JSON; copy them to benchmarks/RESULTS.md with machine and date.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from fbi.annotate.app import VettingApp

from fbi import load_dataset, write_dataset
from fbi.vet import AnnotatorLog, load_queue


def make_queue(folder: Path, size: int) -> Path:
    sample = load_dataset("sample").instances
    instances = [sample[n % len(sample)].model_copy(update={"id": f"item-{n}"})
                 for n in range(size)]
    queue = folder / f"queue-{size}.jsonl"
    write_dataset(instances, queue)
    log = AnnotatorLog(queue, "bench")
    for instance in instances[: size // 2]:
        log.record(instance.id, "label", label="valid")
    return queue


async def measure(queue: Path, presses: int) -> dict:
    app = VettingApp(load_queue(queue), AnnotatorLog(queue, "bench"), "")
    label_ms, move_ms = [], []
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(presses):
            started = time.perf_counter()
            await pilot.press("v")
            await pilot.pause()
            label_ms.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            await pilot.press("left")
            await pilot.pause()
            move_ms.append(1000 * (time.perf_counter() - started))
            await pilot.press("right")

    def summary(values: list[float]) -> dict:
        ordered = sorted(values)
        return {"median_ms": round(statistics.median(ordered), 1),
                "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}

    return {"label": summary(label_ms), "move": summary(move_ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, nargs="+", default=[300, 1200, 2400])
    parser.add_argument("--presses", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="fbi-tui-bench-"))
    results = {}
    for size in args.items:
        results[size] = asyncio.run(measure(make_queue(folder, size), args.presses))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
