"""The annotators' agreement as the terminal shows it (`fbi annotate agreement`,
`fbi label --agreement`)."""

from __future__ import annotations

from rich.table import Table

from fbi.cli._console import console


def print_agreement(report, title: str) -> None:
    """Overall and per category, then Cohen's κ and a confusion matrix per pair."""
    overall = report.overall
    table = Table(title=title)
    for column in ("scope", "items", "% agreement", "Fleiss' κ", "Krippendorff's α"):
        table.add_column(column, justify="left" if column == "scope" else "right")

    def fmt(value, items: int = 2) -> str:
        # a chance-corrected coefficient over one item is -1 or 1 by arithmetic alone
        return "–" if value is None else "n/a" if items < 2 else f"{value:.3f}"

    def percent(value) -> str:
        return "–" if value is None else f"{100 * value:.1f}"

    for scope, row in [("all", overall), *sorted(report.categories.items())]:
        table.add_row(scope, str(row.items), percent(row.percent_agreement),
                      fmt(row.fleiss_kappa, row.items), fmt(row.krippendorff_alpha, row.items))
    table.caption = "n/a: a coefficient over fewer than two items says nothing"
    console.print(table)
    for pair in report.pairs:
        console.print(f"Cohen's κ {pair.a} × {pair.b}: "
                      f"{fmt(pair.cohen_kappa, pair.items)} over {pair.items} items")
        matrix = Table(title=f"confusion: rows {pair.a}, columns {pair.b}")
        matrix.add_column("")
        for label in pair.labels:
            matrix.add_column(label, justify="right")
        for label, counts in zip(pair.labels, pair.confusion, strict=True):
            matrix.add_row(label, *(str(n) for n in counts))
        console.print(matrix)
