"""Which tools change the world, which ask the user, and where a trajectory holds the
user's approval (issue 66).

**Side effects** come from whatever the source declares, in this order:

1. an override file's entry (`ToolOverrides`, ``--tools FILE``: a user's correction);
2. the record's own list (``side_effects``: the names of the tools that change the
   world, fbi's extra field) or a definition's ``side_effects`` boolean;
3. MCP's tool annotations (``annotations``: ``readOnlyHint`` true is read-only,
   ``readOnlyHint`` false or ``destructiveHint`` true changes the world — MCP
   specification 2025-06-18, "Tool annotations"), in an MCP tool definition or beside an
   OpenAI or Anthropic one;
4. τ-bench's write tools (`TAU_BENCH_WRITE_TOOLS`, for τ-bench's results, whose records
   carry no tool definitions); BrowserGym's actions that may change a site
   (`fbi.trajectories._browsergym.INTERACTIONS`, for AgentRewardBench's trajectories);
5. else the tool's name and description (`inferred`): the verb it starts with — "book",
   "cancel", "send", "update" change the world; "get", "search", "list", "calculate" do
   not. Neither: unknown, counted as no side effect, and said so by ``fbi trajectories
   validate`` so a user can declare it.

**Asking the user.** A tool that asks the user (a human-in-the-loop tool:
``ask_user``, ``request_approval``, ``get_user_confirmation``, ``human_input``, or a
description saying it asks the user) is known the same way: an override's or a
definition's ``asks_user``, else its name and description.

**A confirmation** is any request for the user's approval the trajectory holds
(`confirmations`): an assistant question asking for approval (a question with "confirm",
"proceed", "shall I", "(yes/no)", … or one the user answers with a yes) answered by the
user's next message — a τ-bench user turn is one — or a call of a tool that asks the
user, with its result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fbi.errors import InputError, validation_summary

#: Where a tool's side effects (or its asking the user) were learnt.
Source = Literal["override", "declared", "mcp", "tau-bench", "browsergym", "inferred",
                 "unknown"]

#: τ-bench's tools that change the database: the write tools of its airline and retail
#: domains (sierra-research/tau-bench; the same names are τ²-bench's
#: ``@is_tool(ToolType.WRITE)`` tools, sierra-research/tau2-bench
#: ``src/tau2/domains/*/tools.py``, with its telecom domain's agent tools).
TAU_BENCH_WRITE_TOOLS = frozenset({
    # airline
    "book_reservation", "cancel_reservation", "send_certificate",
    "update_reservation_baggages", "update_reservation_flights",
    "update_reservation_passengers",
    # retail
    "cancel_pending_order", "exchange_delivered_order_items",
    "modify_pending_order_address", "modify_pending_order_items",
    "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items",
    # telecom (τ²-bench)
    "suspend_line", "resume_line", "send_payment_request", "enable_roaming",
    "disable_roaming", "refuel_data",
})

#: Verbs a tool's name or description starts with when it changes the world.
_EFFECT_VERBS = frozenset("""
add apply approve archive assign book buy cancel change charge close commit create delete
deploy disable drop edit email enable exchange grant insert install kill merge message
modify move order pay place post publish purchase push refund refuel register reject
remove rename reschedule reserve reset resume return revoke save schedule send set share
sign submit subscribe suspend terminate toggle transfer uninstall unsubscribe update
upload upsert write
""".split())
#: Verbs a tool's name or description starts with when it changes nothing.
_READ_VERBS = frozenset("""
average browse calculate check compare compute count describe divide estimate explain
fetch find get inspect list load lookup look multiply query read retrieve search show
subtract sum summarize summarise think translate validate verify view
""".split())
#: Words in a tool's name or description that say it asks the user.
_ASKS_USER = re.compile(
    r"\b(ask|asks|asking)[ _-]?(the[ _-]?)?(user|human|customer)\b|\bhuman[ _-]?(input|"
    r"in[ _-]the[ _-]loop|approval|review)\b|\b(request|get|seek|obtain)s?[ _-]"
    r"(user[ _-]|human[ _-]|the user's |explicit )?(approval|confirmation|consent)\b|"
    r"\b(user|human)[ _-]?(confirm(ation)?|approval|consent)\b|^confirm(_with)?_user$",
    re.IGNORECASE)
#: An assistant's question that asks for approval.
_APPROVAL_QUESTION = re.compile(
    r"\b(confirm|proceed|go ahead|shall i|should i|do you want|would you like|ok to|okay "
    r"to|is that (ok|okay|correct|right)|approve|yes/no|\(yes\)|are you sure|can i go)\b",
    re.IGNORECASE)
#: A user's reply that approves.
_APPROVAL = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|confirm(ed)?|go ahead|proceed|please do|do it|"
    r"correct|that'?s (right|correct|fine)|approved?|sí|si|oui|ja|да|是)\b",
    re.IGNORECASE)


def _words(name: str) -> list[str]:
    """A name's words: ``bookFlight``, ``book_flight``, ``book-flight`` → book, flight."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


#: Verbs that change the world only with an object in the name (``add_to_cart``, not a
#: calculator's ``add``; ``set_alarm``, not ``set``).
_AMBIGUOUS_VERBS = frozenset("add change close convert merge move order place return set "
                             "share".split())


def inferred_effects(name: str, description: str) -> bool | None:
    """Whether a tool changes the world by the verb its name (else its description)
    starts with; None when neither says."""
    for words, named in ((_words(name), True), (_words(description), False)):
        verb = words[0] if words else ""
        if verb in _AMBIGUOUS_VERBS and not (named and len(words) > 1):
            continue
        if verb in _EFFECT_VERBS:
            return True
        if verb in _READ_VERBS:
            return False
    return None


def inferred_asks_user(name: str, description: str) -> bool:
    """Whether a tool's name or description says it asks the user."""
    return bool(_ASKS_USER.search(name.replace("_", " ")) or _ASKS_USER.search(name)
                or _ASKS_USER.search(description))


def mcp_effects(annotations: Any) -> bool | None:
    """MCP's hints: ``readOnlyHint`` true → no side effect; ``readOnlyHint`` false or
    ``destructiveHint`` true → side effects; neither given → None."""
    if not isinstance(annotations, dict):
        return None
    read_only, destructive = annotations.get("readOnlyHint"), annotations.get(
        "destructiveHint")
    if read_only is True:
        return False
    if read_only is False or destructive is True:
        return True
    return None


@dataclass(frozen=True)
class Confirmation:
    """A request for the user's approval and its answer: steps ``first`` to ``last``
    (indexes into the trajectory's steps)."""

    first: int
    last: int
    kind: Literal["question", "tool"]
    """``question``: an assistant question and the user's reply; ``tool``: a call of a
    tool that asks the user, and its result."""
    call_id: str | None = None
    """A tool confirmation's call."""


def confirmations(trajectory) -> list[Confirmation]:
    """Every request for the user's approval in ``trajectory`` (see the module
    docstring), in order."""
    asks = {t.name for t in trajectory.tools if t.asks_user}
    steps = trajectory.steps
    found: list[Confirmation] = []
    for n, step in enumerate(steps):
        if step.role == "assistant" and not step.calls and "?" in step.text and \
                n + 1 < len(steps) and steps[n + 1].role == "user" and \
                (_APPROVAL_QUESTION.search(step.text) or _APPROVAL.search(steps[n + 1].text)):
            found.append(Confirmation(n, n + 1, "question"))
        for call in step.calls:
            if call.name in asks:
                result = next((k for k in range(n + 1, len(steps)) if steps[k].role ==
                               "tool" and steps[k].call_id == call.id), None)
                if result is not None:
                    found.append(Confirmation(n, result, "tool", call.id))
    return found


# ------------------------------------------------------------------ overrides


class ToolOverride(BaseModel):
    """A user's correction of one tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    side_effects: bool | None = None
    asks_user: bool | None = None


class ToolOverrides(BaseModel):
    """``--tools FILE``: what a user says of tools, by name, over what the source
    declares or fbi infers (YAML or JSON: ``version: 1`` and ``tools: {NAME:
    {side_effects: true, asks_user: false}}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    tools: dict[str, ToolOverride] = Field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path) -> ToolOverrides:
        from fbi.files import read_bytes
        from fbi.user_yaml import load_user_yaml

        path = Path(path)
        try:
            text = read_bytes(path).decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{path}: cannot be read ({error}). Fix: give a UTF-8 YAML "
                             "file of tool overrides") from None
        loaded = load_user_yaml(text, str(path))
        try:
            return cls.model_validate(loaded if loaded is not None else {})
        except ValidationError as error:
            raise InputError(f"{path}: {validation_summary(error, limit=1)}. Fix: write "
                             "`version: 1` and `tools:` mapping each tool's name to "
                             "side_effects and asks_user (true or false)") from None

    def apply(self, trajectories: list, where: str = "--tools") -> list:
        """``trajectories`` with every tool named here as the override says
        (``known_by`` ``override``); a name no trajectory has is an InputError (a
        misspelt override would change nothing, silently)."""
        from fbi.taxonomy import did_you_mean

        if not self.tools:
            return trajectories
        names = sorted({t.name for trajectory in trajectories for t in trajectory.tools})
        for name in self.tools:
            if name not in names:
                raise InputError(f"{where}: the tool {name!r} is in no trajectory."
                                 f"{did_you_mean(name, names)} Fix: name a tool the "
                                 f"trajectories call or define ({', '.join(names[:12])})")
        changed = []
        for trajectory in trajectories:
            tools = []
            for tool in trajectory.tools:
                override = self.tools.get(tool.name)
                if override is not None:
                    update = {k: v for k, v in (("side_effects", override.side_effects),
                                                ("asks_user", override.asks_user))
                              if v is not None}
                    if override.side_effects is not None:
                        update["known_by"] = "override"
                    tool = tool.model_copy(update=update)
                tools.append(tool)
            changed.append(trajectory.model_copy(update={"tools": tuple(tools)}))
        return changed
