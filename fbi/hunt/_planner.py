"""Turning what the search wants into probes and calls within the budget (issues 40 and
49): a random edit or one made to fit a suspicion, on the search's items or the held-out
ones; its strategy and pairwise order; its calls through the judge stage's protocol
([`fbi.judge.plan_calls`][fbi.judge.plan_calls]), a single-answer strategy's gold call
shared by every edit of an item; and each round's or the confirmation's share of the
calls. Plans only: the stage writes the edits and runs the calls."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from fbi.hunt._operators import Edit
from fbi.hunt._predicates import Predicate
from fbi.hunt._search import Found, Search, Target
from fbi.hunt._space import EDIT_ORDERS, EditSpace
from fbi.hunt._structure import PLACES
from fbi.hunt._table import Phase, Population, ProbeTable
from fbi.judge import EvaluationConfig, Strategy, StrategyRegistry, plan_calls
from fbi.records import GoldItem
from fbi.runs import Call

#: Of the confirmation's calls, the share kept for the held-out baseline (what the
#: candidates leave goes to it too, unless every candidate had what it needs).
BASELINE_SHARE = 0.35
#: Held-out probes a candidate gets at most (the rest go to the baseline).
CANDIDATE_CAP = 160
#: Of the draws, the share taken from items whose gold answer is already judged (a
#: single-answer edit of such an item costs one call, not two).
REUSE_SHARE = 0.6


@dataclass
class Planned:
    """One probe planned: an edit, how it is judged, and its row's fields."""

    edit: Edit
    strategy: str
    order: str | None
    population: Population
    phase: Phase
    candidate: int
    """The candidate a held-out probe was made for (−1 otherwise)."""
    values: np.ndarray
    """The predicates' answers."""
    calls: list[Call] = field(default_factory=list)
    """Its calls, the edit's first."""
    offset: int = -1
    """Its edit's line in ``edits.jsonl``, once written."""

    @property
    def call_ids(self) -> tuple[str, ...]:
        return tuple(c.call_id for c in self.calls)


class Planner:
    """The draws of one hunt: a deterministic function of its seed and what was judged
    before (a resumed hunt plans the same probes)."""

    def __init__(self, space: EditSpace, table: ProbeTable, predicates: dict[str, Predicate],
                 strategies: dict[str, Strategy], registry: StrategyRegistry,
                 evaluation: EvaluationConfig, splits: tuple[list[GoldItem], list[GoldItem]],
                 seed: int):
        self.space, self.table, self.predicates = space, table, predicates
        self.strategies, self.registry, self.evaluation = strategies, registry, evaluation
        self.splits = splits
        self.sway_strategies = [n for n, s in strategies.items() if s.paradigm != "reference"]
        self.rng = random.Random(f"hunt-draw:{seed}")
        self.used: set[str] = set()
        """Edits planned (none twice)."""
        self.planned: set[str] = set()
        """Calls of the phases run so far."""
        self.gold_judged: dict[str, tuple[list[GoldItem], list[GoldItem]]] = {
            name: ([], []) for name in strategies}
        self.place_counts: dict[str, int] = {}

    # -- one probe ----------------------------------------------------------------

    def choose(self, description: tuple[str, ...] | None, population: Population
               ) -> tuple[str, str | None]:
        """The strategy and pairwise order of a probe: as the description fixes them,
        else at random."""
        fixed = dict(n.split(":", 1) for n in description or () if n.startswith(
            ("strategy:", "order:")))
        names = self.sway_strategies if population == Population.SWAY else \
            list(self.strategies)
        strategy = fixed.get("strategy") or self.rng.choice(names)
        order = None
        if self.strategies[strategy].paradigm == "pairwise":
            order = fixed.get("order") or self.rng.choice(EDIT_ORDERS)
        return strategy, order

    def items(self, held_out: bool, strategy: str) -> list[GoldItem]:
        """The items to draw an edit from: mostly those whose gold answer is already
        judged under ``strategy`` (single-answer), so an edit costs one call."""
        judged = self.gold_judged[strategy][held_out]
        if judged and self.strategies[strategy].paradigm == "single" and \
                self.rng.random() < REUSE_SHARE:
            return judged
        return self.splits[held_out]

    def draw(self, target: Target, search: Search | None, phase: Phase,
             candidate: int = -1) -> Planned | None:
        """A probe for ``target``: a random edit (outside what the search has
        established), or one that fits its description."""
        held_out = phase >= Phase.BASELINE
        if target.description is None:
            for _ in range(8):
                strategy = self.rng.choice(list(self.strategies))
                drawn = self.space.random_edit(self.items(held_out, strategy), self.rng,
                                               self.used, self.place_counts)
                if drawn is None:
                    continue
                root, edit = drawn
                if root.population == Population.SWAY and \
                        strategy not in self.sway_strategies:
                    continue
                strategy, order = self.choose((f"strategy:{strategy}",), root.population)
                values = self.table.values(edit.view(strategy, order))
                if search is None or not search.explained(values, root.population):
                    return Planned(edit, strategy, order, root.population, phase,
                                   candidate, values)
            return None
        strategy, order = self.choose(target.description, target.population)
        seen = [] if search is None else self.table.operators_of(
            target.description, target.population, (Phase.EXPLORE, Phase.TARGET))
        edit = self.space.draw_fitting(target.description, self.predicates,
                                       self.items(held_out, strategy), self.rng, self.used,
                                       seen, strategy, order,
                                       target.population == Population.SWAY)
        if edit is None:
            return None
        return Planned(edit, strategy, order, target.population, phase, candidate,
                       self.table.values(edit.view(strategy, order)))

    def calls_of(self, planned: Planned) -> list[Call]:
        """The calls of a probe: the edit's (pairwise: in its order), then a
        single-answer strategy's shared gold call."""
        strategy = self.strategies[planned.strategy]
        wanted = {"edit-first": "perturbed-first", "edit-second": "gold-first"}.get(
            planned.order or "")
        calls = []
        for call in plan_calls([planned.edit.instance], [strategy], self.registry,
                               self.evaluation):
            role = call.fields["role"]
            if strategy.paradigm == "pairwise" and role != wanted:
                continue
            if role == "gold":  # one gold call per item and strategy
                call = shared_gold_call(call, planned.edit.item.id)
            calls.append(call)
        calls.sort(key=lambda c: c.fields["role"] == "gold")  # the edit's first
        return calls

    def admit(self, planned: Planned, limit: int, pending: set[str]) -> bool:
        """Add ``planned`` if the hunt's calls, its new ones included, stay within
        ``limit``."""
        calls = self.calls_of(planned)
        new = [c for c in calls if c.call_id not in self.planned and c.call_id not in
               pending]
        if len(self.planned) + len(pending) + len(new) > limit:
            return False
        planned.calls = calls
        pending.update(c.call_id for c in new)
        self.used.add(planned.edit.id)
        if any(c.fields["role"] == "gold" for c in new):
            self.gold_judged[planned.strategy][planned.phase >= Phase.BASELINE].append(
                planned.edit.item)
        return True

    # -- rounds -------------------------------------------------------------------

    def _count_places(self) -> None:
        """How many probes each place has had so far (random edits go where fewest
        have)."""
        X, column = self.table.X, self.table.column
        self.place_counts = {name: int(X[:, column[name]].sum()) for name in PLACES
                             if name in column}

    def search_round(self, targets: list[Target], search: Search, limit: int
                     ) -> list[Planned]:
        """A search round's probes, while the hunt's calls stay within ``limit``."""
        self._count_places()
        probes: list[Planned] = []
        pending: set[str] = set()
        for target in targets:
            planned = self.draw(target, search,
                                Phase.TARGET if target.description else Phase.EXPLORE)
            if planned is None:
                if target.description is not None:
                    search.exhausted.add(target.description)
                continue
            if not self.admit(planned, limit, pending):
                break
            probes.append(planned)
        return probes

    def confirmation(self, candidates: list[Found], left: int, needs: list[int | None]
                     ) -> list[Planned]:
        """The held-out probes of each candidate — as many as it ``needs`` (None: as
        many as it can have) within an equal share of the candidates' part of the
        ``left`` calls, what one needs not taken by the next — then the held-out
        baseline's: if every candidate had what it needs, until as many random edits as
        the largest need lie outside every candidate (each is tested against those at
        least: the size its need assumed), else with all the calls left (a candidate
        short of edits gains power from a larger baseline)."""
        if not candidates:
            return []
        self._count_places()
        probes: list[Planned] = []
        pending: set[str] = set()
        end = len(self.planned) + left
        candidates_end = len(self.planned) + int(left * (1 - BASELINE_SHARE))
        # those needing fewest first, so what they leave goes to the others
        order = sorted(range(len(candidates)), key=lambda i: (
            needs[i] is None, needs[i] or 0, i))
        short = False
        for served, index in enumerate(order):
            found = candidates[index]
            used = len(self.planned) + len(pending)
            limit = used + (candidates_end - used) // (len(candidates) - served)
            wanted = min(CANDIDATE_CAP, needs[index] or CANDIDATE_CAP)
            count, failures = 0, 0
            while count < wanted and failures < 20:
                planned = self.draw(Target(found.population, found.description), None,
                                    Phase.CANDIDATE, index)
                if planned is None:
                    failures += 1
                    continue
                if not self.admit(planned, limit, pending):
                    break
                probes.append(planned)
                count += 1
            short |= needs[index] is None or count < needs[index]
        # the baseline's need, by population: outside every candidate of it
        wanted_outside = {c.population: 0 for c in candidates}
        for found, need in zip(candidates, needs, strict=True):
            wanted_outside[found.population] = max(wanted_outside[found.population],
                                                   need or 0)
        columns = [(c.population, [self.table.column[n] for n in c.description])
                   for c in candidates]
        failures = 0
        while failures < 50 and (short or any(n > 0 for n in wanted_outside.values())):
            planned = self.draw(Target(None), None, Phase.BASELINE)
            if planned is None or planned.population not in wanted_outside:
                failures += 1
                continue
            if not self.admit(planned, end, pending):
                break
            probes.append(planned)
            if not any(population == planned.population and planned.values[c].all()
                       for population, c in columns):
                wanted_outside[planned.population] -= 1
        return probes


def shared_gold_call(call: Call, item_id: str) -> Call:
    """The gold answer's call of a single-answer strategy, one per gold item: every edit
    of the item is compared with the same score."""
    strategy = call.fields["strategy"]
    return Call(f"{item_id}|{strategy}|gold", call.planned, call.record_type,
                {**call.fields, "instance_id": item_id}, call.parse, call.repair,
                call.repairs, call.expected_reply_tokens)
