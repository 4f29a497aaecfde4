"""How a report writes a value into a table cell (terminal, Markdown, HTML alike)."""

from __future__ import annotations

from fbi.escaping import markdown_text as md


def percent(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.1f}"


def percent_with_interval(rate: float | None, low: float | None, high: float | None
                          ) -> str:
    """``12.5 [8.1–18.0]``; a dash for no rate (nothing readable was judged)."""
    if rate is None:
        return "—"
    if low is None or high is None:
        return f"{100 * rate:.1f}"
    return f"{100 * rate:.1f} [{100 * low:.1f}–{100 * high:.1f}]"



def plain(value) -> str:
    """A figure as it is: floats to three places, None as a dash."""
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown_table(header: list[str], rows: list[list]) -> str:
    """Every cell escaped (labels, names and texts come from outside)."""
    lines = ["| " + " | ".join(md(cell) for cell in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
