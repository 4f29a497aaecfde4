"""The hunt's probes as a table: one row per judged probe, one boolean column per
predicate, and what the search and the confirmation need of it (issue 49).

Only these fields are kept, in arrays that grow by doubling: a row is a few hundred
bytes whatever the answers' length, so a 30,000-call hunt holds megabytes, not the
gigabytes its edits and replies would take. The edits themselves are in ``edits.jsonl``
(the row keeps its line's byte offset) and the replies in ``judgments.jsonl``; the few
shown as examples are read back at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from fbi.hunt._predicates import EditView, Predicate


class Population(IntEnum):
    """What a probe tests."""

    ERROR = 0
    """An error edit: missed when the judge does not penalise it (FBI §4)."""
    SWAY = 1
    """A correct answer with text added (a manipulation alone) or rewritten harmlessly (a
    score-invariant rewrite, its baseline): "missed" when the judge rates it *above* the
    gold answer — rewarded for the text."""


class Phase(IntEnum):
    """Where a probe was made."""

    EXPLORE = 0
    """The search's random edits (any operator, any or no placement)."""
    TARGET = 1
    """The search's edits made to fit a suspicion."""
    BASELINE = 2
    """Held out: random edits, the baseline every candidate is tested against."""
    CANDIDATE = 3
    """Held out: edits made to fit a candidate (``candidate`` says which)."""


@dataclass(frozen=True)
class Row:
    """One judged probe, as the table keeps it."""

    values: np.ndarray
    """The predicates' answers."""
    missed: bool
    population: Population
    phase: Phase
    candidate: int
    """The candidate a CANDIDATE probe was made for (−1 otherwise)."""
    operator: str
    """Its operator's name (the table numbers them)."""
    edit_offset: int
    """Byte offset of its edit's line in ``edits.jsonl``."""
    calls: tuple[str, ...]
    """Its call ids, the edit's first."""
    unreadable: bool
    """The judge's reply about the edit could not be read (counted as missed)."""
    size: int
    """Characters the edit changed (for ranking examples: small edits show a blind spot
    plainly)."""
    strategy: int
    """Index of its strategy in the hunt's."""
    order: int
    """Pairwise: 1 the edit shown first, 2 second; 0 otherwise."""


NUMBERS = 9  # the integer fields of a row


class ProbeTable:
    """Every judged probe (see the module docstring)."""

    def __init__(self, predicates: list[Predicate]):
        self.predicates = predicates
        self.names = [p.name for p in predicates]
        self.column = {name: i for i, name in enumerate(self.names)}
        self.size = 0
        self._capacity = 256
        self._X = np.zeros((self._capacity, len(predicates)), dtype=bool)
        self._numbers = np.zeros((self._capacity, NUMBERS), dtype=np.int64)
        self.calls: list[tuple[str, ...]] = []
        self.operator_names: list[str] = []
        """Each operator a row has had, numbered as they first came."""
        self._operator_index: dict[str, int] = {}

    def add_predicate(self, predicate: Predicate) -> None:
        """A predicate that came after rows were added (the describer's operator): false
        for them, as it is for every edit it did not make."""
        self.predicates.append(predicate)
        self.names.append(predicate.name)
        self.column[predicate.name] = len(self.names) - 1
        self._X = np.concatenate([self._X, np.zeros((self._capacity, 1), dtype=bool)],
                                 axis=1)

    def values(self, view: EditView) -> np.ndarray:
        """Each predicate's answer for ``view``."""
        return np.fromiter((bool(p.test(view)) for p in self.predicates), dtype=bool,
                           count=len(self.predicates))

    def add(self, row: Row) -> None:
        if self.size == self._capacity:
            self._capacity *= 2
            self._X = np.resize(self._X, (self._capacity, len(self.predicates)))
            self._numbers = np.resize(self._numbers, (self._capacity, NUMBERS))
        if row.operator not in self._operator_index:
            self._operator_index[row.operator] = len(self.operator_names)
            self.operator_names.append(row.operator)
        self._X[self.size] = row.values
        self._numbers[self.size] = (row.missed, row.population, row.phase, row.candidate,
                                    self._operator_index[row.operator], row.edit_offset,
                                    row.size * 2 + row.unreadable, row.strategy, row.order)
        self.calls.append(row.calls)
        self.size += 1

    # -- columns -------------------------------------------------------------------

    @property
    def X(self) -> np.ndarray:
        return self._X[:self.size]

    def _number(self, index: int) -> np.ndarray:
        return self._numbers[:self.size, index]

    @property
    def missed(self) -> np.ndarray:
        return self._number(0).astype(bool)

    @property
    def population(self) -> np.ndarray:
        return self._number(1)

    @property
    def phase(self) -> np.ndarray:
        return self._number(2)

    @property
    def candidate(self) -> np.ndarray:
        return self._number(3)

    @property
    def operator(self) -> np.ndarray:
        return self._number(4)

    @property
    def edit_offset(self) -> np.ndarray:
        return self._number(5)

    @property
    def unreadable(self) -> np.ndarray:
        return (self._number(6) % 2).astype(bool)

    @property
    def change_size(self) -> np.ndarray:
        return self._number(6) // 2

    @property
    def strategy(self) -> np.ndarray:
        return self._number(7)

    @property
    def order(self) -> np.ndarray:
        return self._number(8)

    def rows(self, population: Population, phases: tuple[Phase, ...]) -> np.ndarray:
        """A mask of the rows of ``population`` made in ``phases``."""
        return (self.population == population) & np.isin(self.phase, phases)

    def operators_of(self, description: tuple[str, ...], population: Population,
                     phases: tuple[Phase, ...] | None = None) -> list[str]:
        """The operators of the rows of ``population`` (made in ``phases``, else any)
        that ``description`` covers, one per row."""
        mask = self.covered(description) & (self.population == population)
        if phases is not None:
            mask &= np.isin(self.phase, phases)
        return [self.operator_names[i] for i in self.operator[mask]]

    def covered(self, description: tuple[str, ...]) -> np.ndarray:
        """A mask of the rows every predicate of ``description`` holds for."""
        mask = np.ones(self.size, dtype=bool)
        for name in description:
            mask &= self.X[:, self.column[name]]
        return mask
