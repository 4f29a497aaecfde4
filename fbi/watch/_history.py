"""``DIR/watch.jsonl``: one line a finished step — what the canary said and what the
e-process made of it. The file is the watch's whole state: the next step's evidence is
computed from its counts, `fbi view` draws its history from it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fbi.errors import InputError
from fbi.logs import append_durably, read_log

#: The watch's file in its folder.
WATCH_FILE = "watch.jsonl"


class StreamStep(BaseModel):
    """One stream (a strategy on one category) at one step."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    strategy: str
    """The strategy asked."""
    category: str
    """The canary instances' category."""
    failures: int
    """Judgments this step that failed: an error undetected, a score-invariant rewrite
    penalised, or no readable verdict."""
    asked: int
    """Judgments this step."""
    log_e: float | None
    """log of the stream's e-value after this step (None: no evidence yet, E = 0)."""
    change_step: int | None = None
    """The step the change most likely began at (the start weighing most in E)."""
    rate_before: float | None = None
    """The failure rate before ``change_step``."""
    rate_after: float | None = None
    """The failure rate from ``change_step`` on."""

    @property
    def e_value(self) -> float:
        return e_value(self.log_e)


class WatchStep(BaseModel):
    """One finished step of a watch."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    version: Literal[1] = 1
    """The record's version."""
    step: int
    """1, 2, …: the canary asked once more."""
    at: str
    """When the step finished (UTC, ISO 8601)."""
    judge: str
    """The judge (a model string)."""
    calls: int
    """Model calls this step made."""
    streams: list[StreamStep]
    """Each stream's counts and evidence."""
    log_e: float | None
    """log of the watch's e-value (the streams' average); None while it is 0."""
    alpha: float
    """The false-alarm level: the alarm sounds when E ≥ 1/α."""
    alarm: bool
    """Whether E has reached 1/α at this step or before (an alarm stays raised)."""
    first_alarm: int | None = None
    """The step the alarm was first raised at."""

    @property
    def e_value(self) -> float:
        return e_value(self.log_e)


def e_value(log_e: float | None) -> float:
    """E from its log as recorded (None: 0), capped where a float ends."""
    return 0.0 if log_e is None else math.exp(min(log_e, 700.0))


def finite(value: float) -> float | None:
    """A log e-value as JSON holds it: −inf (no evidence yet) is None."""
    return value if math.isfinite(value) else None


def read_history(folder: Path) -> list[WatchStep]:
    """The finished steps of the watch in ``folder`` (none for a new one); a damaged line
    is one message naming it."""
    path = Path(folder) / WATCH_FILE
    contents = read_log(path, WatchStep)
    if contents.bad_lines:
        first = contents.bad_lines[0]
        raise InputError(f"{path}, line {first.number}: not a watch step ({first.error}). "
                         "Fix: restore the file, or watch afresh into another --output")
    steps = contents.records
    for number, step in enumerate(steps, 1):
        if step.step != number:
            raise InputError(f"{path}: step {step.step} where step {number} belongs (the "
                             "file was edited or merged). Fix: restore it, or watch afresh "
                             "into another --output")
    return steps


def append_step(folder: Path, step: WatchStep) -> None:
    """Add a finished step, on disk when this returns."""
    append_durably(Path(folder) / WATCH_FILE, step)
