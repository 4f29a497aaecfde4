"""A hunt's findings for people: terminal blocks and a markdown page (``hunt.md``), ranked
as ``hunt.json`` holds them, each with its interval, test and examples as word diffs."""

from __future__ import annotations

from pathlib import Path

from fbi.diffing import word_diff
from fbi.escaping import markdown_text
from fbi.findings import HuntFinding, HuntResult
from fbi.report._terminal import Block


def load_hunt(folder: str | Path) -> HuntResult:
    """A hunt folder's ``hunt.json``; a DatasetError-like InputError when unreadable."""
    from pydantic import ValidationError

    from fbi.errors import InputError

    path = Path(folder) / "hunt.json"
    try:
        return HuntResult.model_validate_json(path.read_text(encoding="utf-8"))
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
    """The hunt in one sentence: what it confirmed, of how many hypotheses, and the calls
    it spent where."""
    confirmed = [f for f in result.findings if f.confirmed]
    spent = (f"{result.calls} of {result.budget} calls ({result.search_calls} searching "
             f"{result.search_items} items, {result.confirmation_calls} confirming on "
             f"{result.held_out_items} held-out items)")
    if result.failed_calls:
        spent += f"; {result.failed_calls} calls failed and count nowhere"
    found = (f"{len(confirmed)} blind spot{'s' if len(confirmed) != 1 else ''} confirmed"
             if confirmed else "no blind spot confirmed")
    tested = (f"{len(result.findings)} candidate{'s' if len(result.findings) != 1 else ''} "
              f"of {result.hypotheses_tested} hypotheses tested; Holm-adjusted, "
              f"family-wise error {result.alpha:g}")
    return f"{result.judge}: {found} — {tested}; {spent}."


def hunt_blocks(result: HuntResult) -> list[Block]:
    """The findings table and, under it, each confirmed finding's first example."""
    blocks = [Block(text=hunt_summary(result))]
    if result.findings:
        rows = [[str(i), "yes" if f.confirmed else "no", f.description,
                 _percent(f.miss_rate), _interval(f), str(f.n), _percent(f.baseline_rate),
                 _p(f.p_adjusted)] for i, f in enumerate(result.findings, 1)]
        blocks.append(Block(title="Blind spots (held-out edits)",
                            header=["#", "confirmed", "finding", "missed", "95% CI", "n",
                                    "baseline", "p adj."], rows=rows))
    for i, finding in enumerate(result.findings, 1):
        if finding.confirmed and finding.examples:
            example = finding.examples[0]
            blocks.append(Block(text=f"#{i} {finding.name}, e.g. {example.instance_id} "
                                     f"({example.strategy}): {_changes(example)}"))
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
    if result.findings:
        lines += ["| # | confirmed | finding | missed | 95% CI | n | baseline | p adj. |",
                  "|---|---|---|---|---|---|---|---|"]
        for i, f in enumerate(result.findings, 1):
            lines.append(f"| {i} | {'yes' if f.confirmed else 'no'} | "
                         f"{markdown_text(f.description)} | {_percent(f.miss_rate)} | "
                         f"{_interval(f)} | {f.n} | {_percent(f.baseline_rate)} | "
                         f"{_p(f.p_adjusted)} |")
        lines.append("")
    for i, finding in enumerate(result.findings, 1):
        lines += [f"## {i}. {markdown_text(finding.description)}", "",
                  f"`hunt/{finding.name}` · operator {markdown_text(finding.operator)} · "
                  f"search: {_percent(finding.search_miss_rate)} of {finding.search_n} · "
                  f"unreadable replies among the misses: {finding.unreadable}", ""]
        for example in finding.examples:
            lines += [f"- `{markdown_text(example.instance_id)}` ({example.strategy}): "
                      f"{markdown_text(example.question)[:300]}", "",
                      # (two trailing spaces: a hard line break inside the quote)
                      *(f"  > {line}  " for line in _diff_lines(example)), ""]
    return "\n".join(lines) + "\n"
