"""Judge strategies: templates in ``prompts/`` with their metadata, and safe rendering.

A strategy is one ``NAME.jinja`` file whose YAML front matter says how to use it::

    ---
    display_name: "Vanilla"
    paradigm: single          # single | pairwise | reference
    explanation: true         # asks for an explanation before the verdict
    score_range: [1, 10]      # single and reference only
    axis_score_ranges: {hallucination: [0, 1]}   # optional: another range on some axes
    version: 1
    description: Score one answer: explanation, then score.
    ---
    {% extends "_single.jinja" %}

Files starting with ``_`` are shared pieces, not strategies. A folder passed with
``--prompts DIR`` is searched before the built-in templates, so users add strategies
(or override one) by dropping a file there. Templates render in jinja2's immutable
sandbox with StrictUndefined: a template cannot run code, and a missing variable is an
error rather than an empty string.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from fbi.errors import InputError, validation_summary
from fbi.registry import Registry
from fbi.taxonomy import unknown_name_message
from fbi.templates import TemplateFolder


class RunsStrategies(Protocol):
    """What ``resolve`` asks of a judge's kind ([`JudgeKind`][fbi.judge.JudgeKind])."""

    def runs(self, strategy: Strategy) -> bool: ...

Paradigm = Literal["single", "pairwise", "reference", "step"]
PAIRWISE_VERDICTS = ("A", "B", "tie", "both_bad")
#: How many characters of explanation the structured output allows, so a length cut
#: can never eat the score that follows the explanation.
EXPLANATION_MAX_CHARS = 600


class StrategyMeta(BaseModel):
    """A strategy's front matter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    display_name: str
    """The name the paper's tables use (``Vanilla*``, ``Axis+Rubrics``)."""
    paradigm: Paradigm
    """Single-answer, pairwise or reference-guided."""
    explanation: bool
    """Whether the judge is asked to explain before its verdict."""
    score_range: tuple[int, int] | None = None
    """The score range it asks for (single-answer and reference strategies)."""
    axis_score_ranges: dict[str, tuple[int, int]] = {}
    """A different range on some axes (the paper's Axis: hallucination 0–1, the rest
    0–2)."""
    paper_score_range: tuple[int, int] | None = None
    """The range under --protocol paper where it differs (the authors' rubric: 0/1/2, fbi's
    1–3)."""
    version: str | int
    """The template's version; a judgment records it."""
    description: str = ""
    """What the strategy asks, in one sentence."""
    reward: bool = False
    """A reward model's strategy: the request is the conversation with the answer as the
    assistant's last turn (no template text is sent) and the reply one scalar reward
    (`fbi.providers`); single-answer with no score range, pairwise (both answers'
    rewards in one call, the verdict the higher one's slot), or step-level (a process
    reward model's reward a step, `fbi.judge._reward`)."""

    subject: Literal["answer", "trajectory"] = "answer"
    """What it judges: an answer, or an agent's trajectory (issue 54; ``all`` names the
    answer strategies)."""

    def range_for(self, axis: str, protocol: str = "fbi") -> tuple[int, int] | None:
        """The score range asked for on this axis under ``protocol`` (None for pairwise
        strategies)."""
        return self.axis_score_ranges.get(axis, self.base_range(protocol))

    def base_range(self, protocol: str = "fbi") -> tuple[int, int] | None:
        """The strategy's range under ``protocol``, before any axis's own."""
        if protocol == "paper" and self.paper_score_range is not None:
            return self.paper_score_range
        return self.score_range

    @model_validator(mode="after")
    def _range_where_scored(self) -> StrategyMeta:
        if self.paradigm == "pairwise" and self.score_range is not None:
            raise ValueError("pairwise strategies give verdicts, not scores: drop score_range")
        if self.reward:
            if self.paradigm == "reference" or self.score_range is not None or \
                    self.explanation:
                raise ValueError("a reward strategy is single-answer, pairwise or "
                                 "step-level, with no score range and no explanation")
            return self
        if self.paradigm != "pairwise":
            if self.score_range is None:
                raise ValueError(f"a {self.paradigm} strategy needs a score_range")
            for low, high in (self.score_range, *self.axis_score_ranges.values(),
                              *([self.paper_score_range] if self.paper_score_range else [])):
                if low >= high:
                    raise ValueError(f"score_range {low}-{high} is empty")
        return self


@dataclass(frozen=True)
class Strategy:
    """A loaded strategy: its name (the file name), metadata, and where it came from."""

    name: str
    """The strategy's name: its template's file name without ``.j2``."""
    meta: StrategyMeta
    """Its front matter."""
    origin: str
    """Where the template came from: ``built-in`` or the --prompts folder."""
    source_sha: str
    """Hash of the template text, recorded in run.json."""

    @property
    def paradigm(self) -> Paradigm:
        return self.meta.paradigm

    @property
    def version(self) -> str:
        return str(self.meta.version)

    @property
    def verdict_field(self) -> str:
        return "verdict" if self.paradigm == "pairwise" else "score"

    def response_schema(self, score_range: tuple[int, int] | None,
                        explanation_chars: int = EXPLANATION_MAX_CHARS) -> dict[str, Any]:
        """The JSON schema of the reply. The explanation comes first when the strategy
        asks for one (the paper's protocol), capped at ``explanation_chars`` so the
        verdict survives a length cut."""
        properties: dict[str, Any] = {}
        if self.meta.explanation:
            properties["explanation"] = {"type": "string", "maxLength": explanation_chars}
        if self.paradigm == "pairwise":
            properties["verdict"] = {"type": "string", "enum": list(PAIRWISE_VERDICTS)}
        else:
            low, high = score_range or self.meta.score_range  # type: ignore[misc]
            # An enum rather than minimum/maximum: grammar-based decoders (llama.cpp)
            # enforce enums but not integer bounds.
            properties["score"] = {"type": "integer", "enum": list(range(low, high + 1))}
        return {"type": "object", "properties": properties, "required": list(properties),
                "additionalProperties": False}


#: The packages whose folders hold strategy templates beside fbi's own ``prompts/``: a
#: [`Registry`][fbi.registry.Registry] of the ``fbi.strategies`` entry points, each
#: ``NAME = "package:TEMPLATES"`` naming a package that holds ``*.jinja`` strategies
#: (its ``TEMPLATES`` attribute: its module name) — fbi's own is its ``prompts`` package.
STRATEGY_PACKAGES: Registry[str] = Registry("strategy package", "fbi.strategies")


class StrategyRegistry:
    """The strategies found in the built-in prompts, the installed packages that add
    strategies (`STRATEGY_PACKAGES`) and an optional user folder."""

    def __init__(self, user_dir: str | Path | None = None):
        packages = tuple(package for package in STRATEGY_PACKAGES.values()
                         if package != "fbi.prompts")
        self.templates = TemplateFolder("prompts", user_dir, packages)
        self.strategies: dict[str, Strategy] = {}
        for name in self.templates.entries():
            file_name = f"{name}.jinja"
            origin = self.templates.origin(file_name)
            try:
                meta = StrategyMeta(**self.templates.front_matter(file_name))
            except (ValidationError, TypeError) as error:
                raise InputError(f"{origin}/{file_name}: bad front matter "
                                 f"({validation_summary(error, limit=6)}). Fix: give "
                                 "display_name, paradigm, explanation, score_range, version") \
                    from None
            self.strategies[name] = Strategy(name, meta, origin, self.templates.sha(file_name))

    def names(self) -> list[str]:
        return list(self.strategies)

    def get(self, name: str) -> Strategy:
        """By file name, or by the paper's display name ("Axis+Rubric", "Vanilla*")."""
        if name in self.strategies:
            return self.strategies[name]
        for strategy in self.strategies.values():
            if strategy.meta.display_name.lower() == name.lower():
                return strategy
        from fbi.errors import UnknownName

        raise UnknownName(unknown_name_message("strategy", name, self.names()))

    def resolve(self, names: list[str] | tuple[str, ...], kind: RunsStrategies | None = None
                ) -> list[Strategy]:
        """Strategies for CLI names; 'all' expands to every strategy of answers the judge's
        ``kind`` runs (None: a chat judge's)."""
        if not names or "all" in names:
            return [s for s in self.strategies.values() if s.meta.subject == "answer"
                    and (kind.runs(s) if kind is not None else not s.meta.reward)]
        chosen: list[Strategy] = []
        for name in names:
            strategy = self.get(name)
            if strategy not in chosen:
                chosen.append(strategy)
        return chosen

    def render(self, strategy: Strategy, **variables: Any) -> str:
        """The user message for one call. Raises InputError if a variable is missing."""
        variables.setdefault("protocol", "fbi")
        return self.templates.render(f"{strategy.name}.jinja",
                                     explanation=strategy.meta.explanation, **variables)

    def render_template(self, file_name: str, **variables: Any) -> str:
        """A shared template of the prompts folder (``_repair.jinja``, ...)."""
        return self.templates.render(file_name, **variables)
