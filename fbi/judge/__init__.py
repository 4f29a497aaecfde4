"""The judge stage: strategies (templates in prompts/), planning and running the
FBI protocol's calls, reading verdicts from replies, and the explanation check.
"""

from fbi.judge._evaluate import (
    EXPECTED_REPLY_TOKENS,
    MAX_SCORE_RANGE_WIDTH,
    SLOTS,
    Evaluation,
    EvaluationConfig,
    echoes_of,
    judge_parser,
    plan_calls,
    prompt_records,
    recorded_explanation_chars,
    reparse,
)
from fbi.judge._explanations import (
    LOG_NAME,
    SCHEMA,
    SPEC_NAME,
    ExplanationChecks,
    explanations_to_check,
    parse_check,
)
from fbi.judge._parsing import (
    PARSER_VERSION,
    ParsedReply,
    parse_reply,
)
from fbi.judge._read import read_judgments, read_verdicts
from fbi.judge._reward import DEFAULT_STRATEGIES, check_reward_strategies, default_strategies
from fbi.judge._show import ShownCall, replayed_calls, show_call
from fbi.judge._strategies import (
    EXPLANATION_MAX_CHARS,
    PAIRWISE_VERDICTS,
    Paradigm,
    Strategy,
    StrategyMeta,
    StrategyRegistry,
)

__all__ = [
    "DEFAULT_STRATEGIES",
    "EXPECTED_REPLY_TOKENS",
    "EXPLANATION_MAX_CHARS",
    "LOG_NAME",
    "MAX_SCORE_RANGE_WIDTH",
    "PAIRWISE_VERDICTS",
    "PARSER_VERSION",
    "SCHEMA",
    "SLOTS",
    "SPEC_NAME",
    "Evaluation",
    "EvaluationConfig",
    "ExplanationChecks",
    "Paradigm",
    "ParsedReply",
    "ShownCall",
    "Strategy",
    "StrategyMeta",
    "StrategyRegistry",
    "check_reward_strategies",
    "default_strategies",
    "echoes_of",
    "explanations_to_check",
    "judge_parser",
    "parse_check",
    "parse_reply",
    "plan_calls",
    "prompt_records",
    "read_judgments",
    "read_verdicts",
    "recorded_explanation_chars",
    "reparse",
    "replayed_calls",
    "show_call",
]
