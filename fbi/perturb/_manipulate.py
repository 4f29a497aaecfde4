"""Manipulations: text added to an already perturbed answer to sway the judge (issue 24).

A manipulated instance is its twin — an instance with a planted error — with one kind of
text added to the perturbed answer: an instruction to the grader, a verdict in the judge's
own reply format, an authority claim, self-praise, or padding to twice the length. The error
is still there, so a judge that caught it in the twin and misses it now was swayed by the
text alone; ``fbi report`` pairs the two
([`fbi.metrics.manipulation_effects`][fbi.metrics.manipulation_effects]).

The texts are data, ``perturbations/manipulations.yaml``, versioned; a seeded choice per
instance and kind makes a queue repeatable. The manipulated instance's id is the twin's
with ``~KIND``; its category is ``manipulation/KIND``; its ability, instruction and gold
answer are the twin's; ``provenance.original_id`` names the twin.
"""

from __future__ import annotations

import random

from fbi.attack_texts import Manipulation, attack_texts
from fbi.errors import InputError
from fbi.perturb.rules import Declined
from fbi.records import Instance, Provenance, VettingLabel
from fbi.taxonomy import category_names, get_category
from fbi.trajectories import into_tool_result

PREFIX = "manipulation/"
GENERATOR = "rules:manipulation"


def manipulations() -> tuple[int, dict[str, Manipulation]]:
    """The version of ``manipulations.yaml`` and its kinds, as shipped with fbi."""
    texts = attack_texts()
    return texts.version, texts.kinds


def manipulation_kinds(requested: tuple[str, ...]) -> list[str]:
    """The kinds named by ``manipulation/KIND`` categories (``manipulation/*``: all)."""
    _, known = manipulations()
    kinds = []
    for name in requested:
        kind = name.removeprefix(PREFIX)
        if kind == "*":
            kinds += [k for k in known if k not in kinds]
        elif kind in known:
            kinds += [kind] if kind not in kinds else []
        else:
            from fbi.taxonomy import unknown_name_message

            raise InputError(unknown_name_message(
                "manipulation", name, [f"{PREFIX}{k}" for k in known] + [f"{PREFIX}*"]))
    return kinds


def is_manipulation(category: str) -> bool:
    """Whether a category id names a manipulation (`manipulation/KIND`)."""
    return category.startswith(PREFIX)


def manipulate(twin: Instance, kind: str, seed: int = 0) -> Instance:
    """``twin`` with the ``kind`` of manipulation added to its perturbed answer."""
    version, known = manipulations()
    manipulation = known[kind]
    rng = random.Random(f"{seed}:{kind}:{twin.id}")
    answer = twin.perturbed_answer
    if kind == "padding":  # sentences that say nothing, until the answer is twice as long
        filler: list[str] = []
        while len(answer) + sum(len(t) + 1 for t in filler) < 2 * len(answer):
            filler.append(rng.choice(manipulation.texts))
        added = " ".join(filler)
    else:
        added = rng.choice(manipulation.texts)
    if manipulation.where == "tool-result":
        manipulated = into_tool_result(answer, added, rng.choice)
        if manipulated is None:
            raise Declined(f"{kind} goes into a tool result: {twin.id} is no agent's "
                           "trajectory with one")
    else:
        manipulated = f"{added}\n\n{answer}" if manipulation.where == "start" else \
            f"{answer}\n\n{added}"
    return Instance(
        id=f"{twin.id}~{kind}", ability=twin.ability, category=f"{PREFIX}{kind}",
        instruction=twin.instruction, context=twin.context, gold_answer=twin.gold_answer,
        perturbed_answer=manipulated,
        rationale=f"{kind} added at the {manipulation.where} of the perturbed answer of "
                  f"{twin.id} ({twin.category}): «{added[:150]}»",
        provenance=Provenance(source=twin.provenance.source, original_id=twin.id,
                              generator=f"{GENERATOR}/{kind}", template_version=str(version),
                              seed=seed, gold_model=twin.provenance.gold_model),
        label=VettingLabel.UNVETTED)


def manipulated_queue(twins: list[Instance], kinds: list[str], seed: int = 0
                      ) -> tuple[list[Instance], int]:
    """The twins (unchanged: what the manipulations are measured against) and, after
    them, every kind of manipulation of each — a kind that goes into a tool result of
    each agent's trajectory with one, every other kind of each answer; and how many
    instances could not be twins (score-invariant edits, extra categories and
    manipulations carry no error to hide; a trajectory takes only a tool-result kind)."""
    known = manipulations()[1]
    answers = [t for t in twins if t.category in category_names()
               and not t.is_score_invariant]
    agents = [t for t in twins if get_category(t.category).family == "trajectory"
              and not t.is_score_invariant and into_tool_result(t.perturbed_answer, "")]
    inside = [k for k in kinds if known[k].where == "tool-result"]
    usable = answers + (agents if inside else [])
    made = [manipulate(t, kind, seed) for t in answers for kind in kinds
            if kind not in inside] + [manipulate(t, kind, seed) for t in agents
                                      for kind in inside]
    return usable + made, len(twins) - len(usable)
