"""Every edit a hunt may make, and drawing one that fits a description (issue 49).

The *roots* are where the search starts: each error operator, each manipulation after a
random error operator, two random error operators composed, each perturber category
(``llm/CATEGORY``) and, in the sway population, each manipulation alone with the
score-invariant rewrites as its baseline. A random edit (exploring, or the held-out
baseline) is a random root, placed at a random place half of the time. An edit for a
description is made to fit it: its operator from the description's operator predicates
(or, without one, from the operators whose edits the description was seen in), its place
from the description's place, and it is drawn again until every predicate of the
description holds.

The per-hunt predicates (``how`` and ``judged``) are made here from the operators and
strategies.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from fbi.hunt._operators import (
    MANIPULATION,
    Edit,
    Operator,
    error_operators,
    family_of,
    invariant_rules,
    is_pool,
    replaces_whole,
)
from fbi.hunt._predicates import PREDICATES, Predicate, where_predicates
from fbi.hunt._structure import PLACES, places_of
from fbi.hunt._table import Population
from fbi.hunt._trajectory_edits import STEP as TRAJECTORY_GROUP
from fbi.hunt._trajectory_edits import Toolbox
from fbi.perturb import manipulations
from fbi.perturb.rules import Declined
from fbi.records import GoldItem

#: Tries at drawing an edit that fits a description before giving up on it for now.
DRAW_ATTEMPTS = 120
EDIT_ORDERS = ("edit-first", "edit-second")
#: The share of random edits that test the sway population (a manipulation alone, or a
#: harmless rewrite).
SWAY_SHARE = 0.15
#: Roots tried at making a random edit at a place before the draw gives up.
PLACED_ROOTS = 12
SECOND_ERROR = "composition"


@dataclass(frozen=True)
class Root:
    """A kind of random edit."""

    name: str
    """``op:NAME``, ``added:manipulation/KIND``, ``composition``, ``sway:KIND`` or
    ``invariant``."""
    population: Population


@dataclass
class EditSpace:
    """The roots and operators of one hunt (see the module docstring)."""

    operators: list[Operator] | None = None
    """``--operator``: only these (then no other root); None: every root."""
    pools: dict[str, Sequence[Edit]] = field(default_factory=dict)
    """Models' edits by operator name: the perturber's (``llm/CATEGORY``) and the
    describer's (``proposal/K``)."""
    phrases: dict[str, str] = field(default_factory=dict)
    """How a description says a pool operator, when not "NAME edits" (a describer's
    hypothesis)."""
    sway: bool = True
    """Whether the sway population (manipulations alone) is searched."""
    trajectories: bool = False
    """A hunt over agents' trajectories: the trajectory rules are its error operators
    (`fbi.hunt._trajectory_edits`), each alone — or, asked for by ``--operator``,
    followed by a manipulation that goes into a tool result
    (``tool-result-instruction``); no composition or placement."""
    toolbox: Toolbox | None = None
    """A trajectory hunt's tools (`fbi.hunt._trajectory_edits.Toolbox`)."""

    def __post_init__(self) -> None:
        self.errors = error_operators(self.trajectories)
        #: The error operators that edit part of an answer: those composed and followed
        #: by a manipulation (a master key replaces it all).
        self.partial = [e for e in self.errors if not replaces_whole(e)]
        # an answer takes the manipulations put before or after it; a trajectory those
        # put into one of its tool results (what an attacker's tool returns)
        self.kinds = sorted(k for k, m in manipulations()[1].items()
                            if (m.where == "tool-result") == self.trajectories)
        self.invariants = [] if self.trajectories else invariant_rules()
        self.places = [] if self.trajectories else sorted(PLACES)
        self.sway = self.sway and not self.trajectories
        self.pools = {name: edits for name, edits in self.pools.items() if edits}

    # -- the roots and the operators ---------------------------------------------

    def roots(self) -> list[Root]:
        pooled = [Root(f"op:{name}", Population.ERROR) for name in sorted(self.pools)]
        if self.operators is not None:
            named = [Root(f"op:{op.name}", Population.SWAY if op.sway else
                          Population.ERROR) for op in self.operators]
            if any(op.sway for op in self.operators):  # a manipulation alone needs the
                named.append(Root("invariant", Population.SWAY))  # rewrites beside it
            return named + pooled
        roots = [Root(f"op:{name}", Population.ERROR) for name in self.errors]
        # a trajectory hunt makes an instruction in a tool result only when asked
        # (--operator trajectory/RULE+manipulation/tool-result-instruction): as a root
        # of every hunt it spreads the budget over twice the operators, and a short
        # trajectory's final-answer spot then came back as "the last third"
        roots += [] if self.trajectories else [
            Root(f"added:{MANIPULATION}{kind}", Population.ERROR) for kind in self.kinds]
        roots += [] if self.trajectories else [Root(SECOND_ERROR, Population.ERROR)]
        roots += pooled
        if self.sway:
            roots += [Root(f"sway:{kind}", Population.SWAY) for kind in self.kinds]
            roots += [Root("invariant", Population.SWAY)]
        return roots

    def operator_names(self) -> list[str]:
        """Every operator an edit of this space can have, each once (a row keeps its
        index)."""
        names = [*self.errors, *(f"{e}+{MANIPULATION}{k}" for e in self.partial
                                 for k in self.kinds),
                 *(f"{MANIPULATION}{k}" for k in self.kinds), *self.invariants,
                 *sorted(self.pools)]
        names += [op.name for op in self.operators or () if op.name not in names]
        return names

    def operator_of_root(self, root: Root, rng: random.Random) -> Operator | str:
        """A random operator of ``root``: an `Operator`, or a perturber pool's name."""
        name = root.name
        if name.startswith("op:"):
            op = name[3:]
            return op if is_pool(op) else Operator.parse(op)
        if name.startswith("added:"):
            return Operator((rng.choice(self.partial),), name.split("/", 1)[1])
        if name.startswith("sway:"):
            return Operator((), name[5:])
        if name == "invariant":
            return Operator((rng.choice(self.invariants),))
        first = rng.choice(self.partial)
        return Operator((first, rng.choice([e for e in self.partial if e != first])))

    def population_of(self, operator: Operator) -> Population:
        """A manipulation alone and a score-invariant rewrite are the sway population's;
        everything else is an error edit."""
        if not operator.errors or operator.errors[0] in self.invariants:
            return Population.SWAY
        return Population.ERROR

    # -- drawing -----------------------------------------------------------------

    def random_edit(self, items: list[GoldItem], rng: random.Random, used: set[str],
                    place_counts: dict[str, int]) -> tuple[Root, Edit] | None:
        """A random edit and its root: a root of the sway population ``SWAY_SHARE`` of
        the time; else, half of the time, an error edit anywhere, and otherwise one at a
        place, chosen of three at random as the one probed least so far
        (``place_counts``), made by the first of a few random roots that can edit there
        (a short quotation takes a typo, not a list swap)."""
        roots = self.roots()
        sway = [r for r in roots if r.population == Population.SWAY]
        errors = [r for r in roots if r.population == Population.ERROR]
        if sway and (not errors or rng.random() < SWAY_SHARE):
            root = rng.choice(sway)
            edit = self._make(self.operator_of_root(root, rng), items, rng, None)
            return (root, edit) if edit is not None and edit.id not in used else None
        if not self.places or rng.random() < 0.5:
            place = None
        else:
            options = rng.sample(self.places, min(3, len(self.places)))
            place = min(options, key=lambda p: (place_counts.get(p, 0), options.index(p)))
        for _ in range(PLACED_ROOTS if place else 1):
            root = rng.choice(errors)
            operator = self.operator_of_root(root, rng)
            if place is not None and (isinstance(operator, str) or not operator.placeable):
                continue
            edit = self._make(operator, items, rng, place)
            if edit is not None and edit.id not in used:
                return root, edit
        return None

    def draw_fitting(self, description: tuple[str, ...], predicates: dict[str, Predicate],
                     items: list[GoldItem], rng: random.Random, used: set[str],
                     seen: list[str], strategy: str, order: str | None,
                     sway: bool = False) -> Edit | None:
        """An edit for which every predicate of ``description`` holds (judged by
        ``strategy`` in ``order``), of the sway population or not as ``sway`` says; None
        when ``DRAW_ATTEMPTS`` tries found none.
        ``seen``: operators of the edits the description was seen in, drawn from nine
        times in ten when the description names no operator."""
        # the cheap questions first: what made it, where it is, then the words it changed
        chosen = sorted((predicates[name] for name in description),
                        key=lambda p: ("how", "judged", "where", "answer", "what").index(
                            p.group) if p.group in ("how", "judged", "where", "answer",
                                                    "what") else 5)
        places = [p.place.name for p in chosen if p.place is not None]
        for _ in range(DRAW_ATTEMPTS):
            operator = self._operator_for(description, rng, seen, sway)
            if operator is None:
                return None
            if not isinstance(operator, str) and \
                    (self.population_of(operator) == Population.SWAY) != sway:
                continue
            place = places[0] if places and not isinstance(operator, str) and \
                operator.placeable else None
            edit = self._make(operator, items, rng, place)
            if edit is None or edit.id in used:
                continue
            view = edit.view(strategy, order)
            if all(p.test(view) for p in chosen):
                return edit
        return None

    def _operator_for(self, description: tuple[str, ...], rng: random.Random,
                      seen: list[str], sway: bool) -> Operator | str | None:
        """An operator whose edits may fit ``description``. The caller checks every
        predicate of the edit made, so an operator here need only be likely to fit.
        With ``seen`` (the search), nine times in ten one of the operators the
        description was seen with; else (the held-out confirmation) a random root that
        the description's operator predicates allow, as a random edit would have, so a
        candidate's held-out edits are its edits as they come, not the ones the search
        happened to favour."""
        fixed = {kind: value for kind, _, value in (n.partition(":") for n in description)
                 if kind in ("op", "family", "added", "sway")}
        manipulation = fixed["added"].removeprefix(MANIPULATION) if "added" in fixed \
            else None
        if "op" in fixed:
            if is_pool(fixed["op"]):
                return fixed["op"]
            return Operator(Operator.parse(fixed["op"]).errors, manipulation)
        if "sway" in fixed:
            return Operator((), fixed["sway"])
        if seen and rng.random() < 0.9:
            name = rng.choice(seen)
            return name if is_pool(name) else Operator.parse(name)
        population = Population.SWAY if sway else Population.ERROR
        roots = [r for r in self.roots() if r.population == population
                 and self._root_allows(r, fixed, SECOND_ERROR in description)]
        return self.operator_of_root(rng.choice(roots), rng) if roots else None

    def _root_allows(self, root: Root, fixed: dict[str, str], composed: bool) -> bool:
        """Whether ``root``'s edits can have the operator predicates ``fixed``."""
        kind, _, value = root.name.partition(":")
        if composed:
            return root.name == SECOND_ERROR
        if "added" in fixed:
            return root.name == f"added:{fixed['added']}"
        if "family" in fixed:
            return kind == "op" and family_of(value) == fixed["family"]
        return True

    def _make(self, operator: Operator | str, items: list[GoldItem], rng: random.Random,
              place: str | None) -> Edit | None:
        if isinstance(operator, str):  # a model's pool, or the string search's
            allowed = {item.id for item in items}
            edits = self.pools.get(operator, ())
            made_when_drawn = getattr(edits, "edit_for", None)
            if made_when_drawn is not None:  # (`fbi.hunt._strings.StringPool`)
                ids = [i for i in edits.ids if i in allowed]  # type: ignore[attr-defined]
                return made_when_drawn(rng.choice(ids)) if ids else None
            pool = [e for e in edits if e.item.id in allowed]
            return rng.choice(pool) if pool else None
        if place is not None:  # an item that has the place
            items = [i for i in items if places_of(i.gold_answer).get(place)]
            if not items:
                return None
        item = rng.choice(items)
        try:
            return operator.apply(item, rng.randrange(1 << 30), place)
        except Declined:
            return None


# ------------------------------------------------------------------ per-hunt predicates

def _family_words(family: str) -> str:
    return {"llm": "the perturber's", "describer": "the describer's",
            "string": "the string search's"}.get(
        family, f"{family}-rule")


def predicates_for(space: EditSpace, strategies: list[str], pairwise: bool
                   ) -> list[Predicate]:
    """Every predicate of a hunt: the registered ones, one per place, and the ``how``
    and ``judged`` ones its operators and strategies make."""
    if space.trajectories:  # where a step lies and what it is, not a text's place
        found = [p for p in PREDICATES.values() if p.group == TRAJECTORY_GROUP]
        found += (space.toolbox or Toolbox((), {})).predicates()
    else:
        found = [p for p in PREDICATES.values() if p.group != TRAJECTORY_GROUP]
        found += where_predicates()
    errors = sorted({*space.errors, *space.pools,
                     *(e for op in space.operators or () for e in op.errors)})
    for error in errors:
        found.append(Predicate(f"op:{error}", space.phrases.get(error, f"{error} edits"),
                               "how", lambda e, name=error: e.rules[:1] == (name,) and
                               len(e.rules) == 1, f"Edits made by {error} alone."))
    families: dict[str, int] = {}
    for error in errors:
        families[family_of(error)] = families.get(family_of(error), 0) + 1
    for family in sorted(f for f, size in families.items()  # (one operator: op:; all:
                         if 1 < size < len(errors)):  # no description)
        found.append(Predicate(f"family:{family}", f"{_family_words(family)} edits", "how",
                               lambda e, f=family: bool(e.rules) and
                               family_of(e.rules[0]) == f,
                               f"Edits whose (first) error operator is of the {family} "
                               "family."))
    for kind in space.kinds:
        found.append(Predicate(f"added:{MANIPULATION}{kind}", f"with {kind} added", "how",
                               lambda e, k=kind: e.manipulation == k and bool(e.rules),
                               f"An error edit with the {kind} manipulation added."))
        if space.sway:
            found.append(Predicate(f"sway:{kind}", f"{kind} added to a correct answer",
                                   "how", lambda e, k=kind: e.manipulation == k and
                                   not e.rules, f"The {kind} manipulation alone."))
    if not space.trajectories:
        found.append(Predicate(SECOND_ERROR, "with a second error", "how",
                               lambda e: len(e.rules) > 1, "Two error operators composed."))
    if len(strategies) > 1:
        for name in strategies:
            found.append(Predicate(f"strategy:{name}", f"judged by {name}", "judged",
                                   lambda e, s=name: e.strategy == s,
                                   f"Judged by the {name} strategy."))
    if pairwise:
        found.append(Predicate("order:edit-first", "with the edit shown first", "judged",
                               lambda e: e.order == "edit-first",
                               "Pairwise: the edited answer was answer A."))
        found.append(Predicate("order:edit-second", "with the edit shown second", "judged",
                               lambda e: e.order == "edit-second",
                               "Pairwise: the edited answer was answer B."))
    return found

