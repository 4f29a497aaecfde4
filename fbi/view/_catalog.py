"""Which run folders `fbi view` serves, and what its runs page says of each.

A run folder is found by its spec: ``run.json`` (evaluate, robustness, hunt) or
``QUEUE.run.json`` beside a perturb queue; which kinds are listed is the stage registry's
(`fbi.runs.stage_kinds`: a stage's ``listed``). Queues made before rules-only runs wrote
a spec have none: a ``.jsonl`` file whose first record is a perturbation candidate (made
by ``rules:…`` or ``llm:…``) outside any run folder is listed as one. Only specs
and first lines are read here — never a log — so listing a tree of many large runs costs
milliseconds; the figures that need a log (calls made, cost) come from the run's index
once built (`fbi.view._index`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import InputError
from fbi.files import open_regular
from fbi.run_spec import RunSpec
from fbi.runs import Stage, read_batches, read_spec, stage_kinds

#: How deep below each given path run folders are looked for.
MAX_DEPTH = 6


@dataclass(frozen=True)
class RunEntry:
    """One run folder as the runs page lists it: read from its spec alone."""

    key: str
    """Its name in URLs: the given path's last part, then the folder below it."""
    folder: Path
    """The run folder."""
    spec_path: Path
    """Its spec (``run.json`` or ``QUEUE.run.json``), or a rules queue's own file."""
    spec: RunSpec | None
    """The spec, or None for a rules queue and when it could not be read."""
    status: str
    """``finished``, ``partial``, ``batch pending``, ``running`` or ``unreadable``."""
    status_note: str = ""
    """What makes it partial, pending or unreadable."""
    queue: Path | None = None
    """A perturb run's queue file."""

    @property
    def kind(self) -> str:
        if self.spec is not None:
            return self.spec.kind
        return "perturb" if self.queue is not None else "unreadable"

    @property
    def updated_at(self) -> str:
        """When it was last written (ISO 8601): its spec's, or a queue file's time."""
        if self.spec is not None:
            return self.spec.updated_at
        from datetime import datetime, timezone

        try:
            stamp = self.spec_path.stat().st_mtime
        except OSError:
            return ""
        return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds")

    @property
    def label(self) -> str:
        """The run's label, else its model: how the grid and instance pages name it."""
        if self.spec is None:
            return self.key
        return self.spec.label or self.spec.model

    @property
    def strategies(self) -> list[str]:
        from fbi.taxonomy import strategy_order

        return strategy_order(self.spec.prompts) if self.spec else []

    @property
    def stage(self) -> type[Stage] | None:
        """The registered stage that wrote it (None: unreadable, or a stage not installed
        here)."""
        return stage_kinds().get(self.kind)

    @property
    def judgeable(self) -> bool:
        """Whether it has a grid and instances: a judge run."""
        return self.stage is not None and self.stage.judge_run

    @property
    def reported(self) -> bool:
        """Whether `fbi report` shows more of it than this page (not a judge run's)."""
        return self.stage is not None and self.stage.reported and not self.stage.judge_run


def discover(paths: Sequence[str | Path]) -> list[RunEntry]:
    """Every run folder at or below ``paths`` (hidden folders skipped), newest first. A
    path that does not exist is an `InputError`; a spec that does not read is listed as
    ``unreadable`` with its problem, so one broken folder does not hide the others."""
    entries: list[RunEntry] = []
    taken: set[str] = set()
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise InputError(f"{root}: no such folder. Fix: pass run folders or a folder "
                             "holding them (fbi evaluate writes fbi-runs/ by default)")
        base = root.resolve().name or "runs"
        roots = tuple(Path(r).resolve() if Path(r).is_dir() else Path(r).resolve().parent
                      for r in paths)
        for spec_path in sorted(_specs(root)):
            relative = spec_path.parent.relative_to(root).as_posix()
            key = base if relative == "." else f"{base}/{relative}"
            if spec_path.name != "run.json":  # a perturb queue: its file names it
                suffix = ".run.json" if spec_path.name.endswith(".run.json") else ".jsonl"
                key += "/" + spec_path.name[: -len(suffix)]
            while key in taken:  # two given paths with one name
                key += "~"
            taken.add(key)
            problem = _unservable(spec_path.parent, roots)
            entry = _entry(key, spec_path) if problem is None else RunEntry(
                key, spec_path.parent, spec_path, None, "unreadable", problem)
            if entry is not None:
                entries.append(entry)
    entries.sort(key=lambda e: e.updated_at, reverse=True)
    return entries


def _specs(root: Path):
    if root.is_file():
        if root.name.endswith("run.json"):
            yield root
        return
    unlisted = {stage.spec_file for stage in stage_kinds().values() if not stage.listed}
    for folder, subfolders, files in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        subfolders[:] = [s for s in subfolders if not s.startswith(".")
                         and depth < MAX_DEPTH]
        for name in files:
            spec = (name == "run.json" or name.endswith(".run.json")) and \
                name not in unlisted
            # a rules queue: a candidates file outside any run, with no spec of its own
            queue = not spec and "run.json" not in files and name.endswith(".jsonl") and \
                f"{name[:-len('.jsonl')]}.run.json" not in files
            if spec or (queue and _regular(Path(folder) / name)
                        and _is_candidate_queue(Path(folder) / name)):
                yield Path(folder) / name


def _regular(path: Path) -> bool:
    """Whether ``path`` (through its links) is a regular file: opening a FIFO waits for a
    writer forever, a device reads without end."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def _unservable(folder: Path, roots: tuple[Path, ...]) -> str | None:
    """Why a run folder is not served, or None: a file in it that links out of the
    folders given to `fbi view` (the viewer never shows what it was not given), or that
    is no regular file (a FIFO would hang the viewer, a device never end). Its run is
    listed as unreadable, and nothing in it is opened."""
    try:
        children = list(folder.iterdir())
    except OSError as error:
        return f"{folder}: cannot list it ({error.strerror})"
    for child in children:
        try:
            if child.is_symlink():
                target = child.resolve()
                if not any(target.is_relative_to(root) for root in roots):
                    return (f"{child.name} links out of the folders served (to {target}); "
                            "fbi view shows only what it was given. Fix: copy the file in")
            mode = child.stat().st_mode
        except (OSError, RuntimeError):  # a dangling or looping link: nothing to open
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return f"{child.name} is not a regular file (a FIFO, socket or device)"
    return None


def _is_candidate_queue(path: Path) -> bool:
    """Whether a JSONL file is a queue of perturbation candidates: its first record is a
    candidate, and one of its first records is still to vet — a vetted set exported
    from a queue holds the same records, every one labelled."""
    import json
    from itertools import islice

    try:
        with open_regular(path, "rb") as file:
            first = [json.loads(line) for line in islice(iter(
                lambda: file.readline(1 << 20), b""), 50) if line.strip()]
    except (OSError, ValueError):
        return False
    return bool(first) and isinstance(first[0], dict) and \
        "perturbed_answer" in first[0] and \
        str(first[0].get("generator", "")).startswith(("rules:", "llm:")) and \
        any(isinstance(r, dict) and r.get("label", "unvetted") == "unvetted" for r in first)


def _entry(key: str, spec_path: Path) -> RunEntry | None:
    if not spec_path.name.endswith("run.json"):  # a rules queue
        return RunEntry(key, spec_path.parent, spec_path, None, "finished",
                        queue=spec_path)
    try:
        spec = read_spec(spec_path)
    except InputError as error:
        return RunEntry(key, spec_path.parent, spec_path, None, "unreadable", str(error))
    stage = None if spec is None else stage_kinds().get(spec.kind)
    if stage is None or not stage.listed:  # (a stage not installed here: not shown)
        return None
    status, note = _status(spec, spec_path)
    queue = spec_path.with_name(spec_path.name[: -len(".run.json")] + ".jsonl") \
        if spec.kind == "perturb" else None
    return RunEntry(key, spec_path.parent, spec_path, spec, status, note, queue)


def _status(spec: RunSpec, spec_path: Path) -> tuple[str, str]:
    """Running (its writer's lock held by a live process), batch pending, partial or
    finished, from the spec's totals of its last invocation and its batch logs."""
    folder = spec_path.parent
    lock = folder / ".fbi.lock" if spec_path.name == "run.json" else \
        spec_path.with_name(spec_path.name[: -len(".run.json")] + ".lock")
    if _locked(lock):
        return "running", "a process is writing it now"
    for batches in folder.glob("*.batches.jsonl"):
        try:
            open_batches = [b for b in read_batches(batches).values() if not b.collected]
        except InputError:
            continue
        if open_batches:
            return "batch pending", (f"{len(open_batches)} provider batch(es) not collected: "
                                     "run the same command again to collect them")
    totals = spec.totals
    if totals.interrupted:
        return "partial", "interrupted (Ctrl-C): the same command resumes it"
    if totals.stopped_by_budget:
        return "partial", "stopped by --max-cost"
    if totals.stopped_by:
        return "partial", f"stopped: {totals.stopped_by}"
    if totals.failed:
        return "partial", f"{totals.failed} call(s) failed: the same command tries them again"
    return "finished", ""


def _locked(lock: Path) -> bool:
    """Whether a writer holds the run's lock: a shared lock is refused while it does.
    Opened for reading only, so looking never creates or changes the file."""
    import fcntl

    try:
        file = open_regular(lock, "rb")  # (closed below)
    except OSError:
        return False
    with file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)
        return False
