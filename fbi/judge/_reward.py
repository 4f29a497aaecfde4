"""Reward models in the judge stage (`fbi.reward`): which strategies they run, and how
their replies — one number — are read."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fbi.errors import InputError
from fbi.reward import is_reward_model
from fbi.runs import Parsed

if TYPE_CHECKING:
    from fbi.judge._strategies import Strategy
    from fbi.llm import ModelResponse

#: What a chat judge runs unless told.
DEFAULT_STRATEGIES = ("vanilla",)


def default_strategies(judge: str) -> tuple[str, ...]:
    """The strategies a judge runs unless told: ``reward`` for a reward model, else
    `DEFAULT_STRATEGIES`."""
    return ("reward",) if is_reward_model(judge) else DEFAULT_STRATEGIES


def check_reward_strategies(judge: str, strategies: list[Strategy], repair: int = 0
                            ) -> None:
    """A reward model runs reward strategies only (it reads a conversation, not a
    prompt), and a chat judge none of them; a reward model has nothing to repair
    (``repair``: --repair's follow-ups)."""
    reward_judge = is_reward_model(judge)
    wrong = [s.name for s in strategies if s.meta.reward != reward_judge]
    if wrong:
        what = ("is a reward model: it scores the conversation, without a prompt" if
                reward_judge else "is a chat model: a reward strategy needs a reward model "
                "(reward/NAME or hf-reward/PATH)")
        raise InputError(f"{judge} {what}; strategies {', '.join(wrong)} cannot be "
                         f"asked of it. Fix: " + ("--strategy reward" if reward_judge else
                                                  "drop them"))
    if reward_judge and repair:
        raise InputError("--repair asks a judge again for its verdict; a reward model's "
                         "reply is a number. Fix: drop --repair")


def reward_parser():
    """A reward model's reply (`fbi.reward`): its text is the reward, one finite number
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
