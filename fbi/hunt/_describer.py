"""``--describer MODEL``: a model proposes blind spots in words, and the hunt tests each
proposal with edits made for it (issue 49).

Describing the difference between two sets of texts in words is what Zhong et al. do
("Describing Differences between Text Distributions with Natural Language", ICML 2022):
a model reads samples of both and proposes hypotheses, which are then *verified* on more
data. Here the two sets are edits the judge missed and edits it caught, among the
search's probes that no established suspicion explains, each shown as its change
(«before» → «after») and where it lies. The describer answers with up to
``PROPOSALS`` hypotheses; each names up to three of the hunt's predicates when it can be
said with them (then it is one more suspicion the search tests with edits made to fit
it), or says how to make an edit that fits it (then the describer makes those edits, on
items of both halves, with the perturb stage's frame: the ``proposal/K`` operator, and
the predicate ``op:proposal/K`` whose phrase is the hypothesis). Either way the proposal
is verified like every other suspicion: probes in the search, a candidate only if the
covering finds it, confirmed only on held-out edits. Every call the describer makes
counts against ``--budget``.

The describer's reply is input: a hypothesis's text is cut to a few hundred characters,
names that are not predicates are dropped, and an unreadable reply proposes nothing.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fbi.hunt._predicates import EditView
from fbi.providers import ModelRequest, ModelResponse
from fbi.records import CallRecord, GoldItem
from fbi.runs import Call, Parsed
from fbi.settings import ModelSettings
from fbi.templates import TemplateFolder

#: Hypotheses asked for.
PROPOSALS = 3
#: Missed and caught edits shown (each).
SHOWN = 12
PROPOSAL = "proposal/"
DESCRIBE_TEMPLATE = "_hunt_describe.jinja"
HYPOTHESIS_TEMPLATE = "_hunt_hypothesis.jinja"
RESPONSE_SCHEMA = {"type": "object", "properties": {"hypotheses": {
    "type": "array", "maxItems": PROPOSALS, "items": {
        "type": "object", "properties": {
            "description": {"type": "string", "maxLength": 200},
            "predicates": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "edit_instruction": {"type": "string", "maxLength": 400}},
        "required": ["description", "predicates", "edit_instruction"]}}},
    "required": ["hypotheses"]}


class Hypothesis(BaseModel):
    """One proposal of the describer."""

    model_config = ConfigDict(extra="ignore")

    description: str = Field(min_length=1)
    """The hypothesis in words."""
    predicates: list[str] = Field(default_factory=list)
    """The hunt's predicates that say it (unknown names dropped), at most three."""
    edit_instruction: str = ""
    """How to make an edit that fits it."""


class DescriberCall(CallRecord):
    """The describer's call: a line of ``describer.jsonl``."""

    model: str
    """The describer model."""
    template_version: str
    """The describing prompt's version."""
    hypotheses: list[Hypothesis] | None = None
    """What it proposed."""


def edit_line(view: EditView) -> str:
    """An edit as the describer reads it: the change with a little context, where it
    lies in the answer, and the question."""
    change = view.change
    start = max(0, change.start - 60)
    before = view.gold[start:change.start].replace("\n", " ")
    where = f"{100 * change.start // max(1, len(view.gold))}% into the answer"
    line = (f"…{before}«{_cut(change.before, 160)}» → «{_cut(change.after, 160)}» "
            f"({where}; question: {_cut(view.question, 100)})")
    if view.manipulation:
        line += f" [then {view.manipulation} added]"
    return line


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def describe_call(settings: ModelSettings, missed: list[str], caught: list[str],
                  predicates: list[str], round_: int) -> Call:
    """The describer's call, asking for hypotheses about ``missed`` beside ``caught``."""
    templates = TemplateFolder("perturbations")
    text = templates.render(DESCRIBE_TEMPLATE, proposals=PROPOSALS, missed=missed,
                            caught=caught, predicates=", ".join(predicates))
    version = str(templates.front_matter(DESCRIBE_TEMPLATE).get("version", ""))
    request = ModelRequest(settings.model, (("user", text),), 0.0,
                           settings.max_tokens or 1200, RESPONSE_SCHEMA, settings.api_base,
                           seed=settings.seed, model_args=settings.model_args)
    known = set(predicates)

    def parse(responses: list[ModelResponse]) -> Parsed:
        found = parse_hypotheses(responses[0].text, known)
        if found is None:
            return Parsed("unparseable", reason="no JSON object with a list of hypotheses")
        return Parsed("ok", {"hypotheses": found})

    return Call(f"describe|{round_}", request, DescriberCall,
                {"model": settings.model, "template_version": version}, parse,
                expected_reply_tokens=400)


def parse_hypotheses(text: str, known: set[str]) -> list[Hypothesis] | None:
    """The hypotheses of a reply (at most ``PROPOSALS``), each cut to size, its unknown
    predicate names dropped; None when the reply holds no such object."""
    from fbi.providers import json_object_in

    candidate = json_object_in(text)
    hypotheses = candidate.get("hypotheses") if candidate is not None else None
    if isinstance(hypotheses, list):
        found = []
        for entry in hypotheses[:PROPOSALS]:
            if not isinstance(entry, dict):
                continue
            try:
                hypothesis = Hypothesis.model_validate(entry)
            except ValidationError:
                continue
            names = [n for n in hypothesis.predicates if isinstance(n, str) and n in known]
            found.append(Hypothesis(description=_cut(hypothesis.description, 200),
                                    predicates=list(dict.fromkeys(names))[:3],
                                    edit_instruction=_cut(hypothesis.edit_instruction, 400)))
        return found
    return None


def hypothesis_calls(settings: ModelSettings, hypothesis: Hypothesis, name: str,
                     splits: tuple[list[GoldItem], ...], per_split: int, seed: int
                     ) -> list[Call]:
    """The describer's edits for one hypothesis: ``per_split`` items of each split,
    rewritten in the perturb stage's frame (its records are `PerturbationCall`s)."""
    from fbi.perturb import RESPONSE_SCHEMA as EDIT_SCHEMA
    from fbi.perturb import PerturbationCall, read_perturbation

    templates = TemplateFolder("perturbations")
    version = str(templates.front_matter(HYPOTHESIS_TEMPLATE).get("version", ""))

    calls = []
    for split in splits:
        for item in random.Random(f"hunt-describe:{seed}:{name}").sample(
                split, min(per_split, len(split))):
            text = templates.render(
                HYPOTHESIS_TEMPLATE, category_name="an error of the kind described",
                hypothesis=hypothesis.description,
                edit_instruction=hypothesis.edit_instruction or hypothesis.description,
                instruction=item.question, answer=item.gold_answer, variant=1,
                score_invariant=False)
            request = ModelRequest(settings.model, (("user", text),), 0.7,
                                   settings.max_tokens or 2048, EDIT_SCHEMA,
                                   settings.api_base, seed=settings.seed,
                                   model_args=settings.model_args)
            calls.append(Call(f"{item.id}|{name}|1", request, PerturbationCall,
                              {"item_id": item.id, "category": f"hunt/{name}",
                               "variant": 1, "model": settings.model,
                               "template_version": version}, read_perturbation,
                              expected_reply_tokens=request.max_tokens // 2))
    return calls


def hypotheses_of(records: dict) -> list[Hypothesis]:
    """The hypotheses of the describer's log's records."""
    found = []
    for record in records.values():
        if record.status == "ok" and record.hypotheses:
            found += record.hypotheses
    return found


__all__ = ["PROPOSAL", "DescriberCall", "Hypothesis", "describe_call", "edit_line",
           "hypotheses_of", "hypothesis_calls"]
