"""The adaptive search: which descriptions to probe next, when to refine one, and which
descriptions to take to confirmation (issue 40).

The search keeps every observation — an edit's facts (its strategy among them) and
whether the judge missed it — and computes any description's tally from them, so a
refinement starts with the evidence its parent already has.

* **Arms** are descriptions the search draws edits for: at first one per root (every
  operator, manipulation kind and composition). Each round the search gives every arm a
  few probes (``WARMUP``), then draws arms by Thompson sampling: a draw from each arm's
  Beta(1 + misses, 1 + catches) posterior of its miss rate, the highest draw probed
  (Thompson 1933; Russo et al., "A Tutorial on Thompson Sampling", 2018). Probes go where
  misses are found, and an arm nobody has probed much keeps a chance. An arm with
  ``SETTLED`` probes has evidence enough and gets no more.
* **Refinement.** An arm with ``REFINE_AT`` observations whose miss rate is above the
  baseline with posterior probability ``REFINE_CONFIDENCE`` gets children: itself with one
  more axis fixed to a value its edits took (``number-errors`` → ``number-errors``,
  inside a list item), up to ``MAX_CONSTRAINTS`` axes.
* **Candidates.** At the end of the search every description of up to
  ``MAX_CONSTRAINTS`` axes seen in ``MIN_N`` or more observations is tested against the
  baseline (one-sided Fisher exact test); those above it at ``SEARCH_ALPHA`` are
  candidates, the broadest first (then by evidence). A candidate is *too broad* when
  some of its children along one axis are candidates and the rest of it misses no more
  often than halfway between the baseline and those children: then they are the blind
  spot, not it ("number-errors" → "number-errors inside a list item"). A candidate
  inside one already taken, or whose misses that one explains, is dropped; one taken
  before that lies wholly inside a later one gives way to it.

The baseline is the same judge's detection of comparable edits: plain error edits (one
error rule, nothing added) outside the description, under the same strategy when the
description fixes one.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass, field

from scipy import stats

from fbi.hunt._edits import AXES, Description, matches

WARMUP = 4
#: Probes after which an arm is settled: enough to name it or not, the rest of the
#: search's calls go elsewhere (its children included).
SETTLED = 60
REFINE_AT = 8
REFINE_CONFIDENCE = 0.9
MAX_CONSTRAINTS = 2
MIN_N = 5
SEARCH_ALPHA = 0.05
MAX_CANDIDATES = 8
#: Axes an operator decides: with the operator fixed they add nothing to a description.
IMPLIED_BY_OPERATOR = frozenset({"family", "added"})


@dataclass(frozen=True)
class Observation:
    """One probe's outcome: an edit under one strategy."""

    facts: dict[str, str]
    """The edit's facts and its ``strategy``."""
    missed: bool
    """The judge did not penalise the edit (or its reply was unreadable)."""

    @property
    def plain(self) -> bool:
        """A plain error edit: part of the baseline."""
        return self.facts.get("added") == "nothing"


@dataclass
class Tally:
    misses: int = 0
    n: int = 0

    @property
    def rate(self) -> float:
        return self.misses / self.n if self.n else 0.0

    def minus(self, other: Tally) -> Tally:
        return Tally(self.misses - other.misses, self.n - other.n)


def tally(observations: list[Observation], description: Description) -> Tally:
    hits = [o.missed for o in observations if matches(description, o.facts)]
    return Tally(sum(hits), len(hits))


def baseline(observations: list[Observation], description: Description) -> Tally:
    """The comparable edits of ``description``: plain error edits outside it, under its
    strategy if it fixes one."""
    strategy = dict(description).get("strategy")
    hits = [o.missed for o in observations
            if o.plain and not matches(description, o.facts)
            and strategy in (None, o.facts.get("strategy"))]
    return Tally(sum(hits), len(hits))


def fisher_greater(inside: Tally, outside: Tally) -> float:
    """One-sided Fisher exact test: does ``inside`` miss more often than ``outside``?"""
    if not inside.n or not outside.n:
        return 1.0
    table = [[inside.misses, inside.n - inside.misses],
             [outside.misses, outside.n - outside.misses]]
    return float(stats.fisher_exact(table, alternative="greater").pvalue)


@dataclass
class Search:
    """The search's state: its arms and observations (see the module docstring)."""

    roots: list[Description]
    """Where the search starts (`fbi.hunt.EditSpace.roots`)."""
    seed: int = 0
    """Seeds the Thompson draws."""
    axes: tuple[str, ...] = tuple(AXES)
    """The axes refinements and candidates may fix."""
    arms: list[Description] = field(default_factory=list)
    """The descriptions edits are drawn for: the roots, then their refinements."""
    observations: list[Observation] = field(default_factory=list)
    """Every probe's outcome so far."""
    exhausted: set[Description] = field(default_factory=set)
    """Arms no new edit could be drawn for."""
    refined: set[Description] = field(default_factory=set)
    """Arms whose children were made."""
    adaptive: bool = True
    """False: a uniform grid over the roots (the same probes for each, no refinement),
    what the adaptive search is measured against (benchmarks/hunt_search.py)."""

    def __post_init__(self) -> None:
        self.arms = list(self.roots)
        self.rng = random.Random(f"hunt-search:{self.seed}")
        # Each arm's tally and its plain edits' tally, and the plain edits' by strategy,
        # kept as observations come: a round costs the arms, not arms × observations
        # (a 30,000-call hunt has 18,000 observations and hundreds of arms).
        self._own: dict[Description, Tally] = {a: Tally() for a in self.arms}
        self._plain_inside: dict[Description, Tally] = {a: Tally() for a in self.arms}
        self._plain: dict[str | None, Tally] = defaultdict(Tally)

    def record(self, observation: Observation) -> None:
        self.observations.append(observation)
        facts, missed = observation.facts, observation.missed
        if observation.plain:
            for key in (None, facts.get("strategy")):
                self._plain[key].misses += missed
                self._plain[key].n += 1
        for arm in self.arms:
            if matches(arm, facts):
                for kept in (self._own[arm], *((self._plain_inside[arm],)
                                               if observation.plain else ())):
                    kept.misses += missed
                    kept.n += 1

    def tally(self, arm: Description) -> Tally:
        """An arm's tally (kept up to date as observations come)."""
        return self._own[arm]

    def baseline(self, arm: Description) -> Tally:
        """An arm's baseline (plain error edits outside it, under its strategy if it fixes
        one), from the kept tallies."""
        strategy = dict(arm).get("strategy")
        inside = self._plain_inside[arm]
        if strategy is not None:  # the plain edits of that strategy, outside the arm
            total = self._plain[strategy]
            return Tally(total.misses - inside.misses, total.n - inside.n)
        return self._plain[None].minus(inside)

    def _add_arm(self, arm: Description) -> None:
        self.arms.append(arm)
        self._own[arm] = tally(self.observations, arm)
        self._plain_inside[arm] = tally([o for o in self.observations if o.plain], arm)

    def choose(self, k: int) -> list[Description]:
        """The arms of the next ``k`` probes (an arm may come several times)."""
        tallies = {a: self._own[a] for a in self.arms if a not in self.exhausted}
        active = [a for a, t in tallies.items() if t.n < SETTLED]
        if not active:
            return []
        planned: dict[Description, int] = defaultdict(int)
        picks = []
        for _ in range(k):
            cold = [a for a in active if tallies[a].n + planned[a] < WARMUP]
            if not self.adaptive:  # the grid: the least probed root next
                arm = min(active, key=lambda a: tallies[a].n + planned[a])
            elif cold:
                arm = min(cold, key=lambda a: tallies[a].n + planned[a])
            else:
                arm = max(active, key=lambda a: self.rng.betavariate(
                    1 + tallies[a].misses, 1 + tallies[a].n - tallies[a].misses))
            planned[arm] += 1
            picks.append(arm)
        return picks

    def refine(self) -> list[Description]:
        """Children for every arm that is promising now; returns the new arms."""
        new: list[Description] = []
        if not self.adaptive:
            return new
        for arm in list(self.arms):
            if arm in self.refined or len(arm) >= MAX_CONSTRAINTS:
                continue
            own, base = self._own[arm], self.baseline(arm)
            if own.n < REFINE_AT or not base.n:
                continue
            above = stats.beta.sf(base.rate, 1 + own.misses, 1 + own.n - own.misses)
            if above < REFINE_CONFIDENCE:
                continue
            self.refined.add(arm)
            seen: dict[tuple[str, str], int] = defaultdict(int)
            fixed = dict(arm)
            for o in self.observations:
                if matches(arm, o.facts):
                    for axis in self.axes:
                        if axis not in fixed and axis in o.facts and \
                                (axis, o.facts[axis]) != ("added", "nothing"):
                            seen[(axis, o.facts[axis])] += 1
            for (axis, value), count in sorted(seen.items()):
                child = tuple(sorted((*arm, (axis, value))))
                axes = {a for a, _ in child}
                if "operator" in axes and not IMPLIED_BY_OPERATOR.isdisjoint(axes):
                    continue  # (the operator alone says as much)
                if count >= 2 and child not in self._own:
                    self._add_arm(child)
                    new.append(child)
        return new


@dataclass(frozen=True)
class Candidate:
    """A description the search found the judge missing more often than the baseline."""

    description: Description
    tally: Tally
    baseline: Tally
    p_search: float


def descriptions_seen(observations: list[Observation], axes: tuple[str, ...]
                      ) -> dict[Description, Tally]:
    """Every description of one to ``MAX_CONSTRAINTS`` axes that some observation fits,
    with its tally."""
    tallies: dict[Description, Tally] = defaultdict(Tally)
    for o in observations:
        # ("added", "nothing") is what a description without either axis stands for
        present = [a for a in axes if a in o.facts and (a, o.facts[a]) != ("added",
                                                                           "nothing")]
        for size in range(1, MAX_CONSTRAINTS + 1):
            for chosen in itertools.combinations(present, size):
                if "operator" in chosen and not IMPLIED_BY_OPERATOR.isdisjoint(chosen):
                    continue  # (the same description as the operator's alone)
                key = tuple(sorted((a, o.facts[a]) for a in chosen))
                if matches(key, o.facts):
                    entry = tallies[key]
                    entry.n += 1
                    entry.misses += o.missed
    return tallies


def candidates(observations: list[Observation], axes: tuple[str, ...]
               ) -> tuple[list[Candidate], int]:
    """The candidates to confirm, and how many hypotheses were tested to find them (see
    the module docstring)."""
    tested: list[Candidate] = []
    for description, own in descriptions_seen(observations, axes).items():
        if own.n < MIN_N:
            continue
        base = baseline(observations, description)
        tested.append(Candidate(description, own, base, fisher_greater(own, base)))
    elevated = {c.description: c for c in tested
                if c.p_search < SEARCH_ALPHA and c.tally.rate > c.baseline.rate}
    chosen: list[Candidate] = []
    # the broadest first: a description is taken unless its children hold its misses
    # (then the one with more evidence: p-values this small tie at 0.0)
    for candidate in sorted(elevated.values(), key=lambda c: (len(c.description),
                                                              c.p_search, -c.tally.n)):
        if len(chosen) == MAX_CANDIDATES:
            break
        if _too_broad(candidate, elevated, observations):
            continue
        if any(_explained_by(candidate, taken, observations) for taken in chosen):
            continue
        # one taken before that lies wholly inside this one gives way to it
        chosen = [t for t in chosen if not _inside(t, candidate, observations)]
        chosen.append(candidate)
    return chosen, len(tested)


def _too_broad(candidate: Candidate, elevated: dict[Description, Candidate],
               observations: list[Observation]) -> bool:
    """Some of its children along one axis, each a candidate, hold its misses: the rest
    of it misses no more often than halfway between the baseline and those children."""
    own = set(candidate.description)
    by_axis: dict[str, list[Candidate]] = defaultdict(list)
    for child in elevated.values():
        extra = set(child.description) - own
        if len(child.description) == len(own) + 1 and own <= set(child.description):
            by_axis[next(iter(extra))[0]].append(child)
    for children in by_axis.values():
        inside = Tally(sum(c.tally.misses for c in children),
                       sum(c.tally.n for c in children))
        rest = candidate.tally.minus(inside)
        if rest.n >= 3 and rest.rate < (candidate.baseline.rate + inside.rate) / 2:
            return True
    return False


def _inside(narrow: Candidate, broad: Candidate, observations: list[Observation]) -> bool:
    """Every edit ``narrow`` stands for, ``broad`` stands for too."""
    return all(matches(broad.description, o.facts) for o in observations
               if matches(narrow.description, o.facts))


def _explained_by(candidate: Candidate, taken: Candidate,
                  observations: list[Observation]) -> bool:
    """``candidate`` lies inside ``taken``, or its misses outside ``taken`` are no more
    frequent than halfway between the baseline and ``candidate``'s."""
    if set(taken.description) <= set(candidate.description):
        return True
    rest = [o.missed for o in observations
            if matches(candidate.description, o.facts)
            and not matches(taken.description, o.facts)]
    if not rest:
        return True
    return sum(rest) / len(rest) < (candidate.baseline.rate + candidate.tally.rate) / 2


def seen_operators(observed: list[Observation], description: Description) -> list[str]:
    """The operators of the observed edits ``description`` stands for, one per edit."""
    return [o.facts["operator"] for o in observed if matches(description, o.facts)]
