"""A hunt's findings for people: terminal blocks and a markdown page (``hunt.md``), ranked
as ``hunt.json`` holds them, each with its interval, test and examples as word diffs."""

from __future__ import annotations

from pathlib import Path

from fbi.diffing import word_diff
from fbi.escaping import markdown_text
from fbi.files import read_text
from fbi.findings import HuntFinding, HuntResult
from fbi.report._terminal import Block


def load_hunt(folder: str | Path) -> HuntResult:
    """A hunt folder's ``hunt.json``; a DatasetError-like InputError when unreadable."""
    from pydantic import ValidationError

    from fbi.errors import InputError

    path = Path(folder) / "hunt.json"
    try:
        return HuntResult.model_validate_json(read_text(path))
    except (OSError, UnicodeDecodeError, ValidationError) as error:
        raise InputError(f"{path}: not a hunt's findings ({str(error).splitlines()[0]}); "
                         "run `fbi hunt` into that folder again") from None


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _interval(finding: HuntFinding) -> str:
    if finding.interval is None:
        return "n/a"
    low, high = finding.interval
    return f"{100 * low:.1f}–{100 * high:.1f}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value >= 1e-4 else "<0.0001"


def hunt_summary(result: HuntResult) -> str:
    """The hunt in one sentence: first how often the judge misses random edits when that
    is most of them, then what it confirmed, of how many candidates, and the calls it
    spent where."""
    confirmed = result.confirmed
    overall = result.overall
    missed = ""
    if overall is not None and overall.miss_rate is not None:
        missed = (f"random edits missed {_percent(overall.miss_rate)} "
                  f"[{_interval_of(overall.interval)}] of {overall.n}")
    # (the parts add up to the whole: the probe call before any judging is one of them)
    extra = [f"{n} {what}" for n, what in (
        (result.perturber_calls, "perturbing"), (result.describer_calls, "describing"))
        if n] + ["1 for the probe call"]
    spent = (f"{result.calls} of {result.budget} calls ({result.search_calls} searching "
             f"{result.search_items} items, {result.confirmation_calls} confirming on "
             f"{result.held_out_items} held-out items, {', '.join(extra)})")
    if result.edits_ran_out:
        spent += (f"; the search ended under its budget: the {result.search_items} items "
                  "held no more edits to try")
    if result.failed_calls:
        spent += f"; {result.failed_calls} calls failed and count nowhere"
    if result.unreadable_calls:
        spent += (f"; {result.unreadable_calls} replies about an edit were unreadable and "
                  "count as missed")
    found = (f"{len(confirmed)} blind spot{'s' if len(confirmed) != 1 else ''} confirmed"
             if confirmed else "no blind spot confirmed")
    tested = (f"{result.candidates} candidate{'s' if result.candidates != 1 else ''} "
              f"tested on held-out edits (Bonferroni, family-wise error {result.alpha:g}, "
              f"each at least {100 * result.margin:g} points above the baseline)")
    if result.mostly_unreadable:
        head = (f"{result.judge}: {result.unreadable_calls} of {result.probes} replies "
                "about an edit were unreadable — fbi could not read this judge's verdicts "
                "(see `fbi show` on its calls), so its miss rates are unreadable replies, "
                f"not blind spots; {found}")
    elif result.misses_most:
        head = (f"{result.judge} misses most edits everywhere: {missed}. Beyond that, "
                f"{found}")
    else:
        head = f"{result.judge}: {found}" + (f"; {missed}" if missed else "")
    return f"{head} — {tested}; {spent}."


def _interval_of(interval: list[float] | None) -> str:
    if interval is None:
        return "n/a"
    return f"{100 * interval[0]:.0f}–{100 * interval[1]:.0f}"


HEADER = ["#", "missed", "95% CI", "n", "baseline", "p adj."]


def _numbers(i: int, finding: HuntFinding) -> list[str]:
    return [str(i), _percent(finding.miss_rate), _interval(finding), str(finding.n),
            _percent(finding.baseline_rate), _p(finding.p_adjusted)]


def hunt_blocks(result: HuntResult) -> list[Block]:
    """The summary, the confirmed blind spots' numbers (a table that fits 80 columns)
    with each description and first example under it, then the candidates that were not
    confirmed."""
    blocks = [Block(text=hunt_summary(result),
                    alert=result.misses_most or result.mostly_unreadable)]
    confirmed = result.confirmed
    if confirmed:
        blocks.append(Block(title="Blind spots found (held-out edits)", header=HEADER,
                            rows=[_numbers(i, f) for i, f in enumerate(confirmed, 1)]))
        for i, finding in enumerate(confirmed, 1):
            text = f"#{i} {finding.title}"
            if finding.also_seen_as:
                text += f"; also seen as: {'; '.join(finding.also_seen_as)}"
            if finding.examples:
                example = finding.examples[0]
                text += f" — e.g. {example.instance_id}: {_changes(example)}"
            blocks.append(Block(text=text))
    others = [f for f in result.findings if not f.confirmed]
    if others:
        blocks.append(Block(title="Candidates not confirmed", header=HEADER,
                            rows=[_numbers(i, f) for i, f in
                                  enumerate(others, len(confirmed) + 1)]))
        blocks += [Block(text=f"#{i} {f.title}" + (
            f" (merged into {f.merged_into})" if f.merged_into else ""))
            for i, f in enumerate(others, len(confirmed) + 1)]
    return blocks


def _changes(example) -> str:
    """The example's changes in one line: «before» → «after»."""
    parts, pending = [], ""
    for op, text in word_diff(example.gold_answer, example.edited_answer):
        if op == "delete":
            pending = text
        elif op == "insert":
            parts.append(f"«{_short(pending)}» → «{_short(text)}»")
            pending = ""
        elif pending:
            parts.append(f"«{_short(pending)}» removed")
            pending = ""
    if pending:
        parts.append(f"«{_short(pending)}» removed")
    return "; ".join(parts[:3]) + (" …" if len(parts) > 3 else "")


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _escaped(text: str) -> str:
    """``text`` escaped for Markdown, its edge spaces kept (one each)."""
    inner = markdown_text(text)
    if not inner:
        return " " if text else ""
    return (" " if text[:1].isspace() else "") + inner + (" " if text[-1:].isspace() else "")


def _diff_lines(example) -> list[str]:
    """The edited answer against the gold, line by line: deletions ~~struck~~,
    insertions **bold**, every piece escaped."""
    lines, current = [], []
    for op, text in word_diff(example.gold_answer, example.edited_answer):
        for index, piece in enumerate(text.split("\n")):
            if index:  # a line break inside the segment
                lines.append("".join(current).strip())
                current = []
            if not piece.strip():
                current.append(" " if piece else "")
            elif op == "equal":
                current.append(_escaped(piece))
            else:
                mark = "~~" if op == "delete" else "**"
                current.append(f"{mark}{markdown_text(piece)}{mark}")
    lines.append("".join(current).strip())
    return lines


def hunt_markdown(result: HuntResult) -> str:
    """``hunt.md``: the summary, the findings table, then every finding's examples as word
    diffs (deleted ~~struck~~, inserted **bold**); every string from the dataset or the
    judge escaped."""
    lines = ["# Blind-spot hunt", "", markdown_text(hunt_summary(result)), "",
             f"Baseline: {markdown_text(result.baseline)}.", ""]
    for title, findings in (("Blind spots found", result.confirmed),
                            ("Candidates not confirmed",
                             [f for f in result.findings if not f.confirmed])):
        if not findings:
            continue
        lines += [f"## {title}", "",
                  "| # | finding | status | missed | 95% CI | n | baseline | p adj. |",
                  "|---|---|---|---|---|---|---|---|"]
        for f in findings:
            i = result.findings.index(f) + 1
            lines.append(f"| {i} | {markdown_text(f.title)} | {f.status} | "
                         f"{_percent(f.miss_rate)} | {_interval(f)} | {f.n} | "
                         f"{_percent(f.baseline_rate)} | {_p(f.p_adjusted)} |")
        lines.append("")
    for i, finding in enumerate(result.findings, 1):
        if not finding.confirmed:
            continue
        lines += [f"### {i}. {markdown_text(finding.title)}", "",
                  f"`hunt/{finding.name}` · predicates "
                  f"{markdown_text(', '.join(finding.predicates))} · search: "
                  f"{_percent(finding.search_miss_rate)} of {finding.search_n} · unreadable "
                  f"replies among the misses: {finding.unreadable}", ""]
        if finding.also_seen_as:
            lines += [f"Also seen as: {markdown_text('; '.join(finding.also_seen_as))}.",
                      ""]
        for example in finding.examples:
            order = f", {example.order}" if example.order else ""
            lines += [f"- `{markdown_text(example.instance_id)}` ({example.strategy}"
                      f"{order}): {markdown_text(example.question)[:300]}", "",
                      # (two trailing spaces: a hard line break inside the quote)
                      *(f"  > {line}  " for line in _diff_lines(example)), ""]
    return "\n".join(lines) + "\n"
