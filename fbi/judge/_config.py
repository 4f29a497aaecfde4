"""What `fbi evaluate` asks of a judge ([`EvaluationConfig`][fbi.judge.EvaluationConfig]):
its model settings, the strategies, and how their prompts are asked — checked when made,
so the Python API refuses what the CLI refuses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fbi.errors import InputError
from fbi.judge._strategies import EXPLANATION_MAX_CHARS
from fbi.providers import LOCAL_JUDGE, registered_provider, supports_logprobs
from fbi.settings import ModelSettings

#: What a chat judge runs unless told.
DEFAULT_STRATEGIES = ("vanilla",)
#: The request protocols (--protocol) and the system message each sends: fbi's sends
#: none; the FBI authors sent "You are a helpful assistant." (llm_evaluators/prompts).
PROTOCOLS: dict[str, str | None] = {"fbi": None, "paper": "You are a helpful assistant."}
#: What each protocol's requests are, by version: a folder resumed under a later version
#: of its protocol is refused, since its prompts would differ call by call. Paper 2
#: (issue 38): the authors' max_tokens (1000), rubric levels 0–2, output-format preamble
#: and schema titles and descriptions, and "[Reference Answer]".
PROTOCOL_VERSIONS = {"fbi": 1, "paper": 2}
#: The reply limit the FBI authors' requests set.
PAPER_MAX_TOKENS = 1000
#: The widest score range: 0-100 (the judge's JSON schema enumerates every score).
MAX_SCORE_RANGE_WIDTH = 100
#: The most times one call may be asked (--samples).
MAX_SAMPLES = 100


@dataclass(frozen=True)
class EvaluationConfig:
    """What `fbi evaluate` asks of a judge: its model settings, the strategies, and how
    their prompts are asked. Checked when made: an InputError names what cannot be
    asked (an empty or too wide score range, --logprobs of a provider without them, an
    unknown protocol)."""

    model: ModelSettings = field(default_factory=lambda: ModelSettings(model=LOCAL_JUDGE))
    """The judge: its model, server or pool, sampling, concurrency and budget."""
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    """The strategies to run, by name (built-in or in ``prompts_dir``)."""
    score_range: tuple[int, int] | None = None
    """Overrides every scored strategy's range."""
    repair: int = 0
    """Follow-ups asking for just the verdict when a reply is unreadable."""
    prompts_dir: Path | None = None
    """A folder of the user's own strategy templates (--prompts)."""
    label: str | None = None
    """The judge's name in reports (--label); the model string when None."""
    system_prompt: str | None = None
    """Sent as the system message of every call."""
    samples: int = 1
    """Ask every call this many times (repeatability; see --samples)."""
    logprobs: int = 0
    """--logprobs: ask scored calls for this many top token log-probabilities per token, for
    the probability-weighted (G-Eval) score; 0: none."""
    explanation_chars: int | None = None
    """The explanation's length cap in the reply's JSON schema; None: 120 characters for the
    embedded judge, 600 otherwise."""
    protocol: Literal["fbi", "paper"] = "fbi"
    """What is sent: ``fbi`` (fbi's prompts' reply format, asked also as a JSON schema in
    ``response_format``) or ``paper`` (what the FBI authors sent: their system message,
    their reply schema described in the prompt, their field names and section markers, no
    ``response_format``). See docs/concepts/strategies.md."""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise InputError(f"protocol {self.protocol!r}: give one of {', '.join(PROTOCOLS)}")
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise InputError(f"samples {self.samples}: give 1 to {MAX_SAMPLES}")
        if not 0 <= self.repair <= 10:
            raise InputError(f"repair {self.repair}: give 0 to 10")
        if self.explanation_chars is not None and not 1 <= self.explanation_chars <= 100_000:
            raise InputError(f"explanation_chars {self.explanation_chars}: give 1 to 100000")
        if self.score_range is not None:
            low, high = self.score_range
            if low >= high:
                raise InputError(f"score range {low}-{high} is empty. Fix: give A-B with A < B")
            if high - low > MAX_SCORE_RANGE_WIDTH or max(abs(low), abs(high)) > 10 ** 6:
                raise InputError(
                    f"score range {low}-{high} is too wide: a scale has at most "
                    f"{MAX_SCORE_RANGE_WIDTH + 1} points (the schema lists each one). Fix: "
                    "give a range such as 1-10 or 0-100")
        if self.logprobs and supports_logprobs(self.judge, self.model.api_base) is False:
            raise InputError(
                f"--logprobs: litellm passes no token log-probabilities to {self.judge}'s "
                "provider. Fix: drop --logprobs, or judge with a provider that returns "
                "them (openai, azure, hosted_vllm, together_ai, the embedded local judge)")

    @property
    def judge(self) -> str:
        """The judge model."""
        return self.model.model

    @property
    def temperature(self) -> float:
        return self.model.temperature if self.model.temperature is not None else 0.0

    @property
    def system_message(self) -> str | None:
        """The system message of every call: the user's, else the protocol's."""
        return self.system_prompt or PROTOCOLS[self.protocol]

    @property
    def reply_tokens(self) -> int:
        """--max-tokens, else the judge's provider's own limit (the embedded judge's
        400), else what the protocol sends: fbi's 1024, or the 1000 the FBI authors'
        requests set (``llm_evaluators``)."""
        if self.model.max_tokens:
            return self.model.max_tokens
        provider = registered_provider(self.judge)
        if provider is not None and provider.reply_tokens:
            return provider.reply_tokens
        return PAPER_MAX_TOKENS if self.protocol == "paper" else 1024

    @property
    def explanation_limit(self) -> int:
        if self.explanation_chars:
            return self.explanation_chars
        provider = registered_provider(self.judge)
        return provider.explanation_chars if provider is not None and \
            provider.explanation_chars else EXPLANATION_MAX_CHARS


