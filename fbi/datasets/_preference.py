"""Preference sets as judge instances: RewardBench's layout (prompt, chosen, rejected,
subset, chosen_model, rejected_model, id) and whole conversations in ``chosen`` and
``rejected`` (HH-RLHF's, UltraFeedback-binarized's). The chosen answer plays gold, the
rejected one perturbed, the subset is the category ``preference/SUBSET`` (Lambert et al.
2024, RewardBench §3)."""

from __future__ import annotations

from typing import Any

from fbi.datasets._instances import conversation_row
from fbi.datasets._layouts import RawRow, RowLayout, register_layout
from fbi.errors import InputError
from fbi.taxonomy import PREFERENCE_PREFIX, Ability

#: A preference dataset's fields (RewardBench's names; ``category`` reads ``subset``).
PREFERENCE_FIELDS = ("prompt", "chosen", "rejected", "category", "id")


@register_layout
class PreferencePairs(RowLayout):
    """A row with ``chosen`` and ``rejected`` answers (or conversations)."""

    name = "preference"
    precedence = 10

    def detect(self, data: dict[str, Any]) -> bool:
        return "chosen" in data or "rejected" in data

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        return [preference_fields(conversation_row(row.data))]


def preference_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A preference row (prompt, chosen, rejected, subset) in fbi's fields; a row
    without both answers is returned as it is (its missing column is said later)."""
    if "chosen" not in data or "rejected" not in data:
        return data
    data = dict(data)
    subset = data.pop("subset", None) or data.pop("category", None) or "all"
    row = {"instruction": data.pop("prompt", None), "gold_answer": data.pop("chosen"),
           "perturbed_answer": data.pop("rejected"),
           "category": f"{PREFERENCE_PREFIX}{str(subset).strip()}",
           "ability": Ability.PREFERENCE.value}
    if data.get("chosen_model"):
        row["gold_model"] = data.pop("chosen_model")
    if data.get("rejected_model"):
        row["generator"] = data.pop("rejected_model")
    data.pop("chosen_model", None)
    data.pop("rejected_model", None)
    return {**data, **row}


def parse_columns(text: str | None) -> dict[str, str]:
    """``prompt=question,chosen=good,rejected=bad,category=kind`` → {field: column}: the
    columns of a preference dataset under other names (``--columns``)."""
    if not text:
        return {}
    mapping = {}
    for part in text.split(","):
        field_name, sep, column = (p.strip() for p in part.partition("="))
        if not sep or not column or field_name not in PREFERENCE_FIELDS:
            raise InputError(f"--columns {text!r}: give FIELD=COLUMN pairs separated by "
                             f"commas, FIELD one of {', '.join(PREFERENCE_FIELDS)} (e.g. "
                             "prompt=question,chosen=good,rejected=bad)")
        mapping[field_name] = column
    return mapping
