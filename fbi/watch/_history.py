"""``DIR/watch.jsonl``: one line a finished step — what the canary said and what the
e-process made of it. The file is the watch's whole state: the next step's evidence is
computed from its counts, `fbi view` draws its history from it.

Only the counts are evidence. Reading the file back (`read_history`) checks that every
step is this watch's — its judge, α and canary, the streams the canary holds, each
asking as many judgments as the stream has canary instances, failures between 0 and
that — and refuses one that is not, naming the line. What the file says of the evidence
(each e-value, ``alarm``, ``first_alarm``) is never believed: it is computed again from
the counts (`recomputed`), so an alarm cannot be edited away."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fbi.errors import FbiWarning, InputError
from fbi.logs import append_durably, read_log
from fbi.watch._evidence import alarm, change_evidence, combined_log_e, largest_log_e

#: The watch's file in its folder.
WATCH_FILE = "watch.jsonl"


class StreamStep(BaseModel):
    """One stream (a strategy on one category) at one step."""

    # strict: a count is an integer, never "3", 3.0 or true; no NaN anywhere
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, strict=True,
                              allow_inf_nan=False)

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

    model_config = ConfigDict(use_attribute_docstrings=True, strict=True, allow_inf_nan=False)

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
    canary: str | None = None
    """The canary's fingerprint (its instances, strategies and seed): a step of another
    canary is not this watch's evidence. (Steps written before it existed carry none.)"""

    @property
    def e_value(self) -> float:
        return e_value(self.log_e)


def e_value(log_e: float | None) -> float:
    """E from its log as recorded (None: 0), capped where a float ends."""
    return 0.0 if log_e is None else math.exp(min(log_e, largest_log_e()))


def finite(value: float) -> float | None:
    """A log e-value as JSON holds it: −inf (no evidence yet) is None."""
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class WatchShape:
    """What every step of one watch holds: checked against each line read back."""

    judge: str
    """The judge watched."""
    alpha: float
    """The watch's false-alarm level."""
    canary: str
    """The canary's fingerprint."""
    streams: dict[tuple[str, str], int]
    """(strategy, category) → the judgments a step asks of it."""


def read_history(folder: Path, shape: WatchShape | None = None) -> list[WatchStep]:
    """The finished steps of the watch in ``folder`` (none for a new one), with their
    evidence computed again from their counts (`recomputed`). A damaged line, or one
    that is not this watch's (``shape``: another judge, α, canary, a stream the canary
    does not hold, impossible counts), is one message naming it."""
    path = Path(folder) / WATCH_FILE
    contents = read_log(path, WatchStep)
    if contents.bad_lines:
        first = contents.bad_lines[0]
        raise InputError(f"{path}, line {first.number}: not a watch step ({first.error}). "
                         "Fix: restore the file, or watch afresh into another --output")
    steps = contents.records
    for number, (step, line) in enumerate(zip(steps, contents.lines, strict=True), 1):
        where = f"{path}, line {line}"
        if step.step != number:
            raise InputError(f"{where}: step {step.step} where step {number} belongs (the "
                             "file was edited or merged). Fix: restore it, or watch afresh "
                             "into another --output")
        _check_counts(step, where)
        if shape is not None:
            _check_shape(step, shape, where)
    again = recomputed(steps, shape.alpha if shape is not None else None)
    for said, counted, line in zip(steps, again, contents.lines, strict=True):
        if (said.alarm, said.first_alarm) != (counted.alarm, counted.first_alarm):
            warnings.warn(f"{path}, line {line}: says alarm {said.alarm} (first at "
                          f"{said.first_alarm}) where its counts say {counted.alarm} (first "
                          f"at {counted.first_alarm}); fbi believes the counts", FbiWarning,
                          stacklevel=2)
            break
    return again


def _refuse(where: str, problem: str) -> InputError:
    return InputError(f"{where}: {problem}: not this watch's evidence (the file was edited "
                      "or merged). Fix: restore it, or watch afresh into another --output")


def _check_counts(step: WatchStep, where: str) -> None:
    seen = set()
    for stream in step.streams:
        if not 0 <= stream.failures <= stream.asked or stream.asked < 1:
            raise _refuse(where, f"{stream.failures} failures of {stream.asked} judgments "
                          f"asked ({stream.strategy} on {stream.category})")
        key = (stream.strategy, stream.category)
        if key in seen:
            raise _refuse(where, f"{stream.strategy} on {stream.category} twice")
        seen.add(key)
    if not 0 < step.alpha < 1 or step.calls < 0:
        raise _refuse(where, f"alpha {step.alpha} or calls {step.calls}")


def _check_shape(step: WatchStep, shape: WatchShape, where: str) -> None:
    if step.judge != shape.judge:
        raise _refuse(where, f"a step of the judge {step.judge!r}, not {shape.judge!r}")
    if step.alpha != shape.alpha:
        raise _refuse(where, f"a step at alpha {step.alpha:g}, not {shape.alpha:g} (the "
                      "alarm's guarantee holds at one level, fixed when the watch began)")
    if step.canary is not None and step.canary != shape.canary:
        raise _refuse(where, "a step of another canary (other instances, strategies or "
                      "seed)")
    found = {(s.strategy, s.category): s.asked for s in step.streams}
    for key, asked in found.items():
        if key not in shape.streams:
            raise _refuse(where, f"{key[0]} on {key[1]}, a stream the canary does not hold")
        if asked != shape.streams[key]:
            raise _refuse(where, f"{asked} judgments of {key[0]} on {key[1]}, where a step "
                          f"asks {shape.streams[key]}")
    if set(found) != set(shape.streams):
        missing = sorted(set(shape.streams) - set(found))[0]
        raise _refuse(where, f"no count of {missing[0]} on {missing[1]}")


def recomputed(steps: list[WatchStep], alpha: float | None = None) -> list[WatchStep]:
    """The steps with every e-value, ``alarm`` and ``first_alarm`` computed from the
    counts alone, step after step, at ``alpha`` (None: each step's own)."""
    counts: dict[tuple[str, str], list[tuple[int, int]]] = {}
    first: int | None = None
    out = []
    for step in steps:
        level = alpha if alpha is not None else step.alpha
        streams, log_es = [], []
        for stream in step.streams:
            history = counts.setdefault((stream.strategy, stream.category), [])
            history.append((stream.failures, stream.asked))
            evidence = change_evidence(history)
            log_es.append(evidence.log_e)
            streams.append(stream.model_copy(update={
                "log_e": finite(evidence.log_e), "change_step": evidence.change_step,
                "rate_before": rate(*evidence.before), "rate_after": rate(*evidence.after)}))
        log_e = combined_log_e(log_es)
        if first is None and alarm(log_e, level):
            first = step.step
        out.append(step.model_copy(update={
            "streams": streams, "log_e": finite(log_e), "alarm": first is not None,
            "first_alarm": first}))
    return out


def rate(failures: int, asked: int) -> float | None:
    """A share, None of nothing."""
    return failures / asked if asked else None


def append_step(folder: Path, step: WatchStep) -> None:
    """Add a finished step, on disk when this returns."""
    append_durably(Path(folder) / WATCH_FILE, step)
