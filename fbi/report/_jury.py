"""A jury: a virtual judge made of several runs over the same instances and strategies,
so it goes through every table a real judge does (``fbi report RUN… --jury MODE``).

Per instance and strategy, each member run with a readable verdict votes:

* ``majority`` — the jury detects the error when more than half of the voting members
  did (a tie is a miss, as a tied score is in the paper);
* ``any`` — the jury detects it when any member did;
* ``mean`` — single-answer: the mean of the members' gold scores against the mean of
  their perturbed scores; reference-guided: the mean perturbed score against the top.

Pairwise strategies take the majority verdict in each slot order whatever the mode (the
most frequent mapped verdict; a tie between verdicts is ``tie``). The jury's records
carry verdict-level scores (the range's top, or one below it, for a miss or a catch):
its rates, intervals, comparisons and pairwise tables are real, but score-level tables
(judge stability, the reference histogram) only restate its verdicts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from statistics import mean

from fbi.errors import InputError
from fbi.records import Judgment
from fbi.runs import Run

MODES = ("majority", "mean", "any")


def jury_run(members: list[Run], mode: str) -> Run:
    """The virtual run of ``members`` (already labelled) under ``mode``."""
    if mode not in MODES:
        raise InputError(f"unknown jury mode {mode!r}. Fix: use one of {', '.join(MODES)}")
    if len(members) < 2:
        raise InputError("a jury needs at least two runs. Fix: pass two or more run folders")
    label = f"jury:{mode}({', '.join(run.label for run in members)})"
    calls: dict[tuple[str, str], dict[str, dict[str, Judgment]]] = defaultdict(
        lambda: defaultdict(dict))
    for run in members:
        for judgment in run.judgments:
            calls[(judgment.strategy, judgment.instance_id)][run.label][judgment.role] = \
                judgment
    judgments = []
    for _, by_member in sorted(calls.items()):
        if len(by_member) < 2:
            continue  # only one member judged it: no jury
        judgments += _verdict(by_member, mode, label)
    first = members[0]
    spec = first.spec.model_copy(update={"label": label, "model": f"jury:{mode}"})
    instances = {i: instance for run in members for i, instance in run.instances.items()}
    return Run(first.folder, spec, judgments, instances, [], [])


def _verdict(by_member: dict[str, dict[str, Judgment]], mode: str, label: str
             ) -> list[Judgment]:
    sample = next(iter(next(iter(by_member.values())).values()))
    if sample.paradigm == "pairwise":
        return [_record(sample, label, role, verdict=_majority_verdict(
            [roles[role] for roles in by_member.values() if _ok(roles, role)]))
            for role in ("gold-first", "perturbed-first")]
    top = sample.score_range[1] if sample.score_range else 1
    if sample.paradigm == "single":
        votes = [(roles["gold"].score, roles["perturbed"].score)
                 for roles in by_member.values() if _ok(roles, "gold", "perturbed")]
        if not votes:
            return [_record(sample, label, role) for role in ("gold", "perturbed")]
        if mode == "mean":
            detected = mean(p for _, p in votes) < mean(g for g, _ in votes)
        else:
            detected = _decide([p < g for g, p in votes], mode)
        return [_record(sample, label, "gold", score=top),
                _record(sample, label, "perturbed", score=top - 1 if detected else top)]
    scores = [roles["perturbed"].score for roles in by_member.values()
              if _ok(roles, "perturbed")]
    if not scores:
        return [_record(sample, label, "perturbed")]
    detected = mean(scores) < top if mode == "mean" else _decide([s < top for s in scores],
                                                                   mode)
    return [_record(sample, label, "perturbed", score=top - 1 if detected else top)]


def _ok(roles: dict[str, Judgment], *needed: str) -> bool:
    return all(role in roles and roles[role].status == "ok" for role in needed)


def _decide(detections: list[bool], mode: str) -> bool:
    if mode == "any":
        return any(detections)
    return sum(detections) > len(detections) / 2


def _majority_verdict(judgments: list[Judgment]) -> str | None:
    counts = Counter(j.verdict for j in judgments if j.verdict)
    if not counts:
        return None
    (best, n), *rest = counts.most_common()
    return "tie" if rest and rest[0][1] == n else best


def _record(sample: Judgment, label: str, role: str, score: int | None = None,
            verdict: str | None = None) -> Judgment:
    readable = score is not None or verdict is not None
    return replace(  # members are read lean (fbi.runs.LeanJudgment)
        sample, call_id=f"{sample.instance_id}|{sample.strategy}|{role}", role=role,
        judge=label, score=score, verdict=verdict, slot_verdict=None,
        status="ok" if readable else "unparseable",
        reason=None if readable else "no member gave a readable verdict",
        explanation=None, cost=0.0, latency_s=0.0, cached=True, prompt_tokens=0,
        completion_tokens=0)
