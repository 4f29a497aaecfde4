"""How a report writes a value into a table cell (terminal, Markdown, HTML alike)."""

from __future__ import annotations

from fbi.escaping import markdown_text as md


def percent(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.1f}"



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
