"""LLMBar's layout (Zeng et al. 2024, "Evaluating Large Language Models at Evaluating
Instruction Following", §2): ``input``, ``output_1``, ``output_2`` and ``label`` (1 or 2,
the better output), one ``dataset.json`` a subset in a tree of folders; read as a
preference pair whose subset names the file's place in the tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fbi.datasets._layouts import RawRow, RowLayout, RowProblem, register_layout
from fbi.datasets._preference import preference_fields


@register_layout
class LLMBar(RowLayout):
    """A row of ``input``, ``output_1``, ``output_2`` and ``label``."""

    name = "llmbar"
    precedence = 30

    def detect(self, data: dict[str, Any]) -> bool:
        return "output_1" in data and "output_2" in data and "input" in data

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        data = dict(row.data)
        winner = str(data.pop("label", "")).strip()
        if winner not in ("1", "2"):
            raise RowProblem(f"label {winner!r}: LLMBar's label names the better output, "
                             "1 or 2", "correct the label")
        loser = "2" if winner == "1" else "1"
        # the container's name for the file's place in the tree, else the file's folder
        subset = row.defaults.get("_subset") or llmbar_subset(Path(row.file))
        return [preference_fields({
            "prompt": data.pop("input"), "chosen": data.pop(f"output_{winner}"),
            "rejected": data.pop(f"output_{loser}"), "subset": subset, **data})]


#: LLMBar publishes one ``dataset.json`` a subset, in a tree of folders
#: (``LLMBar/Natural``, ``LLMBar/Adversarial/Neighbor``, ...).
LLMBAR_FILE = "dataset.json"


def llmbar_subset(path: Path, root: Path | None = None) -> str:
    """An LLMBar file's subset: its folder's path below the nearest folder named
    ``LLMBar`` (``Natural``, ``Adversarial/Neighbor``: the same name whether the tree,
    a part of it or the one file is read); without one, below ``root``, the folder the
    user named; the file's own folder (or name) when that is all there is."""
    parents = path.parent.parts
    for depth in range(len(parents) - 1, -1, -1):
        if parents[depth].lower() == "llmbar":
            below = parents[depth + 1:]
            if below:
                return "/".join(below)
            break
    if path.name != LLMBAR_FILE:
        return path.stem
    if root is not None and path.parent != root:
        return path.parent.relative_to(root).as_posix()
    return path.parent.name or "all"
