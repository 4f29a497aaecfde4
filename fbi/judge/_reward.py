"""Reward models as judges (`fbi.providers`): a reward model is sent the conversation, the
answer its last turn, and answers one number, which the single-answer tables compare as
scores (RewardBench's protocol, Lambert et al. 2024)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fbi.judge._kinds import JudgeKind, Parser, register_judge_kind
from fbi.providers import ModelRequest, is_reward_model
from fbi.runs import Parsed

if TYPE_CHECKING:
    from fbi.judge._config import EvaluationConfig
    from fbi.judge._strategies import Strategy, StrategyRegistry
    from fbi.providers import ModelResponse
    from fbi.records import Instance

@register_judge_kind
class RewardJudge(JudgeKind):
    """A reward model (``reward/NAME``, ``hf-reward/PATH``): reward strategies only, one
    number a reply, nothing to repair."""

    name = "reward"
    default_strategies = ("reward",)
    repairs = False

    def matches(self, model: str) -> bool:
        return is_reward_model(model)

    def runs(self, strategy: Strategy) -> bool:
        return strategy.meta.reward

    def refusal(self) -> str:
        return "is a reward model: it scores the conversation, without a prompt"

    def score_range(self, strategy: Strategy, axis: str, config: EvaluationConfig
                    ) -> tuple[int, int] | None:
        return None

    def schema(self, strategy: Strategy, score_range: tuple[int, int] | None,
               config: EvaluationConfig) -> dict | None:
        return None

    def request(self, registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                variables: dict[str, Any], sample: int,
                score_range: tuple[int, int] | None, schema: dict | None,
                config: EvaluationConfig) -> ModelRequest:
        # the conversation itself, the answer its last turn
        return ModelRequest(
            model=config.judge, api_base=config.model.api_base, sample=sample,
            messages=(*instance.context, ("user", instance.instruction),
                      ("assistant", variables["answer"])),
            model_args=config.model.model_args)

    def parser(self, paradigm: str, role: str, score_range: tuple[int, int] | None,
               echoes: tuple[str, ...]) -> Parser:
        return reward_parser()

    def expected_reply_tokens(self, strategy: Strategy) -> int:
        return 0


def reward_parser():
    """A reward model's reply (`fbi.providers`): its text is the reward, one finite number
    (what the single-answer tables compare as scores)."""
    def parse(responses: list[ModelResponse]) -> Parsed:
        text = responses[0].text.strip()
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            return Parsed("unparseable", {"score": None}, f"not a reward: {text[:60]!r}")
        return Parsed("ok", {"score": value}, None)

    return parse
