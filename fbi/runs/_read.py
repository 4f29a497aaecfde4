"""Reading a judge run folder back: the one place ``run.json``, ``judgments.jsonl``,
``instances.jsonl`` and ``explanation_checks.jsonl`` are read for analysis. Never
writes; never takes the run's lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fbi.errors import InputError
from fbi.records import ExplanationCheck, Instance, Judgment, RunSpec
from fbi.runs._folder import read_spec
from fbi.runs._log import read_log


@dataclass
class Run:
    """A run folder, read. ``judgments`` are the first sample of every call — what every
    table reads, so a run with ``--samples K`` is reported like one without; the further
    samples are in ``repeats``, for the repeatability figures."""

    folder: Path
    spec: RunSpec
    judgments: list[Judgment]
    instances: dict[str, Instance]
    checks: list[ExplanationCheck]
    problems: list[str] = field(default_factory=list)  # what could not be read, said
    repeats: list[Judgment] = field(default_factory=list)  # samples 1..K-1

    @property
    def label(self) -> str:
        return self.spec.label or self.spec.judge


def load_run(folder: str | Path) -> Run:
    """A judge run folder, read; never written. Lines of a log that do not validate are
    left out and named in ``problems`` (the report prints them)."""
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
        from fbi.sources import load_dataset

        instances = {i.id: i for i in load_dataset(str(folder / "instances.jsonl"))}
    judgments = read_log(judgments_path, Judgment)
    checks = read_log(folder / "explanation_checks.jsonl", ExplanationCheck)
    problems = [p for p in (judgments.problem(), checks.problem()) if p]
    records = list(judgments.latest().values())
    return Run(folder, spec, [j for j in records if j.sample == 0], instances,
               list(checks.latest().values()), problems,
               [j for j in records if j.sample > 0])


