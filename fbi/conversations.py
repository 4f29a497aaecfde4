"""Conversations: an instruction that is the last user turn of a chat, the earlier turns
its context, and the answer under test the assistant's final turn.

fbi judges, perturbs and reports the **final assistant turn in its context**, as MT-Bench
(Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", §3 and
Appendix A, its multi-turn single and pairwise prompts) judges an assistant's answer to
the second question with the first exchange shown. fbi's prompts differ from MT-Bench's
in three ways, all because every strategy keeps one answer slot:

* the answer under test stands apart from the conversation (MT-Bench writes it as the
  conversation's last turn and asks the judge to focus on it);
* a pair's shared history is shown once: both answers reply to the same conversation
  (MT-Bench's pairs are two models' whole conversations, each with its own first answer;
  fbi reads only pairs whose turns agree up to the last);
* the judged turn is the last, however many there are (MT-Bench: the second of two).

A single-turn instance has no context, and its prompt is the instruction alone: the
prompts of every single-turn dataset are what they were before conversations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

#: (role, content): one turn of a conversation.
Message = tuple[str, str]
ROLES = ("system", "user", "assistant")


class ConversationError(ValueError):
    """A conversation fbi cannot read: the message says what is wrong with which turn."""


def parse_messages(value: Any, name: str) -> tuple[Message, ...]:
    """A list of ``{"role", "content"}`` objects (or its JSON text, as a CSV cell holds
    it) as (role, content) pairs; ConversationError for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ConversationError(f"'{name}' is not a JSON list of messages") from None
    if not isinstance(value, list | tuple):
        raise ConversationError(f"'{name}' must be a list of messages, not "
                                f"{type(value).__name__}")
    messages = []
    for number, message in enumerate(value, start=1):
        if isinstance(message, list | tuple) and len(message) == 2:
            role, content = message
        elif isinstance(message, dict):
            extra = set(message) - {"role", "content"}
            if extra:
                raise ConversationError(f"'{name}' message {number} has unknown keys "
                                        f"{sorted(extra)} (give role and content)")
            role, content = message.get("role"), message.get("content")
        else:
            raise ConversationError(f"'{name}' message {number} is not an object with role "
                                    "and content")
        if role not in ROLES:
            raise ConversationError(f"'{name}' message {number}: role {role!r} (give one of "
                                    f"{', '.join(ROLES)})")
        if not isinstance(content, str) or not content.strip():
            raise ConversationError(f"'{name}' message {number} ({role}): content must be "
                                    "non-empty text")
        messages.append((role, content))
    return tuple(messages)


def check_context(context: Sequence[Message], name: str = "context") -> tuple[Message, ...]:
    """The turns before the final question: an optional system message, then user and
    assistant turns alternating from a user turn, ending with an assistant turn (or none
    at all)."""
    turns = list(context)
    if turns and turns[0][0] == "system":
        turns = turns[1:]
    for number, (role, _) in enumerate(turns):
        expected = "user" if number % 2 == 0 else "assistant"
        if role != expected:
            raise ConversationError(f"'{name}' turn {number + 1} is {role}, where a "
                                    f"{expected} turn belongs (user and assistant take turns, "
                                    "a system message only first)")
    if turns and turns[-1][0] != "assistant":
        raise ConversationError(f"'{name}' ends with a {turns[-1][0]} turn: the turns before "
                                "the final question end with the assistant's reply")
    return tuple(context)


def split_final_turn(messages: Sequence[Message], name: str = "messages"
                     ) -> tuple[tuple[Message, ...], str, str]:
    """(context, final user turn, final assistant turn) of a conversation that ends with
    the assistant's reply to a user turn."""
    if len(messages) < 2 or messages[-1][0] != "assistant" or messages[-2][0] != "user":
        raise ConversationError(f"'{name}' must end with a user turn and the assistant's "
                                "reply to it (the answer under test)")
    return check_context(messages[:-2], name), messages[-2][1], messages[-1][1]


def shared_turns(chosen: Sequence[Message], rejected: Sequence[Message]
                 ) -> tuple[tuple[Message, ...], str, str, str]:
    """(context, final question, chosen answer, rejected answer) of a preference pair of
    whole conversations, which must agree on every turn but the last."""
    context, question, good = split_final_turn(chosen, "chosen")
    other_context, other_question, bad = split_final_turn(rejected, "rejected")
    if (context, question) != (other_context, other_question):
        turn = next((n for n, (a, b) in enumerate(zip(chosen, rejected, strict=False),
                                                   start=1) if a != b), len(chosen))
        raise ConversationError(f"'chosen' and 'rejected' differ at turn {turn}, before their "
                                "last: fbi judges two answers to one conversation")
    return context, question, good, bad


def turn_of(context: Sequence[Message]) -> int:
    """Which user turn the final question is (1: a single-turn instance)."""
    return 1 + sum(role == "user" for role, _ in context)


CONVERSATION_NOTE = ("The conversation so far is below; the answer to evaluate is the "
                     "assistant's reply to the user's last turn. Judge that reply only, in "
                     "the light of the conversation.")


def question_text(context: Sequence[Message], instruction: str) -> str:
    """What a prompt shows as the question: the instruction alone, or for a conversation
    the note, the earlier turns and the last user turn (MT-Bench's ``### User:`` /
    ``### Assistant:`` headings)."""
    if not context:
        return instruction
    names = {"system": "System", "user": "User", "assistant": "Assistant"}
    turns = [f"### {names[role]}:\n{content}" for role, content in context]
    return "\n\n".join([CONVERSATION_NOTE, *turns, f"### User:\n{instruction}"])


def as_dicts(context: Sequence[Message]) -> list[dict[str, str]]:
    """The turns as files hold them: ``[{"role": ..., "content": ...}, ...]``."""
    return [{"role": role, "content": content} for role, content in context]
