"""Judge kinds: what kind of model a judge is decides how each call is asked and read.

A chat judge ([`ChatJudge`][fbi.judge.ChatJudge]) is sent a strategy's rendered prompt
and answers in JSON; a reward model ([`RewardJudge`][fbi.judge.RewardJudge]) is sent the
conversation and answers one number (asked pairwise, the rewards of both answers, its
verdict the higher one's slot). Each is a [`JudgeKind`][fbi.judge.JudgeKind]: which
strategies it runs, the request of one call, the parser of its replies, the schema and
score range it is asked for, its calls per instance. The kind is chosen by the model
string alone ([`judge_kind`][fbi.judge.judge_kind]), so a stored judgment is read again
by its own ``judge`` field, and planning, reading and checking never branch on a flag.

A new kind is one class registered with [`register_judge_kind`][fbi.judge.register_judge_kind]
in `JUDGE_KINDS` (a [`Registry`][fbi.registry.Registry]; fbi's own are its
``fbi.judge_kinds`` entry points, a plug-in package's the same), docs/examples/ has one,
tested: another package's kinds are asked first, then fbi's own, the last declared first,
and the chat judge, which takes any model, last.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from fbi.errors import InputError
from fbi.registry import Registry

if TYPE_CHECKING:
    from fbi.judge._config import EvaluationConfig
    from fbi.judge._strategies import Strategy, StrategyRegistry
    from fbi.providers import ModelRequest, ModelResponse
    from fbi.records import Instance
    from fbi.runs import Parsed

#: A call's parser: its replies (the first, then any --repair follow-ups) → record fields.
Parser = Callable[["list[ModelResponse]"], "Parsed"]
#: A --repair follow-up: the request and its unreadable reply → the next request.
Repair = Callable[["ModelRequest", str], "ModelRequest"]


class JudgeKind(ABC):
    """How one kind of judge is asked and read (see the module docstring)."""

    name: ClassVar[str]
    """The kind's name (``chat``, ``reward``)."""
    default_strategies: ClassVar[tuple[str, ...]]
    """What a judge of this kind runs unless told (``--strategy``)."""
    trajectory_strategies: ClassVar[tuple[str, ...]] = ("agent",)
    """What it runs on agents' trajectories unless told (``fbi hunt --trajectories``)."""
    repairs: ClassVar[bool] = True
    """Whether --repair can ask it again for a verdict it gave unreadably."""

    @abstractmethod
    def matches(self, model: str) -> bool:
        """Whether the model string names a judge of this kind."""

    @abstractmethod
    def runs(self, strategy: Strategy) -> bool:
        """Whether this kind of judge can be asked ``strategy``."""

    def check(self, model: str, strategies: list[Strategy], repair: int = 0) -> None:
        """Refuse strategies the judge cannot be asked, and --repair where it cannot
        repair: one message, what to do."""
        wrong = [s.name for s in strategies if not self.runs(s)]
        if wrong:
            raise InputError(f"{model} {self.refusal()}; strategies {', '.join(wrong)} "
                             f"cannot be asked of it. Fix: {self.fix()}")
        if repair and not self.repairs:
            raise InputError(f"--repair asks a judge again for its verdict; {model} is a "
                             f"{self.name} judge, which cannot give it again. Fix: drop "
                             "--repair")

    def refusal(self) -> str:
        """What the judge is, said when it is asked a strategy of another kind."""
        return f"is a {self.name} judge"

    def fix(self) -> str:
        """What to ask it instead."""
        return f"--strategy {' '.join(self.default_strategies)}"

    def calls_per_instance(self, strategy: Strategy, samples: int = 1) -> int:
        """Calls of one instance: both answers or both slot orders, or one
        reference-guided call; each ``samples`` times."""
        return sum(1 for _ in self.roles(strategy, None)) * samples

    def roles(self, strategy: Strategy, instance: Instance | None
              ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(role, template variables) of each call of one instance (paper §4): single
        scores both answers, pairwise compares them in both orders, reference-guided
        scores the perturbed one beside the gold. ``instance`` None: the roles only."""
        gold = instance.gold_answer if instance else ""
        perturbed = instance.perturbed_answer if instance else ""
        if strategy.paradigm == "single":
            yield "gold", {"answer": gold}
            yield "perturbed", {"answer": perturbed}
        elif strategy.paradigm == "pairwise":
            yield "gold-first", {"answer_a": gold, "answer_b": perturbed}
            yield "perturbed-first", {"answer_a": perturbed, "answer_b": gold}
        else:
            yield "perturbed", {"answer": perturbed, "reference": gold}

    @abstractmethod
    def score_range(self, strategy: Strategy, axis: str, config: EvaluationConfig
                    ) -> tuple[int, int] | None:
        """The score range asked for on an instance of ``axis`` (None: no range; ``axis``
        empty: the strategy's own range, which the run spec records)."""

    @abstractmethod
    def schema(self, strategy: Strategy, score_range: tuple[int, int] | None,
               config: EvaluationConfig) -> dict | None:
        """The JSON schema the reply is asked to follow (None: none is sent)."""

    @abstractmethod
    def request(self, registry: StrategyRegistry, strategy: Strategy, instance: Instance,
                variables: dict[str, Any], sample: int,
                score_range: tuple[int, int] | None, schema: dict | None,
                config: EvaluationConfig) -> ModelRequest:
        """The request of one planned call."""

    @abstractmethod
    def parser(self, paradigm: str, role: str, score_range: tuple[int, int] | None,
               echoes: tuple[str, ...]) -> Parser:
        """How the replies of one call become its record's fields; everything it needs is
        in the judgment itself, so a stored reply is read again the same way."""

    def repair(self, registry: StrategyRegistry, strategy: Strategy,
               score_range: tuple[int, int] | None) -> Repair | None:
        """The --repair follow-up (None: it cannot repair)."""
        return None

    @abstractmethod
    def expected_reply_tokens(self, strategy: Strategy) -> int:
        """Reply tokens a call is priced at before it is made (--dry-run)."""


#: Every judge kind by its name (see the module docstring).
JUDGE_KINDS: Registry[JudgeKind] = Registry("judge kind", "fbi.judge_kinds")


def register_judge_kind(kind: type[JudgeKind]) -> type[JudgeKind]:
    """Register a judge kind (a class decorator). The same class registered again
    replaces itself."""
    JUDGE_KINDS.add(kind.name, kind())
    return kind


def judge_kind(model: str) -> JudgeKind:
    """The kind of judge ``model`` names (the chat judge when no other takes it)."""
    for kind in judge_kinds():
        if kind.matches(model):
            return kind
    raise LookupError("no judge kind takes any model: fbi.judge registers the chat judge")


def judge_kinds() -> list[JudgeKind]:
    """Every registered kind, the one asked first first."""
    return list(JUDGE_KINDS.values())[::-1]


def default_strategies(judge: str, subject: str = "answer") -> tuple[str, ...]:
    """The strategies a judge runs unless told: its kind's (``vanilla`` for a chat
    judge, ``reward`` for a reward model); of agents' trajectories (``subject``
    ``trajectory``), ``agent`` for a chat judge, ``reward`` for a reward model."""
    kind = judge_kind(judge)
    return kind.trajectory_strategies if subject == "trajectory" else \
        kind.default_strategies
