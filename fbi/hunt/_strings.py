"""`fbi hunt --search strings`: short strings that make this judge accept wrong answers
(issue 65).

A black-box search in the hunt's own terms. Each item of the search and of the held-out
half gets one **wrong answer**: the first of fbi's error rules (in an order seeded by the
item) that can edit its gold answer. A **string operator** (``string/K``) puts a string
before every wrong answer, after it, or in its place (the answer is the string alone, as
a master key is); the edits are made when drawn (`StringPool`), so hundreds of strings
over thousands of items cost no memory. ``string/0`` adds nothing: the plain wrong
answers, the rest's reference.

The search starts from a vocabulary (`fbi.attack_texts.AttackTexts.flip_vocabulary`:
verdicts, scores, ticks, reasoning openers, claims and orders, the master keys, the
manipulations' shorter texts), each string in each position, explored like any operator
and tested as a suspicion by the adaptive search. After every round it **grows**
(`StringSearch.grow`, an evolutionary step): the strings the judge accepted most often
among the search's probes (posterior mean of a Beta(1, 1) prior, at least
``MIN_PROBES`` probes) beget offspring — two of them joined, a word of the vocabulary
added, a word dropped (the shortest string that still flips) — which the search proposes
as suspicions of their own. Everything is a function of the seed and the judged probes,
so a resumed hunt grows the same strings.

What is confirmed is what any hunt confirms: the candidates the covering carries to the
held-out half (its items' wrong answers with the string), tested against the held-out
baseline (random string operators' edits, the plain wrong answers among them) with the
margin test and Bonferroni over the candidates. A finding's miss rate is the string's
false-positive rate: wrong answers carrying it that the judge did not grade below the
gold answer.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from fbi.attack_texts import attack_texts
from fbi.hunt._operators import STRING, Edit, Operator, error_operators, replaces_whole
from fbi.hunt._table import Phase, Population, ProbeTable
from fbi.perturb.rules import Declined
from fbi.records import GoldItem

Position = Literal["before", "after", "alone"]
POSITIONS: tuple[Position, ...] = ("before", "after", "alone")
#: Probes a string needs among the search's before it can beget offspring.
MIN_PROBES = 2
#: Parents per round, offspring per parent, and strings a search may hold at most.
PARENTS = 4
OFFSPRING = 3
MAX_STRINGS = 400


@dataclass(frozen=True)
class Flip:
    """A string and where it goes."""

    text: str
    position: Position

    def apply(self, wrong: str) -> str:
        if self.position == "alone":
            return self.text
        if not self.text:
            return wrong
        return f"{self.text}\n\n{wrong}" if self.position == "before" else \
            f"{wrong}\n\n{self.text}"

    @property
    def phrase(self) -> str:
        """How a finding says it."""
        shown = repr(self.text)
        if self.position == "alone":
            return f"answers that are only {shown}"
        if not self.text:
            return "wrong answers with nothing added"
        return f"wrong answers with {shown} put {self.position} them"


def wrong_answers(items: Sequence[GoldItem], seed: int) -> dict[str, str]:
    """One wrong answer per item (see the module docstring); an item no rule can edit
    has none."""
    rules = [e for e in error_operators() if not replaces_whole(e)]
    wrong = {}
    for item in items:
        order = sorted(rules, key=lambda r: hashlib.sha256(
            f"{seed}:{item.id}:{r}".encode()).hexdigest())
        for rule in order:
            try:
                wrong[item.id] = Operator((rule,)).apply(item, seed).edited
                break
            except Declined:
                continue
    return wrong


class StringPool(Sequence[Edit]):
    """A string operator's edits, one per item with a wrong answer, made when asked."""

    def __init__(self, name: str, flip: Flip, items: dict[str, GoldItem],
                 wrong: dict[str, str]):
        self.name, self.flip = name, flip
        self.items, self.wrong = items, wrong
        self.ids = [i for i in items if i in wrong]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.edit_for(self.ids[index])

    def __iter__(self) -> Iterator[Edit]:
        return (self.edit_for(i) for i in self.ids)

    def edit_for(self, item_id: str) -> Edit:
        item = self.items[item_id]
        return Edit(item, Operator((self.name,)), self.flip.apply(self.wrong[item_id]), 0,
                    None, self.flip.phrase, f"hunt:{self.name}")


class StringSearch:
    """The strings of one hunt: the vocabulary's, then the offspring of each round."""

    def __init__(self, items: Sequence[GoldItem], seed: int):
        self.seed = seed
        self.items = {item.id: item for item in items}
        self.wrong = wrong_answers(items, seed)
        self.vocabulary = attack_texts().flip_vocabulary
        self.flips: list[Flip] = [Flip("", "before")]
        self.flips += [Flip(text, position) for text in self.vocabulary
                       for position in POSITIONS]
        self.rounds = 0

    @staticmethod
    def name(index: int) -> str:
        return f"{STRING}{index}"

    def pools(self, start: int = 0) -> dict[str, StringPool]:
        """The string operators from the ``start``-th on, as pools of edits."""
        return {self.name(k): StringPool(self.name(k), flip, self.items, self.wrong)
                for k, flip in enumerate(self.flips) if k >= start}

    def phrases(self, start: int = 0) -> dict[str, str]:
        return {self.name(k): flip.phrase for k, flip in enumerate(self.flips) if k >= start}

    def grow(self, table: ProbeTable) -> tuple[list[str], list[str]]:
        """One evolutionary step from the search's probes so far: the parents' operator
        names (the search tests them as suspicions) and their offspring's (appended to
        ``flips``)."""
        self.rounds += 1
        start = len(self.flips)
        search = np.isin(table.phase, (Phase.EXPLORE, Phase.TARGET)) & \
            (table.population == Population.ERROR)
        ranked = []
        for k, flip in enumerate(self.flips):
            column = table.column.get(f"op:{self.name(k)}")
            if column is None or not flip.text:
                continue
            rows = search & table.X[:, column]
            n, misses = int(rows.sum()), int(table.missed[rows].sum())
            if n >= MIN_PROBES:
                ranked.append(((1 + misses) / (2 + n), -k, k))
        chosen = [k for _, _, k in sorted(ranked, reverse=True)[:PARENTS]]
        parents = [self.flips[k] for k in chosen]
        rng = random.Random(f"hunt-strings:{self.seed}:{self.rounds}")
        known = set(self.flips)
        for parent in parents:
            children = [Flip(f"{parent.text} {rng.choice(self.vocabulary)}".strip(),
                             parent.position)]
            other = rng.choice(parents)
            if other != parent:
                children.append(Flip(f"{parent.text} {other.text}", parent.position))
            words = parent.text.split()
            if len(words) > 1:
                drop = rng.randrange(len(words))
                children.append(Flip(" ".join(words[:drop] + words[drop + 1:]),
                                     parent.position))
            for child in children[:OFFSPRING]:
                if child.text and child not in known and len(child.text) <= 200 and \
                        len(self.flips) < MAX_STRINGS:
                    known.add(child)
                    self.flips.append(child)
        return [self.name(k) for k in chosen], [self.name(k) for k in
                                                range(start, len(self.flips))]
