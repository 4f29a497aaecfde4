"""The adaptive search: where the next round's probes go, and which descriptions are
carried to confirmation (issues 40 and 49).

Each round, half of the probes *explore* — a random root, placed at a random place half
of the time (`fbi.hunt._space`) — so a blind spot nobody suspected can still turn up; the
other half *test suspicions*. The suspicions are the sequential covering of the search's
probes so far ([`cover`][fbi.hunt._discovery.cover]): the description best supported as
missed more often than the rest, then the best among the probes it does not explain,
and so on. A suspicion is probed by Thompson sampling from the Beta posterior of its miss
rate among the probes no earlier suspicion explains (Thompson 1933; Russo et al., "A
Tutorial on Thompson Sampling", 2018), with edits *made to fit it*: its operator, its
place, its strategy and answer order. A suspicion whose evidence is overwhelming
(``ESTABLISHED_P`` over ``ESTABLISHED_N`` probes) is *established*: it gets no more
probes, and exploring edits it would cover are drawn again, so the budget goes to the
judge's quieter blind spots instead of the loudest.

At the end the same covering, at a stricter threshold, gives at most ``MAX_CANDIDATES``
candidates, in the order they were found: that order is the confirmation's.

``adaptive=False`` is the grid the search is measured against: every probe a random edit
(random roots, random places), nothing established and drawn again, with the same
candidates and confirmation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from fbi.hunt._discovery import Scored, cover, scored
from fbi.hunt._table import Phase, Population, ProbeTable

#: The share of a round's probes that explore (the rest test suspicions).
EXPLORE_SHARE = 0.5
#: A suspicion: p below this, missed this much more often than the rest.
SUSPECT_P = 0.01
MIN_EFFECT = 0.10
MAX_SUSPECTS = 8
#: Evidence enough: no more probes for it, and random edits inside it are drawn again.
ESTABLISHED_P = 1e-5
ESTABLISHED_N = 25
#: A candidate for confirmation.
CANDIDATE_P = 0.01
CANDIDATE_EFFECT = 0.15
CANDIDATE_MIN_N = 8
MAX_CANDIDATES = 8
#: Probes a proposal of the describer gets whatever its evidence.
PROPOSAL_PROBES = 20


@dataclass(frozen=True)
class Found:
    """A description found by the covering, with its evidence."""

    description: tuple[str, ...]
    """Predicate names."""
    population: Population
    scored: Scored
    """Its evidence among the probes no earlier description explains."""


@dataclass(frozen=True)
class Target:
    """What one probe of a round is for."""

    population: Population | None
    """The suspicion's population; None for an exploring probe (its root decides)."""
    description: tuple[str, ...] | None = None
    """The suspicion it tests; None: it explores."""


class Search:
    """The search's policy over a [`ProbeTable`][fbi.hunt._table.ProbeTable]."""

    def __init__(self, table: ProbeTable, populations: list[Population], seed: int = 0,
                 adaptive: bool = True):
        self.table = table
        self.populations = populations
        self.adaptive = adaptive
        self.rng = random.Random(f"hunt-search:{seed}")
        self.established: list[Found] = []
        self.suspects: list[Found] = []
        self.exhausted: set[tuple[str, ...]] = set()
        """Suspicions no edit could be made for: no more probes."""
        self.proposals: list[tuple[tuple[str, ...], Population]] = []
        """The describer's hypotheses: suspicions until each has ``PROPOSAL_PROBES``
        probes, whatever their evidence."""

    def _found(self, population: Population, *, p_threshold: float, min_effect: float,
               min_n: int, limit: int, rename: bool = False) -> list[Found]:
        table = self.table
        rows = table.rows(population, (Phase.EXPLORE, Phase.TARGET))
        if rows.sum() < min_n:
            return []
        scored = cover(table.X[rows], table.missed[rows], max_found=limit,
                       p_threshold=p_threshold, min_effect=min_effect, min_n=min_n,
                       rename=rename)
        return [Found(tuple(table.names[c] for c in s.description), population, s)
                for s in scored]

    def propose(self, description: tuple[str, ...], population: Population) -> None:
        """A hypothesis to test with edits made for it (the describer's)."""
        if (description, population) not in self.proposals:
            self.proposals.append((description, population))

    def update(self) -> None:
        """Recompute the suspicions after a round (the grid has none: it only explores,
        and draws nothing again)."""
        if not self.adaptive:
            return
        self.suspects = [f for population in self.populations
                         for f in self._found(population, p_threshold=SUSPECT_P,
                                              min_effect=MIN_EFFECT, min_n=6,
                                              limit=MAX_SUSPECTS)]
        table = self.table
        for description, population in self.proposals:
            rows = table.rows(population, (Phase.EXPLORE, Phase.TARGET))
            found = scored(table.X[rows], table.missed[rows],
                           tuple(table.column[n] for n in description))
            if found.n < PROPOSAL_PROBES and \
                    all(f.description != description for f in self.suspects):
                self.suspects.append(Found(description, population, found))
        self.established = [f for f in self.suspects
                            if f.scored.p_value < ESTABLISHED_P
                            and f.scored.n >= ESTABLISHED_N]

    def plan(self, k: int) -> list[Target]:
        """The targets of the next ``k`` probes."""
        open_ = [f for f in self.suspects if f not in self.established
                 and f.description not in self.exhausted]
        if not self.adaptive or not open_:
            return [self._explore() for _ in range(k)]
        targets = []
        explore = round(k * EXPLORE_SHARE)
        for _ in range(explore):
            targets.append(self._explore())
        for _ in range(k - explore):
            chosen = max(open_, key=lambda f: self.rng.betavariate(
                1 + f.scored.misses, 1 + f.scored.n - f.scored.misses))
            targets.append(Target(chosen.population, chosen.description))
        return targets

    def _explore(self) -> Target:
        return Target(None)

    def explained(self, values: np.ndarray, population: Population) -> bool:
        """Whether an edit with predicate ``values`` lies inside an established
        suspicion (an exploring edit drawn again)."""
        column = self.table.column
        return any(f.population == population and
                   all(values[column[name]] for name in f.description)
                   for f in self.established)

    def candidates(self) -> list[Found]:
        """The descriptions to confirm, in the order the covering found them."""
        found = [f for population in self.populations
                 for f in self._found(population, p_threshold=CANDIDATE_P,
                                      min_effect=CANDIDATE_EFFECT, min_n=CANDIDATE_MIN_N,
                                      limit=MAX_CANDIDATES, rename=True)]
        return found[:MAX_CANDIDATES]
