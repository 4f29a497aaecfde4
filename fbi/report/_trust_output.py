"""`fbi trust`'s output: its terminal blocks and ``trust.json``."""

from __future__ import annotations

from pathlib import Path

from fbi.outputs import claim_folder, mark_written, write_atomically
from fbi.report._terminal import Block
from fbi.trust import Estimate, TrustReport

TRUST_FILE = "trust.json"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _interval(interval: Estimate | None) -> str:
    if interval is None or interval.value is None:
        return f"– ({interval.note})" if interval is not None and interval.note else "–"
    if interval.low is None:
        return f"{interval.value:.3f}"
    shown = f"{interval.value:.3f} [{interval.low:.3f}–{interval.high:.3f}]"
    # a note beside a value says what it rests on (an interval clipped whole, issue 53)
    return f"{shown} ({interval.note})" if interval.note else shown


#: Why the bound at the chosen threshold is shown apart from what is certified.
BOUND_NOTE = ("* 1 − R⁺ at the chosen threshold describes the calibration items, and is "
              "no guarantee: the threshold was chosen by the same data (issue 53). What "
              "is certified, with probability at least 1 − δ, is agreement ≥ the target.")


def labels_worth(estimate) -> str:
    """What the labels are worth with the judge; "no gain" when PPI++ gave it λ = 0."""
    if estimate.effective_labels is None:
        return "–"
    return f"{estimate.effective_labels:.0f}" + (" (no gain)" if estimate.ppi_lambda == 0
                                                 else "")


def trust_blocks(report: TrustReport) -> list[Block]:
    """The report as sentences and tables for a terminal."""
    blocks = [Block(text=report.split)]
    rows = []
    for r in report.results:
        rows.append([r.judge, r.strategy, r.confidence, "yes" if r.certified else "no",
                     "–" if r.threshold is None else f"{r.threshold:.3f}",
                     _share(r.coverage), _share(r.agreement_lower_bound),
                     str(r.n_calibration), _share(r.test_agreement),
                     _share(r.cost_saved) if r.stages else "–"])
    blocks.append(Block(
        title=f"Selective judging: agreement ≥ {100 * report.results[0].target:.0f}% with "
              f"people, δ = {report.results[0].delta:g}",
        header=["judge", "strategy", "confidence", "certified", "threshold", "coverage",
                "bound at threshold*", "n cal", "test agreement", "cost saved"],
        rows=rows))
    blocks.append(Block(text=BOUND_NOTE))
    blocks += [Block(text=r.sentence, alert=not r.certified) for r in report.results]
    for r in report.results:
        if r.stages:
            blocks.append(Block(
                title=f"{r.judge} under {r.strategy}", header=[
                    "judge", "certified", "threshold", "bound at threshold*", "takes",
                    "cost / item"],
                rows=[[s.judge, "yes" if s.certified else "no",
                       "–" if s.threshold is None else f"{s.threshold:.3f}",
                       _share(s.agreement_lower_bound), _share(s.share),
                       "–" if s.cost_per_item is None else f"${s.cost_per_item:.5f}"]
                      for s in r.stages]))
    if report.estimates:
        blocks.append(Block(
            title="Estimates over every judged item, corrected by the human labels (95%)",
            header=["judge", "strategy", "quantity", "judge alone", "people alone",
                    "PPI++", "labels worth", "plug-in"],
            rows=[[e.judge, e.strategy, e.quantity, _interval(e.judge_only),
                   _interval(e.human_only), _interval(e.ppi),
                   labels_worth(e),
                   _interval(e.plug_in) if e.plug_in is not None else "–"]
                  for e in report.estimates]))
    if report.plan:
        blocks.append(Block(
            title="Labelling plan: human labels needed (at the current rates)",
            header=["goal", "where", "labelled", "needed", "more"],
            rows=[[p.goal, p.where, str(p.labelled),
                   "unreachable" if p.needed is None else str(p.needed),
                   "–" if p.more is None else str(p.more)] for p in report.plan]))
    blocks += [Block(text=f"note: {note}") for note in report.notes]
    return blocks


def write_trust(report: TrustReport, output: str | Path, force: bool = False) -> Path:
    """Write ``trust.json`` into ``output`` (a folder fbi's, or new, unless ``force``)."""
    output = Path(output)
    theirs = claim_folder(output, [TRUST_FILE], force)
    output.mkdir(parents=True, exist_ok=True)
    path = output / TRUST_FILE
    write_atomically(path, report.model_dump_json(indent=1) + "\n")
    mark_written(output, [path], theirs)
    return path
