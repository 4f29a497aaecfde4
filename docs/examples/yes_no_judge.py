"""A new judge kind, whole: graders that answer only "yes" or "no" (a correctness
classifier fine-tuned from a small model and served behind the OpenAI protocol, named
``…-yesno``). fbi asks it whether each answer is correct and reads "yes" as 1 and "no"
as 0, so the single-answer tables compare the gold answer's 1 with the perturbed one's.

This file is the example of docs/contributing.md, and it runs: tests/test_strategies.py
judges the built-in sample with it against the loopback server.
"""

from __future__ import annotations

from typing import Any

from fbi.judge import (
    EvaluationConfig,
    JudgeKind,
    Strategy,
    StrategyRegistry,
    register_judge_kind,
)
from fbi.providers import ModelRequest, ModelResponse
from fbi.records import Instance
from fbi.runs import Parsed

PROMPT = ("Question:\n{question}\n\nAnswer:\n{answer}\n\nIs the answer correct and complete? "
          "Reply yes or no.")


@register_judge_kind
class YesNoJudge(JudgeKind):
    """A grader that says yes or no: single-answer strategies only, a 0–1 score."""

    name = "yes-no"
    default_strategies = ("vanilla",)
    repairs = False  # (one word: nothing to ask again)

    def matches(self, model: str) -> bool:
        return model.endswith("-yesno")

    def runs(self, strategy: Strategy) -> bool:
        return strategy.paradigm == "single" and not strategy.meta.reward

    def score_range(self, strategy: Strategy, axis: str, config: EvaluationConfig
                    ) -> tuple[int, int]:
        return (0, 1)

    def schema(self, strategy: Strategy, score_range: tuple[int, int] | None,
               config: EvaluationConfig) -> None:
        return None

    def request(self, registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                variables: dict[str, Any], sample: int,
                score_range: tuple[int, int] | None, schema: dict | None,
                config: EvaluationConfig) -> ModelRequest:
        text = PROMPT.format(question=instance.question, answer=variables["answer"])
        return ModelRequest(model=config.judge, messages=(("user", text),), max_tokens=2,
                            api_base=config.model.api_base, sample=sample)

    def parser(self, paradigm: str, role: str, score_range: tuple[int, int] | None,
               echoes: tuple[str, ...]):
        def parse(responses: list[ModelResponse]) -> Parsed:
            word = responses[0].text.strip().strip(".!").lower()
            if word not in ("yes", "no"):
                return Parsed("unparseable", {"score": None}, f"neither yes nor no: "
                              f"{word[:40]!r}")
            return Parsed("ok", {"score": int(word == "yes")})

        return parse

    def expected_reply_tokens(self, strategy: Strategy) -> int:
        return 1
