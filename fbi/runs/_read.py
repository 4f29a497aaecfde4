"""Reading a judge run folder back: the one place ``run.json``, ``judgments.jsonl``,
``instances.jsonl`` and ``explanation_checks.jsonl`` are read for analysis. Never
writes; never takes the run's lock."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, make_dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

from fbi.errors import InputError
from fbi.files import read_bytes
from fbi.logs import read_log
from fbi.records import ExplanationCheck, Instance, Judgment
from fbi.run_spec import RunSpec
from fbi.runs._folder import read_spec

#: What analysis never reads of a judgment: the raw reply, its repairs, the prompt's hash
#: and a reasoning model's thinking (``fbi show`` reads them from the full record).
_UNREAD = frozenset({"raw_output", "repair_outputs", "prompt_hash", "reasoning"})

#: A validated `Judgment` without the fields in ``_UNREAD``, in slots:
#: a report over 20 runs of 50,400 calls holds a million of them. Made from Judgment's own
#: field list so the two never drift; copy one with ``dataclasses.replace``.
LeanJudgment = make_dataclass(
    "LeanJudgment", [(name, Any) for name in Judgment.model_fields if name not in _UNREAD],
    slots=True, namespace={"__module__": __name__})


_lean_values = attrgetter(*LeanJudgment.__dataclass_fields__)


def lean(judgment: Judgment) -> Any:
    """The `LeanJudgment` of a judgment. Its short strings (ids, names, versions)
    are already shared between records: pydantic's JSON parser caches them."""
    return LeanJudgment(*_lean_values(judgment))


#: Instances read, by the sha256 of their file: runs of several judges over one dataset
#: (a comparison report) hold one copy, read once.
_INSTANCES_READ: dict[str, dict[str, Instance]] = {}


def _instances(path: Path) -> dict[str, Instance]:
    from fbi.datasets import load_dataset

    try:
        digest = hashlib.sha256(read_bytes(path)).hexdigest()
    except OSError:  # load_dataset says what is wrong with the file
        return {i.id: i for i in load_dataset(str(path), reader="fbi")}
    if digest not in _INSTANCES_READ:
        if len(_INSTANCES_READ) >= 8:
            _INSTANCES_READ.pop(next(iter(_INSTANCES_READ)))
        # fbi wrote the file: its own reader is the fast one, and names lines
        _INSTANCES_READ[digest] = {i.id: i for i in load_dataset(str(path), reader="fbi")}
    return _INSTANCES_READ[digest]


@dataclass
class Run:
    """A run folder, read. ``judgments`` are the first sample of every call — what every
    table reads, so a run with ``--samples K`` is reported like one without; the further
    samples are in ``repeats``, for the repeatability figures."""

    folder: Path
    """The run folder."""
    spec: RunSpec
    """Its run.json."""
    judgments: list[Judgment]
    """Or LeanJudgment, read with full=False."""
    instances: dict[str, Instance]
    """The instances judged, by id (from the run's own dataset copy)."""
    checks: list[ExplanationCheck]
    """The explanation checks made on it, if any."""
    problems: list[str] = field(default_factory=list)
    """What could not be read, said."""
    repeats: list[Judgment] = field(default_factory=list)
    """Samples 1..K-1."""
    offsets: dict[str, int] = field(default_factory=dict)
    """With ``offsets=True``: each first-sample call's byte offset in judgments.jsonl (its
    last record), so its full record is read back alone (`fbi view`)."""

    @property
    def label(self) -> str:
        return self.spec.label or self.spec.model


def load_run(folder: str | Path, full: bool = True, offsets: bool = False) -> Run:
    """A judge run folder, read; never written. Lines of a log that do not validate are
    left out and named in ``problems`` (the report prints them). ``full=False`` keeps each
    judgment as a `LeanJudgment`, read one line at a time: what a report over many
    runs needs, in a fraction of the memory. ``offsets=True`` (with ``full=False``) also
    keeps where each call's record starts in judgments.jsonl (`Run.offsets`)."""
    folder = Path(folder)
    spec_path, judgments_path = folder / "run.json", folder / "judgments.jsonl"
    if not spec_path.exists() or not judgments_path.exists():
        raise InputError(f"{folder}: not a run folder (no run.json and judgments.jsonl). "
                         "Fix: pass a folder written by `fbi evaluate --output`")
    spec = read_spec(spec_path)
    assert spec is not None
    if spec.kind != "evaluate":
        raise InputError(f"{folder}: holds a {spec.kind} run, not a judge run")
    instances: dict[str, Instance] = {}
    if (folder / "instances.jsonl").exists():
        instances = _instances(folder / "instances.jsonl")
    starts: dict[str, int] = {}
    if full:
        judgments = read_log(judgments_path, Judgment)
        records = list(judgments.latest().values())
    else:
        latest: dict[str, Any] = {}  # call id → its last record, as in LogContents.latest

        def keep_lean(judgment: Judgment, start: int) -> None:
            latest[judgment.call_id] = lean(judgment)
            if offsets and judgment.sample == 0:
                starts[judgment.call_id] = start

        judgments = read_log(judgments_path, Judgment, keep=False, visit_at=keep_lean)
        judgments.outcomes.clear()
        records = list(latest.values())
    checks = read_log(folder / "explanation_checks.jsonl", ExplanationCheck)
    problems = [p for p in (judgments.problem(), checks.problem()) if p]
    return Run(folder, spec, [j for j in records if j.sample == 0], instances,
               list(checks.latest().values()), problems,
               [j for j in records if j.sample > 0], starts)


