"""The edits a hunt searches over, and the facts that describe each one (issue 40).

An edit is one of fbi's own operators applied to a gold answer: a rule of the rule engine
(`fbi.perturb.rules`, each error category a rule can make honestly), optionally followed
by a second error rule (a composition) or by a manipulation
([`fbi.perturb.manipulate`][fbi.perturb.manipulate]). The rules choose where to change
the answer with a seeded generator, so one operator on one answer gives different edits
under different seeds; the search asks for edits until one has the facts it wants.

Each edit is described along axes a person can act on ([`AXES`][fbi.hunt.AXES]): what
changed (the operator, its rule family, what was added), where (the third of the answer,
what holds the change, its sentence), and how much (characters changed, the answer's
length). Score-invariant rewrites are not errors (a judge that scores them like the gold
is right), so they are no operator here.

With a perturber model (``--perturber``), the categories no rule can make honestly
(entity, incorrect-fact, contextual, ...) are operators too, ``llm/CATEGORY``: the hunt
asks the perturber for a pool of such edits first, with the perturb stage's own prompts,
and draws from it; their facts come from the word diff against the gold answer.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from fbi.diffing import changed_regions
from fbi.errors import InputError
from fbi.perturb import PerturbConfig, Perturber, is_manipulation, manipulate, manipulations
from fbi.perturb.rules import NEEDS_LLM, Declined, GoldItem, apply_rule, family_of, rules
from fbi.records import Instance, Provenance
from fbi.settings import ModelSettings
from fbi.taxonomy import Ability, get_category, unknown_name_message
from fbi.text import LIST_ITEM, sentences

AXES: dict[str, str] = {
    "operator": "the operator: the error rule, and what was added to it",
    "family": "the error rule's family (numbers, order, structure, grammar, negation, "
              "spelling), or llm for the perturber's edits",
    "added": "what came with the error: nothing, a second error, or a manipulation",
    "where": "the third of the answer the (first) change is in",
    "inside": "what holds the change: a list item, a table row or prose",
    "sentence": "the change's sentence: the answer's first or a later one",
    "size": "characters changed",
    "length": "the gold answer's length",
    "strategy": "the judging strategy",
}
"""Each axis an edit is described along, and what it says."""
#: How each axis's value reads in a finding's description.
PHRASES: dict[str, str] = {
    "where": "in the {} third of the answer",
    "inside": "inside {}",
    "sentence": "in {} sentence",
    "size": "changing {} characters",
    "length": "in {} answers",
    "strategy": "judged by {}",
    "added": "{}",
    "family": "{} errors",
    "operator": "{}",
}
SHORT, LONG = 400, 1200  # answer length bands, characters
LLM = "llm/"  # an LLM perturber's operator: llm/CATEGORY
SMALL, LARGE = 5, 40  # characters changed
COMPOSITION = "+"


def error_rules() -> list[str]:
    """The rule categories that plant an error (score-invariant rewrites excluded)."""
    return sorted(name for name in rules() if get_category(name).lowers_score)


@dataclass(frozen=True)
class Operator:
    """One edit operator: error rules applied in turn, and optionally a manipulation."""

    errors: tuple[str, ...]
    """The error rules, in the order applied (one, or two for a composition)."""
    manipulation: str | None = None
    """The manipulation kind added after the errors, if any."""

    @property
    def added(self) -> str:
        """The ``added`` axis's value of its edits."""
        return (f"manipulation/{self.manipulation}" if self.manipulation
                else SECOND_ERROR if len(self.errors) > 1 else "nothing")

    @property
    def name(self) -> str:
        parts = [*self.errors] + ([f"manipulation/{self.manipulation}"]
                                   if self.manipulation else [])
        return COMPOSITION.join(parts)

    @classmethod
    def parse(cls, name: str) -> Operator:
        """``number-errors``, ``grammar+spelling``, ``chronology+manipulation/padding``;
        an unknown part is an InputError with the valid names."""
        parts = name.split(COMPOSITION)
        rules, kinds = error_rules(), manipulations()[1]
        errors, manipulation = [], None
        for i, part in enumerate(parts):
            if is_manipulation(part) and part.removeprefix("manipulation/") in kinds \
                    and i == len(parts) - 1 and errors:
                manipulation = part.removeprefix("manipulation/")
            elif part in rules:
                errors.append(part)
            else:
                valid = rules + [f"manipulation/{k}" for k in kinds]
                raise InputError(unknown_name_message("operator", part, valid) +
                                 " A manipulation comes last, after an error rule "
                                 "(number-errors+manipulation/padding).")
        if not 1 <= len(errors) <= 2:
            raise InputError(f"operator '{name}': give one or two error rules")
        return cls(tuple(errors), manipulation)

    def apply(self, item: GoldItem, seed: int) -> Edit:
        """The edit of ``item`` under ``seed``; raises Declined when a rule cannot."""
        text, first, changed, summaries = item.gold_answer, None, 0, []
        for i, rule in enumerate(self.errors):
            result = apply_rule(rule, GoldItem(item.id, item.ability, item.instruction, text,
                                               item.source, item.context), seed * 7 + i)
            if first is None:
                first = result.changes[0]
            changed += sum(max(len(c.before), len(c.after)) for c in result.changes)
            summaries.append(result.rationale)
            text = result.perturbed
        assert first is not None
        category = get_category(self.errors[0])
        ability = category.ability or Ability(item.ability)
        edit_id = f"{item.id}~{self.name}~" + hashlib.sha256(text.encode()).hexdigest()[:10]
        instance = Instance(
            id=edit_id, ability=ability, category=self.errors[0],
            instruction=item.instruction, context=item.context,
            gold_answer=item.gold_answer, perturbed_answer=text, rationale="; ".join(summaries),
            provenance=Provenance(source=item.source, original_id=item.id,
                                  generator=f"hunt:{self.name}", seed=seed))
        if self.manipulation:
            instance = manipulate(instance, self.manipulation, seed)
            instance = instance.model_copy(update={"id": edit_id})
        facts = {
            "operator": self.name,
            "family": family_of(self.errors[0]),
            "added": self.added,
            **where_facts(item.gold_answer, first.position),
            "size": size_band(changed),
            "length": length_band(len(item.gold_answer)),
        }
        return Edit(item, self.name, instance, facts)


@dataclass(frozen=True)
class Edit:
    """One edit of one gold answer, the instance it is judged as, and its facts."""

    item: GoldItem
    """The gold item edited."""
    operator: str
    """The operator's name."""
    instance: Instance
    """What the judge sees: the gold answer and the edited one."""
    facts: dict[str, str]
    """The edit along each axis of [`AXES`][fbi.hunt.AXES] but ``strategy``."""

    @property
    def id(self) -> str:
        return self.instance.id


def where_facts(text: str, position: int) -> dict[str, str]:
    """Where a change at ``position`` sits in ``text``: the third, what holds it (a list
    item, a table row, prose) and whether it is in the first sentence."""
    third = ("first", "middle", "last")[min(2, 3 * position // max(1, len(text)))]
    line_start = text.rfind("\n", 0, position) + 1
    line_end = text.find("\n", position)
    line = text[line_start:line_end if line_end != -1 else len(text)]
    inside = "a list item" if LIST_ITEM.match(line) else \
        "a table row" if line.lstrip().startswith("|") else "prose"
    spans = sentences(text)
    first_sentence = not spans or position < spans[0].end
    return {"where": third, "inside": inside,
            "sentence": "the first" if first_sentence else "a later"}


def llm_categories() -> list[str]:
    """The categories an LLM perturber makes for the hunt: those no rule can."""
    return sorted(NEEDS_LLM)


def llm_edit(item: GoldItem, category: str, perturbed: str, rationale: str,
             model: str) -> Edit | None:
    """The edit an LLM perturber made of ``item`` in ``category``; None when it changed
    nothing."""
    gold = item.gold_answer
    if perturbed.strip() == gold.strip():
        return None
    removed, inserted = changed_regions(gold, perturbed)
    if not removed and not inserted:
        return None
    changed = max(sum(e - s for s, e in removed), sum(e - s for s, e in inserted))
    name = f"{LLM}{category}"
    found = get_category(category)
    instance = Instance(
        id=f"{item.id}~{name}~" + hashlib.sha256(perturbed.encode()).hexdigest()[:10],
        ability=found.ability or Ability(item.ability), category=category,
        instruction=item.instruction, context=item.context, gold_answer=gold,
        perturbed_answer=perturbed,
        rationale=rationale,
        provenance=Provenance(source=item.source, original_id=item.id,
                              generator=f"hunt:{name}:{model}"))
    facts = {"operator": name, "family": "llm", "added": "nothing",
             **where_facts(gold, removed[0][0] if removed else 0),
             "size": size_band(changed), "length": length_band(len(gold))}
    return Edit(item, name, instance, facts)


def perturber_calls(perturber: ModelSettings, categories: list[str], per_category: int,
                    seed: int, splits: tuple[list[GoldItem], ...], log: Path) -> list:
    """The perturber's calls (the perturb stage's prompts and parsing): per category,
    ``per_category`` items of its ability, an equal share from each split."""
    calls = []
    for category in categories:
        ability = get_category(category).ability
        chosen: list[GoldItem] = []
        for split in splits:
            fitting = [i for i in split if ability is None or i.ability == ability.value]
            chosen += random.Random(f"hunt-perturb:{seed}:{category}").sample(
                fitting, min(per_category // len(splits), len(fitting)))
        if chosen:
            calls += Perturber(chosen, PerturbConfig(categories=(category,), engine="llm",
                                                     model=perturber, seed=seed),
                               log).calls()
    return calls


def llm_pool(items: list[GoldItem], records: dict) -> dict[str, list[Edit]]:
    """The perturber's edits by operator, from its calls' records (``PerturbationCall``)."""
    by_id = {i.id: i for i in items}
    pool: dict[str, list[Edit]] = {}
    for record in records.values():
        if record.status != "ok" or not record.perturbed_answer or \
                record.item_id not in by_id:
            continue
        edit = llm_edit(by_id[record.item_id], record.category, record.perturbed_answer,
                        record.rationale or "", record.model)
        if edit is not None:
            pool.setdefault(edit.operator, []).append(edit)
    return pool


def size_band(characters: int) -> str:
    return f"1–{SMALL}" if characters <= SMALL else \
        f"{SMALL + 1}–{LARGE}" if characters <= LARGE else f"over {LARGE}"


def length_band(characters: int) -> str:
    return f"short (under {SHORT} characters)" if characters < SHORT else \
        f"medium ({SHORT}–{LONG - 1} characters)" if characters < LONG else \
        f"long ({LONG}+ characters)"


#: A description: (axis, value) constraints, sorted; () stands for every plain error edit
#: (see [`matches`][fbi.hunt.matches]).
Description = tuple[tuple[str, str], ...]
#: Tries at drawing an edit that fits a description before giving up on it for now.
DRAW_ATTEMPTS = 400
SECOND_ERROR = "a second error"


def matches(description: Description, facts: dict[str, str]) -> bool:
    """Whether an edit with ``facts`` is one ``description`` stands for. A description
    that names neither an operator nor what was added stands for plain error edits (one
    error rule, nothing added): "error edits in the last third" are not padded ones."""
    fixed = dict(description)
    if "operator" not in fixed and "added" not in fixed and \
            facts.get("added", "nothing") != "nothing":
        return False
    return all(facts.get(axis) == value for axis, value in description)


class EditSpace:
    """Every edit the hunt may try: its root descriptions, and drawing an edit that fits a
    description. ``operators`` given (``--operator``): only those; else every error rule,
    each manipulation after a random error rule, two random error rules composed, and
    each ``llm/CATEGORY`` with a pool of the perturber's edits (``llm``)."""

    def __init__(self, operators: list[Operator] | None = None,
                 llm: dict[str, list[Edit]] | None = None):
        self.rules = error_rules()
        self.kinds = sorted(manipulations()[1])
        self.operators = operators
        self.llm = {name: edits for name, edits in (llm or {}).items() if edits}
        """The perturber's edits by operator (``llm/CATEGORY``)."""

    def roots(self) -> list[Description]:
        """Where the search starts: one description per operator (and, without
        ``operators``, one per manipulation kind and one for compositions)."""
        llm = [(("operator", name),) for name in sorted(self.llm)]
        if self.operators is not None:
            return [(("operator", op.name),) for op in self.operators] + llm
        return ([(("operator", rule),) for rule in self.rules]
                + [(("added", f"manipulation/{kind}"),) for kind in self.kinds]
                + [(("added", SECOND_ERROR),)] + llm)

    def operator_for(self, description: Description, rng: random.Random
                     ) -> Operator | str:
        """An operator whose edits may fit ``description`` (an ``llm/CATEGORY`` name
        for the perturber's)."""
        fixed = dict(description)
        if "operator" in fixed:
            name = fixed["operator"]
            return name if name.startswith(LLM) else Operator.parse(name)
        added, family = fixed.get("added", "nothing"), fixed.get("family")
        if family == "llm" or (added == "nothing" and family is None and self.llm
                               and rng.random() < len(self.llm) / (
                                   len(self.llm) + len(self.operators or self.rules))):
            return rng.choice(sorted(self.llm)) if self.llm else Operator((self.rules[0],))
        if self.operators:  # --operator: only those
            fitting = [op for op in self.operators if added == op.added and
                       family in (None, family_of(op.errors[0]))]
            return rng.choice(fitting or self.operators)
        first = rng.choice([r for r in self.rules if family in (None, family_of(r))]
                           or self.rules)
        if added == SECOND_ERROR:
            return Operator((first, rng.choice([r for r in self.rules if r != first])))
        if added.startswith("manipulation/"):
            return Operator((first,), added.removeprefix("manipulation/"))
        return Operator((first,))

    def draw(self, description: Description, items: list[GoldItem], rng: random.Random,
             used: set[str], seen: list[str] = ()) -> Edit | None:
        """An edit of one of ``items`` whose facts fit ``description`` and whose id is not
        in ``used``; None when ``DRAW_ATTEMPTS`` tries found none. ``seen``: the operators
        of the edits of ``description`` observed so far, drawn from as often as they
        were seen (so "small changes inside list items" is drawn from the operators that
        make them, in the proportions the search saw)."""
        edit_facts = tuple((a, v) for a, v in description if a != "strategy")
        allowed = {item.id for item in items}
        for _ in range(DRAW_ATTEMPTS):
            operator = (rng.choice(seen) if seen and rng.random() < 0.9 else
                        self.operator_for(edit_facts, rng))
            if isinstance(operator, str) and not operator.startswith(LLM):
                operator = Operator.parse(operator)
            if isinstance(operator, str):  # the perturber's pool
                pool = [e for e in self.llm.get(operator, ()) if e.item.id in allowed
                        and e.id not in used and matches(edit_facts, e.facts)]
                if pool:
                    return rng.choice(pool)
                continue
            item = rng.choice(items)
            try:
                edit = operator.apply(item, rng.randrange(1 << 30))
            except Declined:
                continue
            if edit.id not in used and matches(edit_facts, edit.facts):
                return edit
        return None


def describe(description: Description) -> str:
    """A description in words: "number-errors edits, inside a list item"."""
    fixed = dict(description)
    operator, family = fixed.pop("operator", None), fixed.pop("family", None)
    head = f"{operator} edits" if operator else \
        "the perturber's edits" if family == "llm" else \
        f"edits by a {family} rule" if family else "error edits"
    added = fixed.pop("added", None)
    if added and added != "nothing" and not operator:
        head += f" with {added}"
    tail = [PHRASES[axis].format(value) for axis, value in sorted(fixed.items())]
    return ", ".join([head, *tail])


def operator_of(description: Description) -> str:
    fixed = dict(description)
    if "operator" in fixed:
        return fixed["operator"]
    if "family" in fixed:
        return f"family:{fixed['family']}"
    if fixed.get("added", "nothing") != "nothing":
        return fixed["added"]
    return "any error rule"


def name_of(description: Description) -> str:
    """A short name for files and the ``hunt/NAME`` category: the description in words,
    as a slug ("number-errors-edits-inside-a-list-item")."""
    name = re.sub(r"[^a-z0-9+]+", "-", describe(description).lower()).strip("-")
    return name or "error-edits"
