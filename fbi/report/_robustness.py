"""The QA robustness runs in a report: reading a robustness folder back, and its tables
(MultiQ&A, natural noise, answer order, MAQA, judge stability) for every renderer."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from fbi.errors import InputError, validation_summary
from fbi.escaping import markdown_text as md
from fbi.files import read_bytes, read_text
from fbi.metrics import Metrics, RobustnessResults
from fbi.report._cells import markdown_table, percent, plain
from fbi.report._schema import RobustnessEntry, Summary
from fbi.taxonomy import strategy_order

MULTIQA_COLUMNS = [("base_accuracy", "base acc."), ("mode_accuracy", "mode acc."),
                   ("worst_case", "worst"), ("best_case", "best"),
                   ("item_difficulty", "μ_D"), ("certainty", "H_η"), ("gibbs_m2", "M2"),
                   ("fleiss_kappa", "Fleiss' κ"),
                   ("cronbach_alpha_permuted_mean", "Cronbach's α")]


Table = tuple[str, list[str], list[list[str]]]


def robustness_tables(summary: Summary) -> list[Table]:
    """(title, header, rows) of every robustness table, for Markdown and HTML alike."""
    return [*suite_tables(summary.robustness), *_stability_tables(summary)]


def suite_tables(runs: list[RobustnessEntry]) -> list[Table]:
    """The robustness runs' tables (MultiQ&A, noise, answer order, MAQA)."""
    return [*_multiqa_table(runs), *_noise_tables(runs), *_shuffle_and_maqa_tables(runs)]


def _multiqa_table(runs: list[RobustnessEntry]) -> list[Table]:
    multiqa = [(r, r.suites.multiqa) for r in runs if r.suites.multiqa is not None]
    if not multiqa:
        return []
    return [("MultiQ&A: rephrasings (Fleiss' κ and Cronbach's α over 1,000 variant "
             "permutations)",
             ["model", "dataset", "questions", *[c[1] for c in MULTIQA_COLUMNS]],
             [[r.model, r.dataset, plain(m.questions),
               *[plain(getattr(m, k)) for k, _ in MULTIQA_COLUMNS]] for r, m in multiqa])]


def _interval(metrics: Metrics, name: str) -> str:
    low, high = getattr(metrics, f"{name}_ci_low"), getattr(metrics, f"{name}_ci_high")
    return "–" if low is None else f"[{low:.2f}, {high:.2f}]"


def _noise_tables(runs: list[RobustnessEntry]) -> list[Table]:
    group_rows, noise_rows = [], []
    for r in runs:
        noise = r.suites.noise
        if noise is None:
            continue
        g = noise.groups
        if g.groups:
            group_rows.append([r.model, r.dataset, str(g.groups), plain(g.accuracy_original),
                               plain(g.accuracy_perturbed),
                               plain(g.pdr) + " " + _interval(g, "pdr"),
                               str(g.pdr_undefined_groups),
                               plain(g.cohens_h) + " " + _interval(g, "cohens_h"),
                               plain(g.h_over_pi), g.effect or "–"])
        for kind, m in noise.by_noise.items():
            noise_rows.append([r.model, r.dataset, kind, plain(m.accuracy_original),
                               plain(m.accuracy_perturbed), plain(m.pdr),
                               plain(m.cohens_h), _interval(m, "h"), m.effect])
    tables = []
    if group_rows:
        tables.append(("Natural noise: PDR and Cohen's h per question group (an original "
                       "and its perturbations), means over groups with 95% BCa intervals",
                       ["model", "dataset", "groups", "acc. original", "acc. perturbed",
                        "PDR [95% CI]", "PDR undefined", "h [95% CI]", "h/π", "effect"],
                       group_rows))
    if noise_rows:
        tables.append(("Natural noise by kind: pooled accuracies, Cohen's h with 95% BCa "
                       "intervals over questions",
                       ["model", "dataset", "noise", "acc. original", "acc. perturbed",
                        "PDR", "h", "95% CI", "effect"], noise_rows))
    return tables


def _shuffle_and_maqa_tables(runs: list[RobustnessEntry]) -> list[Table]:
    tables = []
    shuffle = [(r, r.suites.shuffle) for r in runs if r.suites.shuffle is not None]
    if shuffle:
        keys = ["questions", "shuffles", "accuracy", "test_retest_accuracy", "percent_drop"]
        tables.append(("Answer order: accuracy, test-retest and % drop",
                       ["model", "dataset", "questions", "shuffles", "accuracy",
                        "test-retest", "% drop"],
                       [[r.model, r.dataset, *[plain(getattr(m, k)) for k in keys]]
                        for r, m in shuffle]))
    maqa = [(r, r.suites.maqa) for r in runs if r.suites.maqa is not None]
    if maqa:
        keys = ["questions", "samples", "accuracy", "consistency", "precision", "recall",
                "f1", "verbalised_confidence", "auroc_verbalised", "auroc_max_softmax"]
        tables.append(("MAQA: consistency, confidence and multi-answer scores",
                       ["model", "dataset", *keys],
                       [[r.model, r.dataset, *[plain(getattr(m, k)) for k in keys]]
                        for r, m in maqa]))
    return tables


def _stability_tables(summary: Summary) -> list[Table]:
    """The judge's own stability: SI acceptance (single) and position swaps (pairwise)."""
    names = summary.display_names
    order = strategy_order({s.strategy for s in summary.judge_stability})
    stability = sorted(summary.judge_stability,
                       key=lambda s: (s.judge, order.index(s.strategy)))
    single = [s for s in stability if s.paradigm == "single"]
    pairwise = [s for s in stability if s.paradigm == "pairwise"]
    tables = []
    if single:
        tables.append(("Judge stability: acceptance of gold vs score-invariant answers",
                       ["judge", "strategy", "% gold accepted", "% SI accepted", "Cohen's h",
                        "effect"],
                       [[s.judge, names.get(s.strategy, s.strategy), percent(s.gold_accepted),
                         percent(s.si_accepted), plain(s.cohens_h), s.effect]
                        for s in single]))
    if pairwise:
        tables.append(("Judge stability: position-swap test-retest",
                       ["judge", "strategy", "pairs", "% gold chosen (gold first)",
                        "% gold chosen in both orders", "% drop"],
                       [[s.judge, names.get(s.strategy, s.strategy), str(s.pairs),
                         percent(s.gold_chosen_gold_first),
                         percent(s.gold_chosen_both_orders), plain(s.percent_drop)]
                        for s in pairwise]))
    return tables


def robustness_markdown(summary: Summary) -> list[str]:
    """The robustness runs' tables as Markdown sections."""
    parts = []
    for title, header, rows in robustness_tables(summary):
        parts += ["", f"## {md(title)}", "", markdown_table(header, rows)]
    return parts


def load_robustness(folder: str | Path) -> RobustnessEntry | None:
    """A robustness run's metrics, or None when the folder holds a judge run."""
    folder = Path(folder)
    spec_path = folder / "run.json"
    if not spec_path.exists():
        return None
    try:
        kind = json.loads(read_text(spec_path)).get("kind")
    except json.JSONDecodeError:
        raise InputError(f"{spec_path}: not valid JSON") from None
    if kind != "robustness":
        return None
    metrics = folder / "robustness.json"
    if not metrics.exists():
        raise InputError(f"{folder}: a robustness run without robustness.json. Fix: run "
                         "`fbi robustness run` into it again to finish it")
    try:
        results = RobustnessResults.model_validate_json(read_bytes(metrics))
    except ValidationError as error:
        raise InputError(f"{metrics}: not a robustness.json of this fbi "
                         f"({validation_summary(error)}). Fix: run `fbi robustness run` "
                         "into the folder again: its answers are kept and the metrics "
                         "written anew") from None
    return RobustnessEntry(folder=str(folder), **dict(results))
