"""RewardBench 2's best-of-N rows (Malik et al. 2025, arXiv 2506.01937, §3): a prompt,
``chosen`` and ``rejected`` as lists of answers; each chosen × rejected pair is a
preference instance, grouped by the row."""

from __future__ import annotations

from typing import Any

from fbi.datasets._instances import conversation_row, is_conversation
from fbi.datasets._layouts import RawRow, RowLayout, RowProblem, register_layout, whole_number
from fbi.datasets._preference import preference_fields
from fbi.records import content_id


@register_layout
class BestOfN(RowLayout):
    """A preference row whose ``chosen`` or ``rejected`` is a list of answers (not a
    conversation)."""

    name = "best-of-n"
    precedence = 20

    def detect(self, data: dict[str, Any]) -> bool:
        return "chosen" in data and "rejected" in data and any(
            isinstance(data[side], list) and not is_conversation(data[side])
            for side in ("chosen", "rejected"))

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        return best_of_n_pairs(preference_fields(conversation_row(row.data)), row.typed)


#: The most answers a best-of-N row may list on each side (RewardBench 2's Ties rows
#: have up to a few dozen); more is refused, not expanded into a quadratic number of pairs.
MAX_BEST_OF_N = 64


#: RewardBench 2's columns that describe a row and are not kept: the models behind the
#: answers (a list, one per answer) and free-form metadata.
_BEST_OF_N_METADATA = ("models", "additional_metadata")


def best_of_n_pairs(data: dict[str, Any], typed: bool = True) -> list[dict[str, Any]]:
    """RewardBench 2's layout (Malik et al. 2025, arXiv 2506.01937, §3): a prompt,
    ``chosen`` and ``rejected`` as lists of answers, ``num_correct`` (the chosen count)
    optional. Each chosen × rejected pair is a preference instance (id ``ROW:cI-rJ``,
    1-based), grouped by the row (provenance ``group``, ``chosen_index``,
    ``rejected_index``, ``chosen_count``, ``rejected_count``), so every strategy judges
    it and `fbi.metrics.best_of_n` ranks the row: right when every chosen answer
    outranks every rejected one."""
    chosen, rejected = data.pop("gold_answer"), data.pop("perturbed_answer")
    for name, answers in (("chosen", chosen), ("rejected", rejected)):
        if not isinstance(answers, list) or not answers:
            raise RowProblem(f"'{name}' must be a non-empty list of answers when the other "
                             "is a list (RewardBench 2's layout)",
                             f"write {name} as [\"answer\", ...]")
        if len(answers) > MAX_BEST_OF_N:
            raise RowProblem(f"'{name}' lists {len(answers)} answers, more than "
                             f"{MAX_BEST_OF_N}", "split the row or shorten the list")
        for number, answer in enumerate(answers, start=1):
            if not isinstance(answer, str) or not answer.strip():
                raise RowProblem(f"'{name}' item {number} is not a non-empty text",
                                 "give every answer as text")
    for name, expected in (("num_correct", len(chosen)), ("num_rejected", len(rejected)),
                           ("total_completions", len(chosen) + len(rejected))):
        count = whole_number(data.pop(name, None), name, typed)  # checked, not trusted
        if count is not None and count != expected:
            raise RowProblem(f"{name} {count!r} but the row lists {expected} such answers",
                             f"correct {name}, or leave it out")
    for name in _BEST_OF_N_METADATA:
        data.pop(name, None)
    group = data.get("id")
    if group in (None, ""):
        group = content_id(data["category"], str(data.get("instruction")), *(
            "\x1e".join(answers) for answers in (chosen, rejected)))
    if isinstance(group, bool) or not isinstance(group, str | int):
        raise RowProblem("'id' must be text or a whole number", "write the id as text")
    group = str(group).strip()
    return [{**data, "id": f"{group}:c{i + 1}-r{j + 1}", "gold_answer": good,
             "perturbed_answer": bad, "group": group, "chosen_index": i,
             "rejected_index": j, "chosen_count": len(chosen),
             "rejected_count": len(rejected), "original_id": group}
            for i, good in enumerate(chosen) for j, bad in enumerate(rejected)]
