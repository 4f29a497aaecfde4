"""An MT-Bench question file (Zheng et al. 2023, "Judging LLM-as-a-Judge", §3:
``question_id``, ``turns``, ``reference``): it holds questions and reference answers, no
answer to judge, so a row of it is refused with what to do instead (perturb its
reference answers; `fbi perturb` reads the file as gold items)."""

from __future__ import annotations

from typing import Any

from fbi.datasets._layouts import RawRow, RowLayout, RowProblem, register_layout


@register_layout
class MtBenchQuestions(RowLayout):
    """A row of ``question_id`` and ``turns``."""

    name = "mt-bench"
    precedence = 40

    def detect(self, data: dict[str, Any]) -> bool:
        return "question_id" in data and "turns" in data

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        raise RowProblem("an MT-Bench question (question_id, turns): it holds no answers to "
                         "judge", "make perturbations of its reference answers with fbi "
                         "perturb --dataset FILE, then judge the vetted queue",
                         whole_file=True)
