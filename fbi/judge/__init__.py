"""The judge stage: strategies (templates in prompts/), planning and running the
FBI protocol's calls, reading verdicts from replies, and the explanation check.
"""

from fbi.judge._chat import ChatJudge, judge_parser
from fbi.judge._config import MAX_SCORE_RANGE_WIDTH, EvaluationConfig
from fbi.judge._evaluate import (
    Evaluation,
    EvaluationResult,
    default_output,
    evaluate,
    plan_calls,
    prompt_records,
    recorded_explanation_chars,
    reparse,
)
from fbi.judge._explanations import ExplanationChecks
from fbi.judge._kinds import (
    JUDGE_KINDS,
    JudgeKind,
    default_strategies,
    judge_kind,
    judge_kinds,
    register_judge_kind,
)
from fbi.judge._parsing import (
    PARSER_VERSION,
    ParsedReply,
    parse_reply,
)
from fbi.judge._read import read_judgments, read_verdicts
from fbi.judge._reward import RewardJudge, pairwise_reward_parser, reward_parser
from fbi.judge._show import ShownCall, replayed_calls, show_call
from fbi.judge._strategies import (
    Paradigm,
    Strategy,
    StrategyMeta,
    StrategyRegistry,
)

