"""`fbi gate`: judge a fixed suite again and compare with a baseline run (`_compare`).

The candidate run is an ordinary judge run (``DIR/run/``, resumable, cached) of the
baseline's suite under the baseline's strategies, selection, protocol and score range:
only the judge's settings are the caller's. A suite that is not the baseline's — other
rows, another selection of them — is refused before any call: the test pairs the same
instances or it says nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from fbi.datasets import Dataset, load_dataset
from fbi.errors import InputError
from fbi.gate._compare import GateResult, compare_runs, decide, held_certificates
from fbi.judge import PARSER_VERSION, Evaluation, EvaluationConfig, reparse
from fbi.logs import read_log
from fbi.outputs import claim_folder, mark_written, write_atomically
from fbi.records import Judgment
from fbi.run_spec import RunTotals
from fbi.runs import Run, load_run, read_spec, stopped
from fbi.settings import ModelSettings
from fbi.trust import TrustSettings, read_human_labels


@dataclass(frozen=True)
class GateSettings:
    """What `fbi gate` is asked: one settings object, checked when made (the Python API
    refuses what the CLI refuses)."""

    max_regression: float = 0.05
    """The rise in a miss rate that matters (0.05: five points)."""
    alpha: float = 0.05
    """The family-wise error level of the tests (Holm)."""
    max_left_out: float = 0.10
    """The share of the suite's planted-error instances the candidate may leave without a
    verdict (a failed call, an unreadable reply) before the gate fails for want of
    evidence."""

    def __post_init__(self) -> None:
        for name in ("max_regression", "alpha", "max_left_out"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or \
                    not math.isfinite(value):
                raise InputError(f"--{name.replace('_', '-')} {value!r}: give a number")
        if not 0 < self.alpha < 1:
            raise InputError(f"--alpha {self.alpha}: must lie strictly between 0 and 1")
        if not 0 <= self.max_regression < 1:
            raise InputError(f"--max-regression {self.max_regression}: a share of "
                             "instances in [0, 1), e.g. 0.05 for five points")
        if not 0 <= self.max_left_out < 1:
            raise InputError(f"--max-left-out {self.max_left_out}: a share of instances in "
                             "[0, 1), e.g. 0.1 for a tenth of the suite")


def baseline_run(folder: Path) -> Run:
    """The baseline: a finished judge run folder whose every record its stored reply
    confirms (`verified_run`), or one message saying what it is not."""
    if not (folder / "run.json").is_file():
        raise InputError(f"--baseline {folder}: no run.json. Fix: give a folder `fbi "
                         "evaluate --output` wrote")
    spec = read_spec(folder / "run.json")
    if spec.kind != "evaluate":
        raise InputError(f"--baseline {folder}: a {spec.kind} run, not a judge run. Fix: "
                         "give a folder `fbi evaluate` wrote")
    if not (folder / "instances.jsonl").is_file():
        raise InputError(f"--baseline {folder}: no instances.jsonl, so its replies cannot "
                         "be read again. Fix: give the whole folder `fbi evaluate` wrote")
    run = verified_run(folder, "--baseline")
    if not run.judgments:
        raise InputError(f"--baseline {folder}: no judgment. Fix: finish the run (run the "
                         "same command again) or give another")
    return run


def verified_run(folder: Path, option: str) -> Run:
    """A judge run whose verdicts are re-derived from its stored replies: a line that
    does not read (a NaN or an infinity included) is refused with its line, and so is a
    record whose verdict its own reply contradicts under the parser that wrote it (an
    edited file). Records of an older parser are read again, as ``fbi evaluate`` would."""
    run = load_run(folder)
    if run.problems:
        raise InputError(f"{option} {folder}: {run.problems[0]}")
    path = folder / "judgments.jsonl"
    contents = read_log(path, Judgment)
    line_of = {record.call_id: line
               for record, line in zip(contents.records, contents.lines, strict=True)}
    fields = ("status", "score", "verdict", "slot_verdict")
    reread = []
    for judgment in (*run.judgments, *run.repeats):
        again = reparse(judgment, run.instances.get(judgment.instance_id))
        said = tuple(getattr(judgment, f) for f in fields)
        read = tuple(getattr(again, f) for f in fields)
        if judgment.parser_version == PARSER_VERSION and said != read:
            shown = ", ".join(f"{f} {a!r} (its reply reads {b!r})"
                              for f, a, b in zip(fields, said, read, strict=True) if a != b)
            raise InputError(f"{path}, line {line_of[judgment.call_id]}: the record says "
                             f"{shown}: it no longer matches its stored reply (the file "
                             f"was edited). Fix: restore {folder}, or make it anew with "
                             "fbi evaluate")
        reread.append(again)
    run.judgments = [j for j in reread if j.sample == 0]
    run.repeats = [j for j in reread if j.sample > 0]
    return run


def suite_of(spec: str, baseline: Run) -> Dataset:
    """The suite, selected as the baseline selected it; refused when it is not the
    baseline's."""
    dataset = load_dataset(spec)
    chosen = baseline.spec.selection
    if chosen.sample is not None:
        suite = dataset.select(chosen.abilities or (), chosen.categories or (),
                               bool(chosen.include_extra), None, chosen.sample,
                               chosen.sample_seed or 0, chosen.sample_by or "category")
    else:
        suite = dataset.select(chosen.abilities or (), chosen.categories or (),
                               bool(chosen.include_extra), chosen.limit)
    if not suite.instances:
        raise InputError(f"{spec}: the suite holds no instance to judge. Fix: give the "
                         "dataset the baseline judged")
    recorded = baseline.spec.dataset.fingerprint
    found = suite.source_fingerprint or suite.fingerprint
    if recorded and recorded != found:
        raise InputError(f"{spec} is not the suite the baseline {baseline.folder} judged "
                         f"({baseline.spec.dataset.spec}: other rows): the test pairs the "
                         "same instances. Fix: gate on the baseline's dataset, or make a "
                         "new baseline on this one")
    return suite


def gate_evaluation(suite: Dataset, baseline: Run, settings: ModelSettings,
                    output: Path, force: bool = False) -> Evaluation:
    """The candidate's judge run: the baseline's strategies, protocol and score range,
    the caller's judge, into ``output/run``."""
    parameters, score_range = baseline.spec.parameters, baseline.spec.settings.score_range
    # a strategy of the user's own (`--prompts DIR`) is read from the folder it came from
    folders = {p.origin for p in baseline.spec.prompts.values()
               if p.origin and p.origin != "built-in"}
    if len(folders) > 1:
        raise InputError(f"--baseline {baseline.folder}: its strategies come from "
                         f"{len(folders)} folders; a gate reads one. Fix: gate a baseline "
                         "of one --prompts folder")
    config = EvaluationConfig(
        model=settings, strategies=tuple(baseline.spec.prompts),
        prompts_dir=Path(folders.pop()) if folders else None,
        score_range=(score_range[0], score_range[1]) if score_range else None,
        samples=parameters.samples or 1, logprobs=parameters.logprobs or 0,
        explanation_chars=parameters.explanation_chars,
        protocol=parameters.protocol or "fbi")  # type: ignore[arg-type]
    return Evaluation(suite, config, output / "run", force)


#: The gate's file, beside the candidate's run folder (``run/``).
GATE_FILE = "gate.json"


def claim_output(output: Path, force: bool = False) -> list[str]:
    """Make ``output`` the gate's folder before anything is written: new, empty, fbi's,
    or (``force``) one whose other files are never replaced; the files found there."""
    theirs = claim_folder(output, [GATE_FILE, "run"], force)
    output.mkdir(parents=True, exist_ok=True)
    mark_written(output, [], theirs)  # the folder is fbi's now: a resumed gate finds it so
    return theirs


def write_gate(result: GateResult, output: Path) -> Path:
    """``output/gate.json``, written whole (a crash leaves the old file or the new), in a
    folder `claim_output` claimed."""
    path = output / GATE_FILE
    write_atomically(path, result.model_dump_json(indent=2) + "\n")
    mark_written(output, [path])
    return path


class GateOutcome(NamedTuple):
    """What [`fbi.gate`][fbi.gate.gate] did."""

    totals: RunTotals
    """The candidate's calls: made, failed, stopped."""
    result: GateResult | None
    """The comparison (``gate.json``), or None when the run did not finish (stopped,
    failed calls, a budget): nothing is compared on part of the suite."""


def gate(suite: str, baseline: str | Path, output: str | Path, judge: str | ModelSettings,
         *, checks: GateSettings | None = None, client=None, progress=None,
         force: bool = False, human: str | Path | None = None) -> GateOutcome:
    """The whole gate (what ``fbi gate`` does): the baseline read, the suite checked
    against it, the candidate's run made (or resumed) with ``judge``'s client, the
    comparison — and, given ``human`` labels, each strategy's certificate before and
    now — written to ``output/gate.json``. ``judge``: a model string or its settings
    (a server, a pool). Never answered from the response cache: a cached reply would
    hide the very change the gate looks for (a ``client`` given is the caller's)."""
    settings = ModelSettings(model=judge) if isinstance(judge, str) else judge
    checks = checks or GateSettings()
    client = client or settings.client(None)
    baseline, output = Path(baseline), Path(output)
    human = None if human is None else Path(human)
    before = baseline_run(baseline)
    chosen = suite_of(suite, before)
    claim_output(output, force)
    evaluation = gate_evaluation(chosen, before, settings, output, force)
    totals = evaluation.run(client, progress)
    if stopped(totals) or totals.failed or totals.in_batches:
        return GateOutcome(totals, None)
    after = verified_run(output / "run", "the candidate's run")
    result = compare_runs(before, after, checks.max_regression, checks.alpha,
                          checks.max_left_out)
    if human is not None:
        labels, _ = read_human_labels(human, {**before.instances, **after.instances})
        result.certificates = held_certificates(before, after, labels,
                                                TrustSettings(test_share=0.0))
        decide(result)
    write_gate(result, output)
    return GateOutcome(totals, result)
