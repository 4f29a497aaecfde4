"""Did the judge get worse than its baseline? One paired, one-sided exact test per
strategy and group (each planted-error category, and overall), Holm over all of them.

On the instances both runs judged readably under a strategy, ``b`` counts those the
baseline detected and the candidate missed, ``c`` the reverse. Under "no worse" a
discordant instance is as likely either way, so the p-value is P(X ≥ b) for
X ~ Binomial(b + c, ½) — McNemar's exact test, one-sided (scipy's ``binomtest``,
``alternative="greater"``). A row *regresses* when its Holm-adjusted p is at most
``alpha`` **and** its miss rate rose by more than ``max_regression``: significant and
large enough to matter. Score-invariant rewrites are not errors and are left out;
instances either run could not read are counted and said, never folded into a rate.

**Missing evidence fails the gate** (`EvidenceRow`): a paired test reads only what both
runs judged, so a candidate whose replies became unreadable would otherwise pass on
silence. Per strategy the gate fails when

* the candidate left out more than ``max_left_out`` of the suite's planted-error
  instances (no verdict: a failed call, an unreadable reply);
* a single-answer candidate lost the *perturbed* answer's verdict alone (its gold one
  read) more often than the gold's alone: missingness that follows the planted error is
  how a regression hides. Under replies that fail whatever they judge the two counts are
  alike, so P(X ≥ p), X ~ Binomial(p + g, ½), one-sided, tests it at ``alpha``;
* the left-out instances could hide a regression: counted as missed by the candidate
  (the worst case), some row regresses (Holm, as above).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fbi.metrics import HumanLabel, InstanceOutcome, holm, instance_outcomes
from fbi.runs import Run
from fbi.trust import TrustSettings, certificates

GATE_SCHEMA_VERSION = 1
#: The outcomes a paired test reads: everything else (unreadable, missing) is left out.
_READ = ("detected", "undetected")


class GateRow(BaseModel):
    """One strategy × group: the baseline's and the candidate's miss rates on the same
    instances, and the one-sided exact test between them."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    strategy: str
    """The strategy."""
    group: str
    """A planted-error category, or ``overall``."""
    paired: int
    """Instances both runs judged readably: the test's sample."""
    left_out: int
    """Instances of the group one run or the other could not read (or did not judge)."""
    baseline_rate: float | None
    """The baseline's miss rate on the paired instances."""
    candidate_rate: float | None
    """The candidate's miss rate on the same instances."""
    newly_missed: int
    """Detected by the baseline, missed by the candidate (b)."""
    newly_caught: int
    """Missed by the baseline, detected by the candidate (c)."""
    p_value: float
    """P(X ≥ b), X ~ Binomial(b + c, ½): one-sided exact McNemar."""
    p_holm: float = 1.0
    """Holm-adjusted over every row of the gate."""
    regressed: bool = False
    """Holm p ≤ alpha and the miss rate rose by more than max_regression."""


class EvidenceRow(BaseModel):
    """One strategy: how much of the suite the comparison could not read, and whether
    that is too much to conclude anything (see the module docstring)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    strategy: str
    """The strategy."""
    instances: int
    """Planted-error instances of the suite under it (either run)."""
    baseline_left_out: int
    """Of them, those the baseline gave no verdict on."""
    candidate_left_out: int
    """Those the candidate gave no verdict on."""
    perturbed_only: int
    """Single-answer: candidate instances whose perturbed answer's call alone was
    unreadable (or failed)."""
    gold_only: int
    """Single-answer: those whose gold answer's call alone was."""
    p_side: float
    """P(X ≥ perturbed_only), X ~ Binomial(perturbed_only + gold_only, ½)."""
    worst_case: list[str] = Field(default_factory=list)
    """Rows that regress when the candidate's left-out instances count as missed."""
    enough: bool = True
    """The evidence suffices: none of the three failures above."""
    reason: str = ""
    """Why not, in one sentence (empty when it does)."""


class HeldCertificate(BaseModel):
    """Whether a strategy's certificate (``--human``) still holds for the candidate."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    strategy: str
    """The strategy."""
    baseline_certified: bool
    """The baseline was certified: agreement ≥ the target at δ, on the labels given."""
    candidate_certified: bool
    """The candidate is, on the same labels."""
    held: bool
    """Not certified before, or certified still."""
    sentence: str
    """The candidate's certificate sentence."""


class GateResult(BaseModel):
    """``gate.json``: the comparison and its decision."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    schema_version: Literal[1] = GATE_SCHEMA_VERSION
    """The format's version."""
    baseline: str
    """The baseline run folder."""
    candidate: str
    """The candidate run folder."""
    judge: str
    """The candidate's judge."""
    alpha: float
    """The family-wise error level of the tests (Holm)."""
    max_regression: float
    """The rise in a miss rate that matters (e.g. 0.05: five points)."""
    max_left_out: float = 0.10
    """The share of the suite the candidate may leave unjudged before the gate fails."""
    rows: list[GateRow] = Field(default_factory=list)
    """Every strategy × group tested."""
    evidence: list[EvidenceRow] = Field(default_factory=list)
    """Per strategy: what the comparison could not read, and whether that fails it."""
    certificates: list[HeldCertificate] = Field(default_factory=list)
    """With ``--human``: each strategy's certificate, before and now."""
    passed: bool = True
    """No row regressed, the evidence sufficed and every certificate held."""
    sentence: str = ""
    """The decision in one sentence."""


def _p_greater(b: int, c: int) -> float:
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5, alternative="greater").pvalue)


def compare_runs(baseline: Run, candidate: Run, max_regression: float = 0.05,
                 alpha: float = 0.05, max_left_out: float = 0.10) -> GateResult:
    """The gate's comparison of two judge runs of the same suite (see the module
    docstring)."""
    before, after = instance_outcomes(baseline.judgments), \
        instance_outcomes(candidate.judgments)
    rows = compare_outcomes(before, after, max_regression, alpha)
    evidence = evidence_rows(before, after, candidate.judgments, max_regression, alpha,
                             max_left_out)
    return decide(GateResult(baseline=str(baseline.folder), candidate=str(candidate.folder),
                             judge=candidate.spec.model, alpha=alpha,
                             max_regression=max_regression, max_left_out=max_left_out,
                             rows=rows, evidence=evidence))


def evidence_rows(baseline: Sequence[InstanceOutcome], candidate: Sequence[InstanceOutcome],
                  candidate_judgments: Iterable, max_regression: float = 0.05,
                  alpha: float = 0.05, max_left_out: float = 0.10) -> list[EvidenceRow]:
    """Per strategy, whether what the candidate left unjudged is too much to conclude
    from (the module docstring's three failures)."""
    before = {(o.strategy, o.instance_id): o for o in baseline if not o.is_score_invariant}
    after = {(o.strategy, o.instance_id): o for o in candidate if not o.is_score_invariant}
    unreadable: dict[tuple[str, str], set[str]] = defaultdict(set)
    for judgment in candidate_judgments:
        if judgment.paradigm == "single" and judgment.status != "ok":
            unreadable[(judgment.strategy, judgment.instance_id)].add(judgment.role)
    rows = []
    for strategy in sorted({key[0] for key in before.keys() | after.keys()}):
        keys = [k for k in before.keys() | after.keys() if k[0] == strategy]
        left = [k for k in keys if k not in after or after[k].outcome not in _READ]
        sides = [unreadable.get(k, set()) for k in keys]
        perturbed_only = sum(s == {"perturbed"} for s in sides)
        gold_only = sum(s == {"gold"} for s in sides)
        # the worst case: what the candidate left out (and the baseline read) was missed
        worst = [o for k, o in after.items() if k[0] == strategy and k not in left] + [
            dataclasses.replace(before[k], outcome="undetected") for k in left
            if k in before and before[k].outcome in _READ]
        hidden = [f"{r.group} ({100 * r.baseline_rate:.0f}% → "  # type: ignore[operator]
                  f"{100 * r.candidate_rate:.0f}%)"  # type: ignore[operator]
                  for r in compare_outcomes([o for k, o in before.items() if k[0] == strategy],
                                            worst, max_regression, alpha)
                  if r.regressed] if left else []
        row = EvidenceRow(
            strategy=strategy, instances=len(keys),
            baseline_left_out=sum(k not in before or before[k].outcome not in _READ
                                  for k in keys),
            candidate_left_out=len(left), perturbed_only=perturbed_only,
            gold_only=gold_only, p_side=_p_greater(perturbed_only, gold_only),
            worst_case=hidden)
        share = row.candidate_left_out / row.instances if row.instances else 0.0
        if share > max_left_out:
            row.reason = (f"under {strategy} the candidate gave no verdict on "
                          f"{row.candidate_left_out} of {row.instances} instances "
                          f"({100 * share:.0f}%, more than the {100 * max_left_out:g}% "
                          "allowed)")
        elif perturbed_only > gold_only and row.p_side <= alpha:
            row.reason = (f"under {strategy} the candidate's verdict was unreadable on the "
                          f"perturbed answer alone {perturbed_only} times and on the gold "
                          f"answer alone {gold_only} times (p = {row.p_side:.3g}): what it "
                          "left out follows the planted errors")
        elif row.worst_case:
            row.reason = (f"under {strategy} the {row.candidate_left_out} instances the "
                          "candidate left out could hide a regression (counted as missed: "
                          f"{'; '.join(row.worst_case)})")
        row.enough = not row.reason
        rows.append(row)
    return rows


def compare_outcomes(baseline: Iterable[InstanceOutcome],
                     candidate: Iterable[InstanceOutcome], max_regression: float = 0.05,
                     alpha: float = 0.05) -> list[GateRow]:
    """The rows of the gate: the paired tests of two runs' outcomes, Holm-adjusted, each
    marked regressed or not (see the module docstring)."""
    before = {(o.strategy, o.instance_id): o for o in baseline if not o.is_score_invariant}
    after = {(o.strategy, o.instance_id): o for o in candidate if not o.is_score_invariant}
    tallies: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for key in before.keys() | after.keys():
        old, new = before.get(key), after.get(key)
        strategy = key[0]
        category = (old or new).category  # type: ignore[union-attr]
        for group in (category, "overall"):
            tally = tallies[(strategy, group)]  # paired, left out, base miss, new miss, b
            if old is None or new is None or old.outcome not in _READ or \
                    new.outcome not in _READ:
                tally[1] += 1
                continue
            missed_before, missed_now = old.outcome == "undetected", \
                new.outcome == "undetected"
            tally[0] += 1
            tally[2] += missed_before
            tally[3] += missed_now
            tally[4] += missed_now and not missed_before
    rows = []
    for (strategy, group), (paired, left_out, base, now, b) in sorted(tallies.items()):
        c = b + base - now  # newly caught: discordant the other way
        rows.append(GateRow(
            strategy=strategy, group=group, paired=paired, left_out=left_out,
            baseline_rate=base / paired if paired else None,
            candidate_rate=now / paired if paired else None,
            newly_missed=b, newly_caught=c, p_value=_p_greater(b, c)))
    for row, adjusted in zip(rows, holm([r.p_value for r in rows]), strict=True):
        row.p_holm = adjusted
        row.regressed = adjusted <= alpha and row.paired > 0 and \
            row.candidate_rate - row.baseline_rate > max_regression  # type: ignore[operator]
    return rows


def held_certificates(baseline: Run, candidate: Run, labels: Sequence[HumanLabel],
                      settings: TrustSettings) -> list[HeldCertificate]:
    """Each strategy's certificate (`fbi.trust.certificates`) for both runs on the same
    human labels: one that was certified must still be."""
    before = {c.strategy: c for c in certificates([baseline], labels, [], settings)}
    now = {c.strategy: c for c in certificates([candidate], labels, [], settings)}
    held = []
    for strategy, old in sorted(before.items()):
        new = now.get(strategy)
        was = old.trust is not None and old.trust.certified
        still = new is not None and new.trust is not None and new.trust.certified
        held.append(HeldCertificate(
            strategy=strategy, baseline_certified=was, candidate_certified=still,
            held=still or not was, sentence=new.sentence if new else "not judged"))
    return held


def decide(result: GateResult) -> GateResult:
    """``passed`` and ``sentence`` from the rows, the evidence and the certificates."""
    result.passed = not any(row.regressed for row in result.rows) and \
        all(e.enough for e in result.evidence) and \
        all(c.held for c in result.certificates) and any(r.paired for r in result.rows)
    result.sentence = _sentence(result)
    return result


def _sentence(result: GateResult) -> str:
    regressed = [r for r in result.rows if r.regressed]
    lost = [c.strategy for c in result.certificates if not c.held]
    short = [e.reason for e in result.evidence if not e.enough]
    if short:
        return (f"{result.judge} fails: too little evidence to pass — " + "; ".join(short) +
                ". A gate never reads 'no regression' into missing verdicts" +
                (f" (and {len(regressed)} test(s) regressed)" if regressed else "") + ".")
    if not result.rows or not any(r.paired for r in result.rows):
        return f"{result.judge} fails: no instance was judged readably by both runs."
    if lost:
        return (f"{result.judge} lost its certificate under {', '.join(lost)}" +
                (f", and regressed on {len(regressed)} test(s)" if regressed else "") + ".")
    if not regressed:
        return (f"{result.judge} passes: no miss rate rose by more than "
                f"{100 * result.max_regression:.0f} points with Holm p ≤ {result.alpha:g} "
                f"over {len(result.rows)} tests.")
    return (f"{result.judge} regressed: " + "; ".join(
        f"{r.group} under {r.strategy} {100 * r.baseline_rate:.0f}% → "  # type: ignore[operator]
        f"{100 * r.candidate_rate:.0f}% missed (Holm p {r.p_holm:.3g})"  # type: ignore[operator]
        for r in regressed) + ".")
