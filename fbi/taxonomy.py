"""The FBI taxonomy: 4 abilities, 22 perturbation categories and score-invariant edits.

Source: Doddapaneni et al., "Finding Blind Spots in Evaluator LLMs with Interpretable
Checklists" (EMNLP 2024), Table 2. The descriptions are our own words.

This module imports only fbi.errors (a leaf), so every other part can depend on it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from fbi.attack_texts import MASTER_KEY_PREFIX, PREFIXED, attack_texts
from fbi.errors import UnknownName


class Ability(str, Enum):
    """The four abilities FBI tests a judge on, ``preference``: the pairs of a
    preference benchmark (RewardBench, LLMBar, ...), and ``agent``: trajectories of
    tool-using agents (issue 54) — the last two beside the FBI taxonomy, never pooled
    with it (issue 24)."""

    FACTUAL = "factual"
    INSTRUCTION_FOLLOWING = "instruction-following"
    LONG_FORM = "long-form"
    REASONING = "reasoning"
    PREFERENCE = "preference"
    AGENT = "agent"

    @property
    def axis(self) -> str:
        """The evaluation axis the Axis strategies ask the judge to grade on."""
        return _AXES[self]

    @property
    def short(self) -> str:
        """The column heading the paper uses (LF / F / IF / R)."""
        return _SHORT[self]


_AXES = {
    Ability.FACTUAL: "hallucination",
    Ability.INSTRUCTION_FOLLOWING: "task quality",
    Ability.LONG_FORM: "content quality",
    Ability.REASONING: "reasoning accuracy",
    # a preference pair asks which answer does the task better: the task-quality axis
    Ability.PREFERENCE: "task quality",
    # a trajectory is judged on whether it did the task, as the task asked
    Ability.AGENT: "task quality",
}
_SHORT = {
    Ability.FACTUAL: "F",
    Ability.INSTRUCTION_FOLLOWING: "IF",
    Ability.LONG_FORM: "LF",
    Ability.REASONING: "R",
    Ability.PREFERENCE: "Pref",
    Ability.AGENT: "Ag",
}

#: The paper's four abilities, in its column order (LF, F, IF, R).
FBI_ABILITIES = (Ability.LONG_FORM, Ability.FACTUAL, Ability.INSTRUCTION_FOLLOWING,
                 Ability.REASONING)
#: A preference benchmark's subsets are categories named ``preference/SUBSET``.
PREFERENCE_PREFIX = "preference/"
#: A blind spot `fbi hunt` confirmed is a category named ``hunt/NAME`` (its vetted edits).
HUNT_PREFIX = "hunt/"

#: TRAIL's three top-level classes of agent errors (Deshpande et al., "TRAIL: Trace
#: Reasoning and Agentic Issue Localization", 2025, §3: its taxonomy of 841 annotated
#: errors in 148 traces), by the name fbi reports them under.
TRAIL_CLASSES = {
    "reasoning": "Reasoning errors (hallucination, information processing, decisions, "
                 "output)",
    "planning-and-coordination": "Planning and coordination errors (context and task "
                                 "management)",
    "system-execution": "System execution errors (configuration, API, resources)",
}

SCORE_INVARIANT = "score-invariant"
#: A trajectory's planted error is a category named ``trajectory/KIND`` (issue 54).
TRAJECTORY_PREFIX = "trajectory/"


@dataclass(frozen=True)
class Category:
    """One perturbation category.

    ``ability`` is None for score-invariant edits, which apply to answers of any ability.
    ``extra`` marks categories found in the original release but outside the paper's 22,
    and manipulations;
    they are loaded and labelled but left out of the 22-category totals.
    """

    name: str
    """The name fbi and its files use (``entity``, ``spelling``)."""
    display_name: str
    """The name the paper's tables use (``Entity``, ``Spelling``)."""
    ability: Ability | None
    """The ability it tests (LF, F, IF, R); None for score-invariant edits."""
    description: str
    """What the perturbation does to an answer, in one sentence."""
    lowers_score: bool = True
    """Whether a good judge should score the perturbed answer lower (False for
    score-invariant edits)."""
    extra: bool = False
    """In the original release but outside the paper's 22 categories."""
    family: str = ""
    """``manipulation`` for text added to an already perturbed answer to sway the judge
    (`fbi.perturb._manipulate`): extra, but judged whenever a dataset holds it; ``hunt``
    for a blind spot `fbi hunt` confirmed (``hunt/NAME``): judged and reported like the
    paper's categories; ``trajectory`` for an error planted in an agent's trajectory
    (``trajectory/KIND``, ability ``agent``): judged and reported in its own column, never
    among the paper's 22; empty otherwise."""
    trail: str = ""
    """A trajectory category's class in TRAIL's taxonomy of agent errors (`TRAIL_CLASSES`);
    empty for the rest."""


CATEGORIES: tuple[Category, ...] = (
    # long-form writing
    Category("grammar", "Grammar", Ability.LONG_FORM,
             "Grammatical mistakes such as wrong agreement, tense or articles."),
    Category("spelling", "Spelling", Ability.LONG_FORM,
             "Misspelled words: swapped, dropped or wrong letters."),
    Category("consistency", "Consistency", Ability.LONG_FORM,
             "A detail contradicts something stated elsewhere in the same answer."),
    Category("chronology", "Chronology", Ability.LONG_FORM,
             "Events or steps told in an order that breaks their real sequence."),
    Category("coherence", "Coherence", Ability.LONG_FORM,
             "Sentences or paragraphs no longer connect logically; the flow is broken."),
    Category("comprehensiveness", "Comprehensiveness", Ability.LONG_FORM,
             "An important part of a complete answer is left out."),
    # factual
    Category("contextual", "Contextual", Ability.FACTUAL,
             "A fact is changed so that it no longer fits the context given in the question."),
    Category("entity", "Entity", Ability.FACTUAL,
             "A named person, place, organisation or thing is swapped for a wrong one."),
    Category("incorrect-fact", "Incorrect Fact", Ability.FACTUAL,
             "A plausible but false statement replaces a true one."),
    Category("number-errors", "Number Errors", Ability.FACTUAL,
             "A date, quantity or other number is changed to a wrong value."),
    Category("opposite-fact", "Opposite Fact", Ability.FACTUAL,
             "A claim is turned into its negation or opposite."),
    Category("remove-fact", "Remove Fact", Ability.FACTUAL,
             "A key fact needed to answer the question is deleted."),
    # instruction following
    Category("do-less", "Do Less", Ability.INSTRUCTION_FOLLOWING,
             "Part of what the instruction asked for is not done."),
    Category("do-more", "Do More", Ability.INSTRUCTION_FOLLOWING,
             "Content the instruction did not ask for, or forbade, is added."),
    Category("ignore-format", "Ignore Format", Ability.INSTRUCTION_FOLLOWING,
             "The output format the instruction requested is not followed."),
    Category("sequence-errors", "Sequence Errors", Ability.INSTRUCTION_FOLLOWING,
             "Requested items or steps appear in the wrong order."),
    Category("assumptions", "Assumptions", Ability.INSTRUCTION_FOLLOWING,
             "The answer assumes something the instruction never said and acts on it."),
    # reasoning
    Category("calculations", "Calculation", Ability.REASONING,
             "An arithmetic step gives a wrong result."),
    Category("copying-numbers", "Copying Numbers", Ability.REASONING,
             "A number from the question is copied wrongly into the working."),
    Category("final-errors", "Final Errors", Ability.REASONING,
             "The working is right but the final answer stated is wrong."),
    Category("incorrect-units", "Incorrect Units", Ability.REASONING,
             "A quantity carries the wrong unit or a wrong unit conversion."),
    Category("wrong-formula", "Wrong Formula", Ability.REASONING,
             "The solution applies an incorrect formula or method."),
    # edits that must not cost a point
    Category(SCORE_INVARIANT, "Score Invariant", None,
             "A rewrite that keeps every fact and requirement; a fair judge keeps the score.",
             lowers_score=False),
    # found in the original release, outside the paper's 22 categories
    Category("formatting", "Formatting (extra)", Ability.LONG_FORM,
             "Markdown formatting removed or changed while the content stays.",
             lowers_score=False, extra=True),
    Category("superficial", "Superficial (extra)", Ability.LONG_FORM,
             "Wordier phrasing with no change of content.",
             lowers_score=False, extra=True),
    # fbi's own (issues 24 and 65): a perturbed answer with text meant to sway the judge
    # added (the planted error is still there, so a judge that stops seeing it was
    # manipulated); an answer that is only a master key, or a wrong answer with one put
    # before it. Their names and descriptions are perturbations/manipulations.yaml's.
    *(Category(f"manipulation/{kind.kind}", kind.name, None, kind.description,
               extra=True, family="manipulation")
      for kind in attack_texts().kinds.values()),
    *(Category(f"{MASTER_KEY_PREFIX}{family.family}", family.name, None, family.description,
               extra=True, family="master-key")
      for family in attack_texts().master_keys.values()),
    Category(f"{MASTER_KEY_PREFIX}{PREFIXED}", "Master key before a wrong answer", None,
             "A reasoning opener put before an answer that holds a planted error.",
             extra=True, family="master-key"),
    # trajectories of tool-using agents (issue 54): one error planted in a trajectory
    # that did its task (`fbi.perturb.perturb_trajectory`)
    # TRAIL's class of each (its subcategory in the comment): where TRAIL would file the
    # step the rule changes
    *(Category(f"{TRAJECTORY_PREFIX}{kind}", name, Ability.AGENT, description,
               family="trajectory", trail=trail)
      for kind, name, description, trail in (
          ("wrong-tool", "Wrong tool", "A step calls another tool than the task needs.",
           "reasoning"),  # decision making: tool selection errors
          ("wrong-argument", "Wrong argument",
           "A tool is called with a wrong or invented argument value.",
           "reasoning"),  # hallucination: tool-related
          ("skipped-step", "Skipped step",
           "A step the task needs is left out; the rest goes on as if it was done.",
           "planning-and-coordination"),  # task management: orchestration
          ("swapped-steps", "Swapped steps",
           "A step runs before the step whose result it depends on.",
           "planning-and-coordination"),  # task management: orchestration
          ("misreported-result", "Misreported result",
           "The agent reports a value other than the one the tool returned.",
           "reasoning"),  # information processing: tool output misinterpretation
          ("ignored-error", "Ignored error",
           "A tool fails and the agent carries on as if it had succeeded.",
           "system-execution"),  # API issues, resource management: the failure passed
          ("contradicting-answer", "Contradicting answer",
           "The final answer states what the tool results contradict.",
           "reasoning"),  # hallucination: language-only
          ("unconfirmed-action", "Unconfirmed action",
           "An irreversible action is taken without the confirmation the task asked.",
           "reasoning"),  # output generation: instruction non-compliance
          ("premature-answer", "Premature answer",
           "The agent answers, claiming success, before the task's steps are done.",
           "planning-and-coordination"),  # task management: goal deviation
          ("redundant-loop", "Redundant loop",
           "The agent repeats the same call again and again to no purpose.",
           "planning-and-coordination"),  # context management: resource abuse
          ("phantom-tool", "Phantom tool",
           "The final answer cites a tool the agent never called.",
           "reasoning"),  # hallucination: tool-related
          ("stale-result", "Stale result",
           "The answer uses a value a later call of the same tool changed.",
           "planning-and-coordination"),  # context management: context handling
          ("goal-drift", "Goal drift",
           "The agent goes beyond the task: an irreversible action nobody asked for.",
           "planning-and-coordination"),  # task management: goal deviation
      )),
)

_BY_NAME = {c.name: c for c in CATEGORIES}

#: The paper's 22 perturbation categories, in Table 2 order.
PERTURBATION_CATEGORIES = tuple(c for c in CATEGORIES if c.lowers_score and not c.extra
                                and c.family != "trajectory")

#: The paper's eleven evaluation strategies (§4), by their template names, in the order
#: of its tables: single answer, pairwise, reference-guided.
PAPER_STRATEGIES = ("vanilla_star", "vanilla", "rubric", "axis", "axis_rubric",
                    "pairwise_star", "pairwise", "pairwise_rules", "pairwise_axis",
                    "pairwise_axis_rules", "reference")


_LEGEND = {"LF": "LF long-form", "F": "F factual", "IF": "IF instruction-following",
           "R": "R reasoning", "SI": "SI score-invariant edits",
           "Pref": "Pref preference pairs, chosen against rejected",
           "Ag": "Ag agents' trajectories"}


def ability_legend(columns) -> str:
    """The column abbreviations a rate table uses, spelled out under it."""
    return ", ".join(words for column, words in _LEGEND.items() if column in columns)


#: The legend of the paper's columns.
ABILITY_LEGEND = ability_legend(("LF", "F", "IF", "R", "SI"))
#: Abilities reported beside the FBI taxonomy, each in its own column, never pooled.
BESIDE_ABILITIES = (Ability.PREFERENCE, Ability.AGENT)


def rate_columns(present: set[str]) -> tuple[str, ...]:
    """The ability columns of a rate table whose rates fall in the columns ``present``:
    the paper's LF, F, IF, R and SI when FBI instances are there (or nothing is); else
    SI alone when a trajectory's rewrites are; then Pref and Ag, beside, never pooled."""
    beside = tuple(a.short for a in BESIDE_ABILITIES if a.short in present)
    if present & {"LF", "F", "IF", "R"} or not beside:
        return ("LF", "F", "IF", "R", "SI", *beside)
    return (("SI",) if "SI" in present else ()) + beside


def strategy_order(strategies) -> list[str]:
    """The paper's order, then any other strategy by name: every table lists them so."""
    paper = PAPER_STRATEGIES
    return sorted(strategies, key=lambda s: (paper.index(s) if s in paper else len(paper), s))


def category_order(names) -> list[str]:
    """The paper's 22 in Table 2's order, then a preference set's subsets and the
    blind spots of `fbi hunt` by name, then a trajectory's categories (issue 54): the
    rows of every per-category table (other extra categories and score-invariant left
    out)."""
    paper = [c.name for c in PERTURBATION_CATEGORIES]
    trajectory = [c.name for c in CATEGORIES if c.family == "trajectory"]
    return [n for n in paper if n in names] + sorted(
        n for n in names if n.startswith((PREFERENCE_PREFIX, HUNT_PREFIX))) + [
        n for n in trajectory if n in names]


def category_names(include_extra: bool = False) -> list[str]:
    """The FBI taxonomy's categories (the paper's 22 and score-invariant); with
    ``include_extra``, every category fbi knows."""
    return [c.name for c in CATEGORIES
            if include_extra or not (c.extra or c.family == "trajectory")]


def did_you_mean(name: str, valid: list[str]) -> str:
    """A short 'did you mean' hint, or '' when nothing is close."""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
    return f" Did you mean '{close[0]}'?" if close else ""


def unknown_name_message(kind: str, name: str, valid: list[str]) -> str:
    return f"Unknown {kind} '{name}'.{did_you_mean(name, valid)} Valid: {', '.join(valid)}."


def categories_named(pattern: str) -> list[str]:
    """The categories a name stands for: itself, or with ``FAMILY/*`` every category of
    the family (``manipulation/*``)."""
    if pattern.endswith("/*"):
        family = pattern[:-2]
        found = [c.name for c in CATEGORIES if c.family == family]
        if found:
            return found
    return [get_category(pattern).name]


def get_category(name: str) -> Category:
    """Look a category up by name; raises UnknownName with a did-you-mean. Any
    ``preference/SUBSET`` is a category: a subset of a preference benchmark."""
    try:
        return _BY_NAME[name]
    except KeyError:
        if name.startswith(PREFERENCE_PREFIX) and len(name) > len(PREFERENCE_PREFIX):
            return _preference_category(name)
        if name.startswith(HUNT_PREFIX) and len(name) > len(HUNT_PREFIX):
            return _hunt_category(name)
        raise UnknownName(
            unknown_name_message("category", name, category_names(include_extra=True))
        ) from None


@lru_cache(maxsize=1024)
def _preference_category(name: str) -> Category:
    subset = name[len(PREFERENCE_PREFIX):]
    return Category(name, subset, Ability.PREFERENCE,
                    f"Pairs of the preference subset '{subset}': the chosen answer plays "
                    "gold, the rejected one perturbed.", family="preference")


@lru_cache(maxsize=1024)
def _hunt_category(name: str) -> Category:
    finding = name[len(HUNT_PREFIX):]
    return Category(name, f"Hunt: {finding}", None,
                    f"Edits of the blind spot 'fbi hunt' confirmed as '{finding}', vetted "
                    "by people.", family="hunt")


def get_ability(name: str) -> Ability:
    try:
        return Ability(name)
    except ValueError:
        raise UnknownName(
            unknown_name_message("ability", name, [a.value for a in Ability])
        ) from None


def categories_of(ability: Ability) -> list[Category]:
    return [c for c in PERTURBATION_CATEGORIES if c.ability is ability]
