"""How `fbi export inspect` and `fbi trust` grow with a run: a tenth of the whole original
release (5,040 judgments) and the whole (50,400, 10×), each command a child process that
reports its wall time and peak RSS (``VmHWM``, ``peak_rss.py``).

    python benchmarks/trust_export_scale.py --work DIR

DIR is `view_scale.py`'s (``full/``, ``view-tenth/``, ``judge-00``…``judge-02``); the
tenth's three jury copies are cut here. `fbi trust` judges a jury of three runs (the same
judgments under three labels) against labels of every other planted-error instance.
Beside the export, Inspect's own reader (``read_eval_log``) reads the log written: the same
samples, read by the other tool; and at the tenth, the baseline: the same log written by
Inspect's own writer (``write_eval_log``), which fbi's replaced. Results to stdout as
JSON; copy them to RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from peak_rss import IMPORTABLE_IN_CHILD

MEASURED = IMPORTABLE_IN_CHILD + """
from peak_rss import peak_rss_mb
code = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    if code == "fbi":
        from fbi.cli import main
        main(sys.argv[1:], prog_name="fbi", standalone_mode=False)
    elif code == "inspect-writer":  # the baseline: the same log through Inspect's writer
        from inspect_ai.log import write_eval_log
        from fbi.interop._inspect_log import run_as_eval_log
        from fbi.runs import load_run
        write_eval_log(run_as_eval_log(load_run(sys.argv[1])), sys.argv[2])
    else:
        from inspect_ai.log import read_eval_log
        print(len(read_eval_log(sys.argv[1]).samples), "samples")
finally:
    print("peak_rss_mb", peak_rss_mb(), file=sys.stderr)
"""


def measured(*args: str) -> dict:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEASURED, *args], capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(f"{args} failed:\n{done.stderr[-3000:]}")
    return {"seconds": round(time.perf_counter() - started, 2),
            "peak_rss_mb": round(float(done.stderr.rsplit("peak_rss_mb", 1)[1]))}


def labels_for(run: Path, path: Path) -> Path:
    ids = [json.loads(line)["id"] for line in
           (run / "instances.jsonl").read_text(encoding="utf-8").splitlines()]
    path.write_text("instance_id,verdict\n" + "".join(f"{i},a\n" for i in ids[::2]))
    return path


def jury(source: Path, work: Path, prefix: str) -> list[Path]:
    folders = []
    for number in range(3):
        folder = work / f"{prefix}-{number}"
        if not folder.exists():
            shutil.copytree(source, folder)
            spec = json.loads((folder / "run.json").read_text())
            spec["label"] = folder.name
            (folder / "run.json").write_text(json.dumps(spec))
        folders.append(folder)
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    results = {}
    for name, source in (("tenth", args.work / "view-tenth"), ("whole", args.work / "full")):
        if not (source / "judgments.jsonl").exists():
            raise SystemExit(f"{source}: run benchmarks/view_scale.py --work {args.work}")
        with open(source / "judgments.jsonl", "rb") as log:
            calls = sum(1 for _ in log)
        out = args.work / f"inspect-{name}"
        shutil.rmtree(out, ignore_errors=True)
        export = measured("fbi", "export", "inspect", str(source), "--output", str(out))
        (log_file,) = out.glob("*.eval")
        reader = measured("inspect", str(log_file))
        # the baseline, Inspect's own writer, at the tenth only: at the whole it took
        # 912 s (RESULTS.md, 2026-11-26)
        writer = measured("inspect-writer", str(source), str(out / "theirs.eval")) \
            if name == "tenth" else None
        labels = labels_for(source, args.work / f"labels-{name}.csv")
        members = jury(source, args.work, f"jury-{name}")
        trust = measured("fbi", "trust", *map(str, members), "--human", str(labels))
        results[name] = {"judgments": calls, "export_inspect": export,
                         "inspect_write_eval_log": writer,
                         "inspect_read_eval_log": reader, "trust_jury_of_3": trust}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
