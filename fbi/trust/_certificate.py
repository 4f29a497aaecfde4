"""The certificate of `fbi report --human`: per judge × strategy, what the figures allow
— the agreement with people certified at the target and the share of items it covers
(`_evaluate`), the blind spots (FBI categories whose miss rate's 95% interval lies
above one half, and a hunt's confirmed findings for the same judge), the cost per 1,000
judgments, and one plain sentence. Nothing is claimed the data cannot support: without a
confidence signal or enough labels the sentence says so."""

from __future__ import annotations

from collections.abc import Sequence

from fbi.errors import InputError
from fbi.findings import HuntResult
from fbi.metrics import GroupRate, HumanLabel, cost_per_1000
from fbi.runs import Run
from fbi.trust._calibration import human_majority
from fbi.trust._evaluate import trust_result
from fbi.trust._items import confidence_kind, run_items, split
from fbi.trust._models import BlindSpot, Certificate
from fbi.trust._settings import TrustSettings


def _blind_spots(run: Run, strategy: str, rates: Sequence[GroupRate],
                 hunts: Sequence[HuntResult]) -> list[BlindSpot]:
    spots = [BlindSpot(name=r.group, source="category", rate=r.rate, low=r.ci_low,
                       high=r.ci_high)
             for r in rates if r.judge == run.label and r.strategy == strategy
             and r.level == "category" and r.rate is not None and r.ci_low is not None
             and r.ci_low > 0.5]
    # harmless rewrites penalised more often than not is a failure too (issue 53: "none
    # found" was said beside 0.0% retained); the rate kept is turned into the rate lost
    spots += [BlindSpot(name="score-invariant rewrites", source="score-invariant",
                        rate=1 - r.rate, low=1 - r.ci_high, high=1 - r.ci_low)
              for r in rates if r.judge == run.label and r.strategy == strategy
              and r.level == "score-invariant" and r.rate is not None
              and r.ci_high is not None and r.ci_low is not None and r.ci_high < 0.5]
    for hunt in hunts:
        if hunt.model == run.spec.model and strategy in hunt.strategies:
            spots += [BlindSpot(name=f.name, source="hunt", rate=f.miss_rate,
                                low=f.interval[0] if f.interval else None,
                                high=f.interval[1] if f.interval else None)
                      for f in hunt.findings if f.confirmed and f.miss_rate is not None]
    return sorted(spots, key=lambda s: -s.rate)


def _undecided(run: Run, strategy: str, rates: Sequence[GroupRate]) -> list[BlindSpot]:
    """Categories missed more often than not whose 95% interval still reaches one half:
    the data cannot tell whether they are blind spots (three instances missed 78% of
    the time are no evidence either way)."""
    mine = [r for r in rates if r.judge == run.label and r.strategy == strategy
            and r.rate is not None]
    found = [BlindSpot(name=r.group, source="category", rate=r.rate, low=r.ci_low,
                       high=r.ci_high)
             for r in mine if r.level == "category" and r.rate > 0.5
             and (r.ci_low is None or r.ci_low <= 0.5)]
    found += [BlindSpot(name="score-invariant rewrites", source="score-invariant",
                        rate=1 - r.rate, low=None if r.ci_high is None else 1 - r.ci_high,
                        high=None if r.ci_low is None else 1 - r.ci_low)
              for r in mine if r.level == "score-invariant" and r.rate < 0.5
              and (r.ci_high is None or r.ci_high >= 0.5)]
    return sorted(found, key=lambda s: -s.rate)


def certificates(runs: Sequence[Run], labels: Sequence[HumanLabel],
                 rates: Sequence[GroupRate], settings: TrustSettings,
                 hunts: Sequence[HuntResult] = ()) -> list[Certificate]:
    """One certificate per run × strategy (see the module docstring)."""
    votes: dict[str, list] = {}
    for label in labels:
        if label.verdict is not None:
            votes.setdefault(label.instance_id, []).append(label.verdict)
    labelled = [i for i, v in votes.items() if human_majority(v) is not None]
    calibration_ids, test_ids = split(labelled, settings.test_share, settings.seed)
    found = []
    for run in runs:
        try:
            kind = confidence_kind([run], settings.confidence if settings.confidence !=
                                   "jury" else "auto")
        except InputError:
            kind, reason = None, ("no confidence signal: judge with `fbi evaluate "
                                  "--samples K` (K ≥ 2) or `--logprobs`")
        for strategy in sorted({j.strategy for j in run.judgments}):
            result = None
            if kind is not None:
                items = run_items(run, strategy, kind, votes)
                calibrating = sum(i.key[0] in calibration_ids and i.human is not None
                                  for i in items)
                reason = (f"no {kind} confidence under {strategy}" if not items else
                          f"only {calibrating} labelled calibration items (fewer than "
                          f"{settings.min_items})")
                if items:
                    result = trust_result(run.label, strategy, kind, items, settings,
                                          calibration_ids, test_ids)
                    if result.n_calibration < settings.min_items:
                        result = None
            spots = _blind_spots(run, strategy, rates, hunts)
            undecided = _undecided(run, strategy, rates)
            cost = cost_per_1000([j for j in run.judgments if j.strategy == strategy],
                                 [j for j in run.repeats if j.strategy == strategy])
            found.append(Certificate(
                judge=run.label, strategy=strategy, trust=result, blind_spots=spots,
                undecided=undecided, cost_per_1000=cost,
                sentence=_sentence(run.label, strategy, result, reason, spots, undecided,
                                   cost, settings)))
    return found


def _sentence(judge: str, strategy: str, result, reason: str, spots: list[BlindSpot],
              undecided: list[BlindSpot], cost: float | None,
              settings: TrustSettings) -> str:
    if result is None:
        text = (f"{judge} under {strategy}: nothing is certified ({reason}); every item "
                "still needs a person.")
    elif not result.certified:
        text = (f"{judge} under {strategy}: no threshold reaches "
                f"{100 * settings.target:.0f}% agreement at δ = {settings.delta:g} "
                f"({result.failure}); every item still needs a person.")
    else:
        text = (f"{judge} under {strategy}: at threshold {result.threshold:.2f}, this judge "
                f"may be used without review on {100 * result.coverage:.0f}% of items with "
                f"≥ {100 * settings.target:.0f}% agreement, δ = {settings.delta:g}.")
    if spots:
        text += " Blind spots: " + ", ".join(
            f"{s.name} ({100 * s.rate:.0f}% "
            f"{'penalised' if s.source == 'score-invariant' else 'missed'})"
            for s in spots[:5]) + "."
    if undecided:
        text += (f" Too few instances to tell whether {len(undecided)} categor"
                 f"{'y is a blind spot' if len(undecided) == 1 else 'ies are blind spots'}"
                 " (missed more often than not, intervals reaching one half): " +
                 ", ".join(f"{s.name} ({100 * s.rate:.0f}%)" for s in undecided[:5]) + ".")
    if cost is not None:
        text += f" ${cost:.2f} per 1,000 judgments."
    return text
