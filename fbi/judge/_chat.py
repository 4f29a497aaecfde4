"""The chat judge: a model sent a strategy's rendered prompt, answering in JSON — every
judge the FBI paper studies (§4), and the kind any model string is unless another kind
takes it ([`judge_kind`][fbi.judge.judge_kind])."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fbi.judge._config import DEFAULT_STRATEGIES
from fbi.judge._kinds import JudgeKind, Parser, Repair, register_judge_kind
from fbi.judge._parsing import ParsedReply, parse_reply
from fbi.judge._weighting import weighted_score
from fbi.providers import ModelRequest, ModelResponse
from fbi.runs import Parsed
from fbi.thinking import copied_from, split_thinking

if TYPE_CHECKING:
    from fbi.judge._config import EvaluationConfig
    from fbi.judge._strategies import Strategy, StrategyRegistry
    from fbi.records import Instance

#: What a reply usually costs in tokens, for --dry-run estimates: with an explanation,
#: without one.
EXPECTED_REPLY_TOKENS = {True: 250, False: 12}
#: Who sits in slot A and slot B, by the role of a pairwise call.
SLOTS = {"gold-first": ("gold", "perturbed"), "perturbed-first": ("perturbed", "gold")}


@register_judge_kind
class ChatJudge(JudgeKind):
    """A chat model asked a strategy's prompt (see the module docstring)."""

    name = "chat"
    default_strategies = DEFAULT_STRATEGIES

    def matches(self, model: str) -> bool:
        return True  # (asked last: any model another kind does not take)

    def runs(self, strategy: Strategy) -> bool:
        return not strategy.meta.reward

    def refusal(self) -> str:
        return ("is a chat model: a reward strategy needs a reward model (reward/NAME or "
                "hf-reward/PATH)")

    def fix(self) -> str:
        return "drop them"

    def score_range(self, strategy: Strategy, axis: str, config: EvaluationConfig
                    ) -> tuple[int, int] | None:
        if strategy.paradigm == "pairwise":
            return None
        return config.score_range or strategy.meta.range_for(axis, config.protocol)

    def schema(self, strategy: Strategy, score_range: tuple[int, int] | None,
               config: EvaluationConfig) -> dict | None:
        if config.protocol == "paper":  # (the authors described it in the prompt)
            return None
        return strategy.response_schema(score_range, config.explanation_limit)

    def request(self, registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                variables: dict[str, Any], sample: int,
                score_range: tuple[int, int] | None, schema: dict | None,
                config: EvaluationConfig) -> ModelRequest:
        if score_range is not None:
            variables = {**variables, "score_min": score_range[0],
                         "score_max": score_range[1]}
        text = registry.render(strategy, instruction=instance.question,
                               axis=instance.ability.axis, ability=instance.ability.value,
                               protocol=config.protocol, **variables)
        system = (("system", config.system_message),) if config.system_message else ()
        return ModelRequest(
            model=config.judge, messages=(*system, ("user", text)),
            temperature=config.temperature, max_tokens=config.reply_tokens,
            response_schema=schema, api_base=config.model.api_base, seed=config.model.seed,
            model_args=config.model.model_args, sample=sample,
            top_logprobs=config.logprobs if score_range is not None else 0)

    def parser(self, paradigm: str, role: str, score_range: tuple[int, int] | None,
               echoes: tuple[str, ...]) -> Parser:
        return judge_parser(paradigm, role, score_range, echoes)

    def repair(self, registry: StrategyRegistry, strategy: Strategy,
               score_range: tuple[int, int] | None) -> Repair:
        """A follow-up that asks for just the verdict, given the request and its
        unreadable reply."""
        field_name = strategy.verdict_field

        def follow_up(request: ModelRequest, reply: str) -> ModelRequest:
            low, high = score_range or (0, 0)
            ask = registry.render_template("_repair.jinja", field=field_name, score_min=low,
                                           score_max=high)
            schema = None
            if request.response_schema is not None:  # the same protocol as the first call
                schema = dict(strategy.response_schema(score_range))
                schema["properties"] = {field_name: schema["properties"][field_name]}
                schema["required"] = [field_name]
            return ModelRequest(
                model=request.model, messages=(*request.messages, ("assistant", reply),
                                               ("user", ask)),
                temperature=request.temperature, max_tokens=64, response_schema=schema,
                api_base=request.api_base, seed=request.seed, model_args=request.model_args,
                sample=request.sample)

        return follow_up

    def expected_reply_tokens(self, strategy: Strategy) -> int:
        return EXPECTED_REPLY_TOKENS[strategy.meta.explanation]


def judge_parser(paradigm: str, role: str, score_range: tuple[int, int] | None,
                 echoes: tuple[str, ...], structured: bool = True
                 ) -> Callable[[list[ModelResponse]], Parsed]:
    """How the replies of one chat judge call become its verdict fields (``structured``:
    the judge was asked for JSON, so its reply is its first object; see
    [`parse_reply`][fbi.judge.parse_reply]).

    The first reply is read; if it is unreadable, each ``--repair`` reply in turn, with
    the explanation kept from the first. A pairwise slot verdict (A / B) is mapped to
    gold / perturbed by the call's ``role``, so stored replies can be read again without
    the plan that made them.
    """
    field_name = "verdict" if paradigm == "pairwise" else "score"

    def read(texts: list[str], finish_reason: str | None = None) -> ParsedReply:
        parsed = parse_reply(texts[0], field_name, score_range, echoes, finish_reason,
                             structured)
        for repaired in texts[1:] if parsed.status != "ok" else []:
            again = parse_reply(repaired, field_name, score_range, echoes,
                                structured=structured)
            if again.status == "ok":  # (``at`` is dropped: it points into a follow-up)
                return dataclasses.replace(
                    again, explanation=parsed.explanation or texts[0].strip() or None,
                    at=None)
        return parsed

    quoted = copied_from(echoes)

    def own_text(response: ModelResponse) -> tuple[str, str | None]:
        """The reply outside the judge's thinking, however it is marked: a closing
        marker copied from an answer closes nothing (`fbi.thinking`)."""
        raw = response.content if response.content is not None else response.text
        reply, thinking = split_thinking(raw, quoted, response.finish_reason != "length")
        return (response.text, response.reasoning) if thinking is None else \
            (reply, thinking)

    def parse(responses: list[ModelResponse]) -> Parsed:
        if responses[0].logprobs_problem is not None:  # (asked for, and a server lied)
            return Parsed("unparseable", reason="log-probabilities unreadable: "
                          f"{responses[0].logprobs_problem}")
        own = [own_text(r) for r in responses]
        texts = [text for text, _ in own]
        parsed = read(texts, responses[0].finish_reason)
        verdict = None
        if parsed.verdict is not None and role in SLOTS:
            a, b = SLOTS[role]
            verdict = {"A": a, "B": b}.get(parsed.verdict, parsed.verdict)
        fields = {"score": parsed.score, "slot_verdict": parsed.verdict, "verdict": verdict,
                  "explanation": parsed.explanation}
        tokens = responses[0].token_logprobs
        if tokens and parsed.score is not None and parsed.at is not None and score_range:
            weighted = weighted_score(texts[0], parsed.score, parsed.at, score_range, tokens)
            if weighted is not None:
                fields.update(expected_score=round(weighted.expected, 6),
                              score_probabilities={v: round(p, 6) for v, p in
                                                   weighted.probabilities.items()},
                              score_mass=round(weighted.mass, 6))
        resplit = texts[0] != responses[0].text
        return Parsed(parsed.status, fields, parsed.reason,
                      reply=texts[0] if resplit else None,
                      reasoning=own[0][1] if resplit else None)

    return parse
