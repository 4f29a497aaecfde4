"""Reward models as judges (`fbi.providers`): a reward model is sent the conversation, the
answer its last turn, and answers one number, which the single-answer tables compare as
scores (RewardBench's protocol, Lambert et al. 2024). Asked pairwise
(``reward_pairwise``), one call gets the rewards of both answers, in the slot order of
its role, and its verdict is the slot with the higher reward, a tie when they are equal
(RewardBench's comparison: chosen wins when its reward is higher), so a reward model
sits in the pairwise tables, leaderboards and juries beside chat judges.

A **process reward model** judges an agent's trajectory step by step (``agent_prm``,
issue 54): the assistant's turn is the trajectory's steps, each followed by the model's
step tag (``--model-arg step_tag=TOKEN``, default ``<extra_0>``, Qwen2.5-Math-PRM's), and
the reply one probability of "correct" per step (`fbi.providers.REWARD_STEPS`). The
first step the model calls more likely wrong than right (probability under ½: the
classifier's own decision) is the step it names, 0 when none is: ProcessBench's
question (Zheng et al. 2024: the earliest step a PRM scores under a threshold is its
predicted error), with the threshold fixed at ½ rather than tuned, which would need
labelled trajectories per model."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from fbi.errors import InputError
from fbi.judge._chat import SLOTS
from fbi.judge._kinds import JudgeKind, Parser, register_judge_kind
from fbi.providers import REWARD_PAIR, REWARD_STEPS, ModelRequest, is_reward_model
from fbi.runs import Parsed
from fbi.trajectories import rendered_steps

#: The model argument naming a process reward model's step tag, and its default
#: (Qwen2.5-Math-PRM's).
STEP_TAG, DEFAULT_STEP_TAG = "step_tag", "<extra_0>"

if TYPE_CHECKING:
    from fbi.judge._config import EvaluationConfig
    from fbi.judge._strategies import Strategy, StrategyRegistry
    from fbi.providers import ModelResponse
    from fbi.records import Instance

@register_judge_kind
class RewardJudge(JudgeKind):
    """A reward model (``reward/NAME``, ``hf-reward/PATH``): reward strategies only, one
    number a reply (two, asked pairwise), nothing to repair."""

    name = "reward"
    default_strategies = trajectory_strategies = ("reward",)
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

    def check(self, model: str, strategies: list[Strategy], repair: int = 0) -> None:
        super().check(model, strategies, repair)
        if model.startswith("hf-reward/") and any(s.paradigm == "step" for s in strategies):
            raise InputError(f"{model}: a local sequence classifier gives one reward a "
                             "conversation, not one a step. Fix: serve the process reward "
                             "model with vLLM (--judge reward/NAME --api-base URL)")

    def request(self, registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                variables: dict[str, Any], sample: int,
                score_range: tuple[int, int] | None, schema: dict | None,
                config: EvaluationConfig) -> ModelRequest:
        # the conversation itself, the answer its last turn; asked pairwise, both answers
        # last, each the last turn of its own conversation (`fbi.providers.REWARD_PAIR`)
        conversation = (*instance.context, ("user", instance.instruction))
        if strategy.paradigm == "step":  # a PRM: the steps, each ended by the step tag
            args = dict(config.model.model_args)
            tag = str(args.get(STEP_TAG, DEFAULT_STEP_TAG))
            steps = [f"Step {n} · {step.body}"
                     for n, step in enumerate(rendered_steps(variables["answer"]), 1)]
            if not steps:
                raise InputError(f"instance {instance.id}: {strategy.name} scores an "
                                 "agent's trajectory step by step, and this answer is not "
                                 "one. Fix: give it trajectories (fbi trajectories perturb)")
            return ModelRequest(
                model=config.judge, api_base=config.model.api_base, sample=sample,
                messages=(*conversation, ("assistant", tag.join(steps) + tag)),
                model_args=tuple(sorted((*config.model.model_args,
                                         (REWARD_STEPS, len(steps))))))
        if strategy.paradigm == "pairwise":
            return ModelRequest(
                model=config.judge, api_base=config.model.api_base, sample=sample,
                messages=(*conversation, ("assistant", variables["answer_a"]),
                          ("assistant", variables["answer_b"])),
                model_args=tuple(sorted((*config.model.model_args, (REWARD_PAIR, True)))))
        return ModelRequest(
            model=config.judge, api_base=config.model.api_base, sample=sample,
            messages=(*conversation, ("assistant", variables["answer"])),
            model_args=config.model.model_args)

    def parser(self, paradigm: str, role: str, score_range: tuple[int, int] | None,
               echoes: tuple[str, ...]) -> Parser:
        return {"pairwise": lambda: pairwise_reward_parser(role),
                "step": step_reward_parser}.get(paradigm, reward_parser)()

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


def _numbers(text: str) -> list[float] | None:
    """A reply's JSON list of finite numbers (several rewards); None for anything else."""
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if not isinstance(values, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in values):
        return None
    return [float(v) for v in values]


def step_reward_parser():
    """A process reward model's reply: the probability that each step is correct; the
    score is the first step under ½, 0 when none is (see the module docstring)."""
    def parse(responses: list[ModelResponse]) -> Parsed:
        text = responses[0].text.strip()
        rewards = _numbers(text)
        if not rewards or not all(0 <= r <= 1 for r in rewards):
            return Parsed("unparseable", {"score": None},
                          f"not a reward a step: {text[:60]!r}")
        first = next((n for n, r in enumerate(rewards, 1) if r < 0.5), 0)
        return Parsed("ok", {"score": first}, None)

    return parse


def pairwise_reward_parser(role: str):
    """A pairwise reward reply: the rewards of slots A and B, ``[A, B]``; the verdict is
    the higher one's slot, mapped to the gold or perturbed answer by the call's role, and
    ``tie`` when they are equal."""
    def parse(responses: list[ModelResponse]) -> Parsed:
        text = responses[0].text.strip()
        rewards = _numbers(text)
        if rewards is None or len(rewards) != 2:
            return Parsed("unparseable", {"verdict": None},
                          f"not a pair of rewards: {text[:60]!r}")
        a, b = rewards
        slot = "A" if a > b else "B" if b > a else "tie"
        verdict = dict(zip("AB", SLOTS[role], strict=True)).get(slot, "tie")
        # (the two rewards stay in the reply, raw_output)
        return Parsed("ok", {"score": None, "slot_verdict": slot, "verdict": verdict}, None)

    return parse
