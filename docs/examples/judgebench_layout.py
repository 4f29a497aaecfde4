"""A new dataset layout, whole: JudgeBench's rows (Tan et al. 2024, "JudgeBench: A
Benchmark for Evaluating LLM-based Judges", §3) — ``pair_id``, ``source``, ``question``,
``response_model``, ``response_A``, ``response_B`` and ``label`` (``A>B`` or ``B>A``, the
objectively correct response first). Each row is a preference pair: the correct response
plays gold, the other perturbed, the source is the subset.

This file is the example of docs/contributing.md, and it runs: tests/test_sources.py reads
a JudgeBench file with it, a bad label refused with its line.
"""

from __future__ import annotations

from typing import Any

from fbi.datasets import RawRow, RowLayout, RowProblem, register_layout

COLUMNS = {"question", "response_A", "response_B", "label"}


@register_layout
class JudgeBench(RowLayout):
    """A row of JudgeBench's columns."""

    name = "judgebench"

    def detect(self, data: dict[str, Any]) -> bool:
        return data.keys() >= COLUMNS

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        data = row.data
        label = str(data["label"]).strip()
        if label not in ("A>B", "B>A"):
            raise RowProblem(f"label {label!r}: JudgeBench's label is A>B or B>A",
                             "correct the label")
        better, worse = ("response_A", "response_B") if label == "A>B" else \
            ("response_B", "response_A")
        return [{"id": data.get("pair_id"), "instruction": data["question"],
                 "gold_answer": data[better], "perturbed_answer": data[worse],
                 "category": f"preference/{data.get('source') or 'all'}",
                 "ability": "preference", "gold_model": data.get("response_model") or ""}]
