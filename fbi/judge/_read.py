"""Reading a judge run's log back: every judgment, or only the verdicts the outcome
rules need (a run of 50,000 calls summarised without holding its replies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from fbi.errors import InputError
from fbi.logs import read_log
from fbi.records import Judgment


class JudgmentVerdict(NamedTuple):
    """What outcome rules read of a judgment (see [`fbi.metrics`][fbi.metrics]), without its
    texts: the compact form [`read_verdicts`][fbi.judge.read_verdicts] keeps of each call,
    with the attribute names of [`Judgment`][fbi.records.Judgment]."""

    instance_id: str
    judge: str
    strategy: str
    paradigm: str
    role: str
    ability: Any
    category: str
    status: str
    score: int | None
    verdict: str | None
    score_range: tuple[int, int] | None
    sample: int


def read_verdicts(run_dir: str | Path, sample: int | None = 0) -> list[JudgmentVerdict]:
    """The verdicts of a run folder (the last record of each call; of one ``sample`` of
    --samples K, or all with None), read one record at a time: a run of 50,000 calls is
    summarised without holding its replies. A bad line is an InputError naming it."""
    path = _judgments_of(run_dir)
    latest: dict[str, JudgmentVerdict] = {}

    def keep(j: Judgment) -> None:
        if sample is None or j.sample == sample:
            latest[j.call_id] = JudgmentVerdict(
                j.instance_id, j.judge, j.strategy, j.paradigm, j.role, j.ability,
                j.category, j.status, j.score, j.verdict, j.score_range, j.sample)

    contents = read_log(path, Judgment, keep=False, visit=keep)
    if contents.problem():
        raise InputError(contents.problem())
    return list(latest.values())


def read_judgments(run_dir: str | Path) -> list[Judgment]:
    """The judgments of a run folder, the last record of each call; a bad line is an
    InputError naming it."""
    path = _judgments_of(run_dir)
    contents = read_log(path, Judgment)
    if contents.problem():
        raise InputError(contents.problem())
    return list(contents.latest().values())


def _judgments_of(run_dir: str | Path) -> Path:
    """A run folder's judgments.jsonl; an InputError when there is none."""
    path = Path(run_dir) / "judgments.jsonl"
    if not path.exists():
        raise InputError(f"{path}: no judgments here. Fix: pass a folder written by "
                         "`fbi evaluate --output`")
    return path
