"""Candidates of agents' trajectories as a perturbation run (issue 54): the trajectory
rules first, and an LLM perturber where a rule cannot (``--engine auto``: the trajectory
a rule declines) or for every candidate (``--engine llm``).

It is the answers' `Perturber` with what differs for a trajectory: the jobs (each
trajectory × each ``trajectory/KIND`` or ``score-invariant/KIND`` asked for, once), the
rule (`perturb_trajectory`), the template (``perturbations/trajectory.jinja``: the task,
the tools and the gold trajectory as fbi's JSON steps; the model returns the edited
steps and the step it changed), the reader of a reply (the steps must make a valid
trajectory with the gold one's task and tools — a result without its call, a call id used
twice, arguments not an object are an unusable reply, said why), and the candidate (the
renderings the judge reads, pre-screened: the step that really differs against the step
claimed). Calls are cached, logged, resumed and priced like the answers' LLM engine.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from fbi.errors import InputError
from fbi.perturb._generate import Job, PerturbConfig, Perturber
from fbi.perturb._trajectories import (
    TRAJECTORY_RULES_VERSION,
    perturb_trajectory,
    trajectory_categories,
    trajectory_instance,
)
from fbi.perturb.rules import Declined
from fbi.providers import ModelResponse, json_object_in
from fbi.records import GoldItem, Instance
from fbi.runs import Parsed
from fbi.taxonomy import SCORE_INVARIANT, get_category
from fbi.trajectories import Trajectory, render

#: The LLM engine's template for every trajectory category.
TEMPLATE = "trajectory.jinja"
_CLAIM = re.compile(r"^step (\d+): ")


class TrajectoryPerturber(Perturber):
    """Candidates of ``trajectories`` in ``config.categories`` (trajectory categories and
    rewrites; `trajectory_categories`), into a vetting queue."""

    title = "candidate edits of agents' gold trajectories, one planted error each " \
            "(fbi trajectories perturb)"
    rules_version = TRAJECTORY_RULES_VERSION

    def __init__(self, trajectories: list[Trajectory], config: PerturbConfig, output,
                 source: str = "", window: int | None = None):
        """``window``: each rendering cut to at most so many characters around the
        changed step (`fbi.trajectories.windowed`)."""
        self.window = window
        known = trajectory_categories()
        for category in config.categories:
            if category not in known:
                from fbi.taxonomy import unknown_name_message

                raise InputError(unknown_name_message("trajectory category", category,
                                                      known))
        self.trajectories = {t.id: t for t in trajectories}
        super().__init__([GoldItem.of_trajectory(t) for t in trajectories], config, output,
                         source)

    def plan(self, items: list[GoldItem]) -> tuple[list[Job], int]:
        categories = self.config.categories or tuple(trajectory_categories())
        return [Job(item, category, 1) for item in items for category in categories], 0

    def by_rule(self, job: Job) -> bool:
        if self.config.engine != "auto":
            return self.config.engine == "rules"
        try:  # (a rule is quick and sure: the model only where it declines)
            self.rule_edit(job)
        except Declined:
            return False
        return True

    def template_of(self, category: str) -> str:
        return TEMPLATE

    def template_variables(self, job: Job) -> dict:
        trajectory = self.trajectories[job.item.id]
        steps = [step.model_dump(exclude_defaults=True) for step in trajectory.steps]
        kind = get_category(job.category) if not job.category.startswith(SCORE_INVARIANT) \
            else None
        return {"instruction": job.item.question,
                "steps": json.dumps(steps, ensure_ascii=False, indent=1),
                "category_name": kind.display_name if kind else "a harmless rewrite",
                "category_description": kind.description if kind else
                job.category.removeprefix(SCORE_INVARIANT + "/").replace("-", " "),
                "score_invariant": kind is None}

    def parser(self, job: Job):
        return trajectory_reader(self.trajectories[job.item.id])

    def rule_edit(self, job: Job) -> tuple[str, str]:
        edit = perturb_trajectory(job.category, self.trajectories[job.item.id],
                                  self.config.seed + job.variant - 1)
        return render(edit.trajectory), f"step {edit.step}: {edit.summary}"

    def candidate(self, job: Job, perturbed: str, rationale: str, generator: str,
                  version: str) -> Instance:
        claim = _CLAIM.match(rationale)
        return trajectory_instance(
            self.trajectories[job.item.id], job.category, perturbed,
            int(claim[1]) if claim else None, rationale[claim.end():] if claim else rationale,
            generator if generator.startswith("llm:") else
            f"trajectory-rules-{TRAJECTORY_RULES_VERSION}", self.config.seed,
            job.variant, version, self.window)


def trajectory_reader(gold: Trajectory):
    """How a reply to the trajectory template is read: ``{"rationale", "step",
    "steps"}``, the steps a valid trajectory with ``gold``'s task and tools that differs
    from it; its rendering is the perturbed answer, the rationale ``step N: …``."""
    def parse(responses: list[ModelResponse]) -> Parsed:
        data = json_object_in(responses[0].text) or {}
        steps, step = data.get("steps"), data.get("step")
        rationale = data.get("rationale", "")
        if not isinstance(steps, list) or not isinstance(rationale, str) or \
                isinstance(step, bool) or not isinstance(step, int) or step < 1:
            return Parsed("unparseable", reason="no JSON with rationale, step (a number) "
                                                "and steps (a list)")
        try:
            edited = Trajectory.model_validate({**gold.model_dump(), "steps": steps})
        except (ValidationError, InputError) as error:
            problem = str(error).splitlines()[0 if isinstance(error, InputError) else 1:]
            return Parsed("unparseable", reason="the steps are not a valid trajectory: "
                                                + " ".join(problem)[:300])
        if edited.steps == gold.steps:
            return Parsed("unparseable", reason="the steps are the gold trajectory's")
        return Parsed("ok", {"rationale": f"step {step}: {rationale}",
                             "perturbed_answer": render(edited)})

    return parse
