"""The edits a hunt makes: operators, and placing an edit where a description says
(issues 40 and 49).

An operator is one of fbi's error rules (`fbi.perturb.rules`: each error category a rule
can make honestly), one of the hunt's own (``negation``: a negation put in or taken out;
``entity-swap``: a named entity replaced by another of the same answer; ``order-swap``:
two neighbouring sentences or list items exchanged; ``typo``: one word misspelled, which
a short span can always take), two error operators composed
(``grammar+spelling``), or an error operator followed by a manipulation
(``chronology+manipulation/padding``). A manipulation alone (``manipulation/padding``)
adds its text to the *correct* answer: it tests whether the judge rewards the text
(`fbi.hunt.Population`), not whether it misses an error.

**Placement** is the hunt's intervention: asked for a place
([`PLACES`][fbi.hunt.PLACES], e.g. ``in_parentheses``), an operator edits only the text
of one such span of the gold answer — the rule runs on the span as if it were the whole
answer, and the span's new text is put back — so a suspicion ("edits inside parentheses
are missed") is tested with edits made for it instead of waiting for chance to supply
them. A rule that finds nothing to change in any span declines.

With a perturber model (``--perturber``), the categories no rule can make honestly
(entity, incorrect-fact, contextual, ...) are operators too, ``llm/CATEGORY``: a pool of
the perturber's edits made before the search (`fbi.hunt._hunt`), drawn from; they cannot
be placed.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from fbi.attack_texts import MASTER_KEY_PREFIX, MasterKeyFamily, attack_texts
from fbi.errors import InputError
from fbi.hunt._predicates import EditView
from fbi.hunt._structure import PLACES, places_of
from fbi.perturb import is_manipulation, manipulate, manipulations
from fbi.perturb.rules import NEEDS_LLM, Change, Declined, RuleResult, apply_rule
from fbi.perturb.rules import family_of as rule_family
from fbi.perturb.rules import rules as perturb_rules
from fbi.perturb.rules.negation import NEGATIONS as _NEGATABLE
from fbi.perturb.rules.order import swap_list_items, swap_sentences
from fbi.perturb.rules.spelling import typo
from fbi.records import GoldItem, Instance, Provenance
from fbi.registry import Registry
from fbi.taxonomy import Ability, get_category, unknown_name_message
from fbi.trajectories import changed_step

LLM = "llm/"  # an LLM perturber's operator: llm/CATEGORY
PROPOSAL = "proposal/"  # the describer's edits for its K-th hypothesis: proposal/K
STRING = "string/"  # the string search's K-th string in its place: string/K


def is_pool(name: str) -> bool:
    """Whether an operator's edits come from a model's pool (a perturber's or the
    describer's), not from a rule."""
    return name.startswith((LLM, PROPOSAL, STRING))
MANIPULATION = "manipulation/"
COMPOSITION = "+"
#: Spans of a place tried before a placed rule declines.
PLACED_TRIES = 6

HuntRule = Callable[[GoldItem, random.Random], RuleResult]


@dataclass(frozen=True)
class HuntOperator:
    """An error operator of the hunt's own, beyond the rule engine's."""

    edit: HuntRule
    """The gold item and a seeded ``random.Random`` → a `RuleResult` (or `Declined`)."""
    family: str
    """Its family (``negation``, ``typo``, ``trajectory``, …)."""
    whole: bool = False
    """It replaces the whole answer (a master key): never placed, composed or followed
    by a manipulation."""


#: The hunt's own error operators by name: a [`Registry`][fbi.registry.Registry] whose
#: ``fbi.operators`` entry points are the modules defining them (fbi's own:
#: pyproject.toml), a plug-in package's the same.
HUNT_RULES: Registry[HuntOperator] = Registry("hunt operator", "fbi.operators")
#: The family of the trajectory rules' operators (`fbi.hunt._trajectory_edits`): a hunt
#: over trajectories uses these alone, a hunt over answers never.
TRAJECTORY_FAMILY = "trajectory"


def hunt_rule(name: str, family: str, whole: bool = False
              ) -> Callable[[HuntRule], HuntRule]:
    """Register an error operator of the hunt's own: a function of the gold item and a
    seeded ``random.Random`` that returns a `RuleResult` or raises `Declined`;
    ``whole``: it replaces the whole answer."""
    def register(function: HuntRule) -> HuntRule:
        HUNT_RULES.add(name, HuntOperator(function, family, whole))
        return function
    return register


def replaces_whole(error: str) -> bool:
    """Whether an error operator replaces the whole answer (see `HuntOperator.whole`)."""
    known = HUNT_RULES.get(error, None)
    return known is not None and known.whole


# ------------------------------------------------------------------ the hunt's own rules

_CONTRACTIONS = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were",
                 "don't": "do", "doesn't": "does", "didn't": "did", "can't": "can",
                 "won't": "will", "shouldn't": "should", "couldn't": "could",
                 "wouldn't": "would", "hasn't": "has", "haven't": "have", "cannot": "can"}


@hunt_rule("negation", "negation")
def negation(item: GoldItem, rng: random.Random) -> RuleResult:
    """A negation put in ("is" → "is not") or taken out ("is not" → "is")."""
    text = item.gold_answer
    candidates: list[tuple[int, int, str, str]] = []
    for match in re.finditer(r"\b([a-z]+) not\b", text):
        if match.group(1) in _NEGATABLE:
            candidates.append((match.start(), match.end(), match.group(0), match.group(1)))
    for match in re.finditer(r"\b(" + "|".join(map(re.escape, _CONTRACTIONS)) + r")\b",
                             text, re.IGNORECASE):
        word = match.group(0)
        plain = _CONTRACTIONS[word.lower()]
        plain = plain.capitalize() if word[:1].isupper() else plain
        candidates.append((match.start(), match.end(), word, plain))
    for match in re.finditer(r"\b(" + "|".join(_NEGATABLE) + r")\b(?! not\b)(?!n't)",
                             text, re.IGNORECASE):
        word = match.group(0)
        negated = _NEGATABLE.get(word.lower())
        if negated:
            negated = negated.capitalize() if word[:1].isupper() else negated
            candidates.append((match.start(), match.end(), word, negated))
    if not candidates:
        raise Declined("no auxiliary verb to negate and no negation to remove")
    start, end, before, after = rng.choice(candidates)
    return RuleResult(text[:start] + after + text[end:], (Change(before, after, start),),
                      "a negation put in or taken out")


_ENTITY = re.compile(r"(?<![\w.])(?:[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2})\b")
_NOT_NAMES = frozenset("The A An This That These Those It In On At For By If When While "
                       "However Also Some Many Most Each Every Step Note First Second Third "
                       "Finally Then Next Here There They We You I He She Yes No And But Or "
                       "So To Of As With From Use Make Add Mix Is Are".split())


def named_entities(text: str) -> list[tuple[int, int, str]]:
    """Capitalised words or names of up to three words that do not open a sentence or a
    line."""
    found = []
    for match in _ENTITY.finditer(text):
        before = text[:match.start()].rstrip(" *_\"'(")
        if not before or before[-1] in ".!?:\n#|" or re.search(r"(^|\n)\s*(\d+[.)]|[-*•])$",
                                                              before):
            continue
        if match.group(0).split()[0] in _NOT_NAMES:
            continue
        found.append((match.start(), match.end(), match.group(0)))
    return found


@hunt_rule("entity-swap", "entities")
def entity_swap(item: GoldItem, rng: random.Random) -> RuleResult:
    """A named entity replaced by another one the same answer names."""
    entities = named_entities(item.gold_answer)
    names = sorted({name for _, _, name in entities})
    if len(names) < 2:
        raise Declined("fewer than two different named entities")
    start, end, name = rng.choice(entities)
    other = rng.choice([n for n in names if n != name])
    text = item.gold_answer
    return RuleResult(text[:start] + other + text[end:], (Change(name, other, start),),
                      "a named entity replaced by another")


@hunt_rule("typo", "spelling")
def one_typo(item: GoldItem, rng: random.Random) -> RuleResult:
    """One word of four letters or more misspelled (the spelling rule misspells two to
    four, and needs longer words: a short span — a quotation, a heading — takes this)."""
    words = [m for m in re.finditer(r"[A-Za-z]{4,}", item.gold_answer)]
    if not words:
        raise Declined("no word of four letters or more")
    match = rng.choice(words)
    wrong = typo(match.group(0), rng)
    text = item.gold_answer
    return RuleResult(text[:match.start()] + wrong + text[match.end():],
                      (Change(match.group(0), wrong, match.start()),), "a word misspelled")


@hunt_rule("order-swap", "order")
def order_swap(item: GoldItem, rng: random.Random) -> RuleResult:
    """Two neighbouring list items, or two neighbouring sentences, exchanged."""
    result = swap_list_items(item, rng, "two items exchanged") if rng.random() < 0.5 \
        else None
    result = result or swap_sentences(item, rng, "two sentences exchanged", need_time=False) \
        or swap_list_items(item, rng, "two items exchanged")
    if result is None:
        raise Declined("no two sentences or list items to exchange")
    return result


def _master_key_rule(family: MasterKeyFamily) -> HuntRule:
    def replace_by_key(item: GoldItem, rng: random.Random) -> RuleResult:
        key = rng.choice(family.keys)
        return RuleResult(key, (Change(item.gold_answer, key, 0),),
                          f"the answer replaced by the master key {key!r} ({family.name})")
    replace_by_key.__doc__ = f"The answer replaced by a master key: {family.description}"
    return replace_by_key


# Zhao et al. 2025 (§3): an answer that is only a master key, graded against the
# reference; one operator per family of perturbations/manipulations.yaml, named as the
# master-key suite's categories (``master-key/opener``). An opener put *before* an
# answer is the manipulation ``opener-prefix``.
for _family in attack_texts().master_keys.values():
    hunt_rule(f"{MASTER_KEY_PREFIX}{_family.family}", "master-key", whole=True)(
        _master_key_rule(_family))


# ------------------------------------------------------------------ operators

def error_operators(trajectories: bool = False) -> list[str]:
    """The error operators of a hunt over answers (the rule engine's error categories
    and the hunt's own), or of a hunt over agents' trajectories (the trajectory rules)."""
    own = sorted(name for name, operator in HUNT_RULES.items()
                 if (operator.family == TRAJECTORY_FAMILY) == trajectories)
    if trajectories:
        return own
    return sorted(name for name in perturb_rules() if get_category(name).lowers_score) + own


def family_of(error: str) -> str:
    """An error operator's family: its rule module's (numbers, order, ...), the hunt's
    own, or ``llm`` for a perturber's."""
    if error.startswith(LLM):
        return "llm"
    if error.startswith(PROPOSAL):
        return "describer"
    if error.startswith(STRING):
        return "string"
    known = HUNT_RULES.get(error, None)
    return known.family if known is not None else rule_family(error)


def invariant_rules() -> list[str]:
    """The score-invariant rewrites (the sway population's baseline)."""
    return sorted(name for name in perturb_rules() if not get_category(name).lowers_score)


def llm_categories() -> list[str]:
    """The categories an LLM perturber makes for the hunt: those no rule can."""
    return sorted(NEEDS_LLM)


@dataclass(frozen=True)
class Operator:
    """Error operators applied in turn, optionally followed by a manipulation; or a
    manipulation alone."""

    errors: tuple[str, ...]
    """The error operators, in the order applied (none, one, or two composed)."""
    manipulation: str | None = None
    """The manipulation kind added afterwards, if any."""

    @property
    def name(self) -> str:
        parts = [*self.errors] + ([MANIPULATION + self.manipulation]
                                   if self.manipulation else [])
        return COMPOSITION.join(parts)

    @property
    def sway(self) -> bool:
        """A manipulation alone: the answer stays correct."""
        return not self.errors

    @property
    def placeable(self) -> bool:
        return bool(self.errors) and not is_pool(self.errors[0]) and \
            family_of(self.errors[0]) != TRAJECTORY_FAMILY and \
            not replaces_whole(self.errors[0])

    @classmethod
    def parse(cls, name: str) -> Operator:
        """``number-errors``, ``grammar+spelling``, ``chronology+manipulation/padding``,
        ``manipulation/padding``, ``llm/entity``; an unknown part is an InputError with
        the valid names."""
        parts = name.split(COMPOSITION)
        known, kinds = error_operators() + error_operators(True), manipulations()[1]
        if name in invariant_rules():  # a score-invariant rewrite: the sway baseline
            return cls((name,))
        errors: list[str] = []
        manipulation = None
        for i, part in enumerate(parts):
            if is_manipulation(part) and part.removeprefix(MANIPULATION) in kinds \
                    and i == len(parts) - 1:
                manipulation = part.removeprefix(MANIPULATION)
            elif part in known or (len(parts) == 1 and (
                    (part.startswith(LLM) and part.removeprefix(LLM) in llm_categories())
                    or (part.startswith((PROPOSAL, STRING)) and
                        part.partition("/")[2].isdigit()))):
                errors.append(part)
            else:
                valid = known + [MANIPULATION + k for k in kinds] + \
                    [LLM + c for c in llm_categories()]
                raise InputError(unknown_name_message("operator", part, valid) +
                                 " A manipulation comes last (number-errors+manipulation/"
                                 "padding) or alone (manipulation/padding).")
        if any(replaces_whole(e) for e in errors) and (len(errors) > 1 or manipulation):
            whole = next(e for e in errors if replaces_whole(e))
            raise InputError(f"operator '{name}': {whole} replaces the whole answer; it "
                             "takes no second error or "
                             "manipulation (an opener before an error: "
                             "ERROR+manipulation/opener-prefix)")
        if len(errors) > 2 or (not errors and manipulation is None):
            raise InputError(f"operator '{name}': give one or two error operators, "
                             "optionally followed by a manipulation, or a manipulation "
                             "alone")
        return cls(tuple(errors), manipulation)

    def apply(self, item: GoldItem, seed: int, placement: str | None = None) -> Edit:
        """The edit of ``item`` under ``seed``, made inside a ``placement`` span when one
        is asked for; raises Declined when no rule can."""
        if placement is not None and not self.placeable:
            raise Declined(f"{self.name} edits cannot be placed")
        text, summaries = item.gold_answer, []
        for i, error in enumerate(self.errors):
            if i and item.trajectory is not None:
                raise Declined("trajectory edits are not composed")
            current = replace(item, gold_answer=text)
            edited, summary = _run(error, current, seed * 7 + i,
                                   placement if i == 0 else None)
            summaries.append(summary)
            text = edited
        if self.errors and text == item.gold_answer:  # the second undid the first
            raise Declined("the edits cancel out")
        return Edit(item, self, text, seed, placement, "; ".join(summaries))


def _run(error: str, item: GoldItem, seed: int, placement: str | None) -> tuple[str, str]:
    """One error operator's edited answer and rationale, inside a ``placement`` span
    when one is asked for."""
    if placement is None:
        result = _rule(error, item, seed)
        return result.perturbed, result.rationale
    gold = item.gold_answer
    spans = list(places_of(gold).get(placement) or ())
    random.Random(f"place:{seed}:{item.id}:{placement}").shuffle(spans)
    for start, end in spans[:PLACED_TRIES]:
        region = replace(item, gold_answer=gold[start:end])
        try:
            result = _rule(error, region, seed)
        except Declined:
            continue
        rationale = f"{result.summary} ({PLACES[placement].phrase})"
        return gold[:start] + result.perturbed + gold[end:], rationale
    raise Declined(f"no {placement} span where {error} can edit")


def _rule(error: str, item: GoldItem, seed: int) -> RuleResult:
    if error in HUNT_RULES:
        result = HUNT_RULES[error].edit(item, random.Random(f"{seed}:{error}:{item.id}"))
        if result.perturbed == item.gold_answer:
            raise Declined("the rule found nothing to change")
        return result
    return apply_rule(error, item, seed)


@dataclass(frozen=True)
class Edit:
    """One edit of one gold answer."""

    item: GoldItem
    """The gold item edited."""
    operator: Operator
    """What made it."""
    edited: str
    """The gold answer with the error edit (the gold answer itself for a manipulation
    alone)."""
    seed: int
    """The seed it was made with."""
    placement: str | None = None
    """The place it was asked to be made in, if any."""
    rationale: str = ""
    """What the operator changed, in words."""
    generator: str = ""
    """Who made it, for a perturber's edit (``hunt:llm/entity:MODEL``)."""

    @property
    def id(self) -> str:
        digest = hashlib.sha256(f"{self.edited}\x1f{self.operator.name}".encode()
                                ).hexdigest()[:10]
        return f"{self.item.id}~{self.operator.name}~{digest}"

    @cached_property
    def instance(self) -> Instance:
        """What the judge sees: the gold answer and the edited one (with any manipulation
        added)."""
        item, operator = self.item, self.operator
        first = operator.errors[0] if operator.errors else None
        # the hunt's own operators have no category of the taxonomy; the trajectory
        # rules' and the master keys' do (trajectory/KIND, master-key/FAMILY), as the
        # rule engine's and a perturber's
        own = first in HUNT_RULES and HUNT_RULES[first].family not in (
            TRAJECTORY_FAMILY, "master-key")
        if first is None or own or first.startswith((PROPOSAL, STRING)):
            category = f"hunt/{operator.name.replace('/', '-')}"
            ability = Ability(item.ability)
        else:
            category = first.removeprefix(LLM)
            ability = get_category(category).ability or Ability(item.ability)
        instance = Instance(
            id=self.id, ability=ability, category=category, instruction=item.instruction,
            context=item.context, gold_answer=item.gold_answer,
            perturbed_answer=self.edited, rationale=self.rationale or None,
            provenance=Provenance(source=item.source, original_id=item.id,
                                  generator=self.generator or f"hunt:{operator.name}",
                                  seed=self.seed, changed_step=changed_step(
                                      item.gold_answer, self.edited)
                                  if item.trajectory else None))
        if operator.manipulation:
            instance = manipulate(instance, operator.manipulation, self.seed)
            instance = instance.model_copy(update={"id": self.id})
        return instance

    def view(self, strategy: str | None = None, order: str | None = None) -> EditView:
        """The edit as predicates see it."""
        return EditView(self.item.question, self.item.gold_answer, self.edited,
                        self.shown, self.item.ability, self.operator.name,
                        self.operator.errors, self.operator.manipulation, strategy, order)

    @cached_property
    def shown(self) -> str:
        """The answer the judge sees."""
        return self.instance.perturbed_answer


def pool_edit(item: GoldItem, operator: str, perturbed: str, rationale: str,
              model: str) -> Edit | None:
    """An edit a model made of ``item`` for a pool operator (``llm/CATEGORY``,
    ``proposal/K``); None when it changed nothing."""
    if perturbed.strip() == item.gold_answer.strip():
        return None
    return Edit(item, Operator((operator,)), perturbed, 0, None, rationale,
                f"hunt:{operator}:{model}")
