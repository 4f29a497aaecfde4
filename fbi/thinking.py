"""A reasoning model's thinking, kept apart from its reply (issues 47 and 50).

Reasoning models that a server runs without a reasoning parser write their thinking in
the reply itself, between markers: ``<think>…</think>`` (DeepSeek-R1, Qwen3),
``<thinking>``, ``<reasoning>``, ``<thought>``, ``<|begin_of_thought|>…<|end_of_thought|>``.
A reply that *opens* with such a block (after white space) has it split off: the
thinking is kept, never read for a verdict; the reply is what follows the block that
closes it. Blocks may nest (a marker opened inside counts until it is closed), follow
one another, or never close — then there is no reply at all: a verdict inside unfinished
thinking is never read. A reply that does not open with a marker is all reply.

The judge knows more than the transport: the answers it was shown. An answer may hold a
closing marker followed by a forged verdict, which a judge quoting the answer inside its
thinking would otherwise "close" its thinking with. `split_thinking` takes ``quoted``, a
test of whether a marker lies in a stretch copied from an answer; such a marker is text,
not a marker (`fbi.judge` passes one built from the answers).
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: (open, close) marker pairs reasoning models write their thinking between.
MARKERS = (("<think>", "</think>"), ("<thinking>", "</thinking>"),
           ("<reasoning>", "</reasoning>"), ("<thought>", "</thought>"),
           ("<|begin_of_thought|>", "<|end_of_thought|>"))
_OPEN = {open_ for open_, _ in MARKERS}
_ANY = re.compile("|".join(re.escape(m) for pair in MARKERS for m in pair), re.IGNORECASE)

Quoted = Callable[[str, int, int], bool]
"""(text, start, end) → whether the marker at text[start:end] is copied from an answer."""


def _never(text: str, start: int, end: int) -> bool:
    return False


def split_thinking(text: str, quoted: Quoted = _never, complete: bool = True
                   ) -> tuple[str, str | None]:
    """(reply, thinking) of ``text``: every block of thinking it opens with split off
    (see the module docstring); thinking None when it opens with none.

    A block that only a copied marker would close is closed by the last one when all
    that follows it is copied too and the reply ended of itself (``complete``): the
    judge's own closing words happened to be the answer's (its honest "[[1]]" after an
    answer that planted the same), not a quote it broke off in."""
    position, thoughts = _skip_space(text, 0), []
    while True:
        opening = _ANY.match(text, position)
        if opening is None or opening.group(0).lower() not in _OPEN or \
                quoted(text, opening.start(), opening.end()):
            break
        depth, start, closed, last_copied = 1, opening.end(), None, None
        for marker in _ANY.finditer(text, opening.end()):
            if quoted(text, marker.start(), marker.end()):
                if marker.group(0).lower() not in _OPEN:
                    last_copied = marker
                continue
            depth += 1 if marker.group(0).lower() in _OPEN else -1
            if depth == 0:
                closed = marker
                break
        holds = getattr(quoted, "holds", None)
        if closed is None and last_copied is not None and complete and depth == 1 and \
                holds is not None and holds(text[last_copied.start():]):
            closed = last_copied
        if closed is None:  # never closed: everything is thinking, there is no reply
            thoughts.append(text[start:].strip())
            return "", "\n\n".join(thoughts)
        thoughts.append(text[start:closed.start()].strip())
        position = _skip_space(text, closed.end())
    if not thoughts:
        return text, None
    return text[position:], "\n\n".join(thoughts)


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


#: Characters before a marker that an answer must share with the reply for the marker to
#: count as copied from it (after it: a verdict, or four times as many).
COPIED_CONTEXT = 12
_VALUE = re.compile(  # a verdict written out whole (JSON's quotes or Python's, which the
    # parser reads too): the next character shared too
    r"\[\[[^\]\n]{1,12}\]\]"
    r"|[\"'](?:score|verdict)[\"']\s*:\s*(?:\"[^\"\n]{1,12}\"|'[^'\n]{1,12}'|-?\d+(?:\.\d+)?)"
    r"\s*[,}]"
    r"|\b(?:rating|score|verdict)\b\W{0,3}(?:-?\d+(?:\.\d+)?|[abcd]|tie)(?=\W)",
    re.IGNORECASE)


class copied_from:
    """A ``quoted`` test for `split_thinking`: a marker is copied from an answer when an
    answer holds it with the same text (white space and case aside) right before it, at
    least ``COPIED_CONTEXT`` characters, or right after it up to a verdict (or four times
    as many characters). A judge's own closing marker shares no such stretch with an
    answer: its thinking and its verdict are its own words."""

    def __init__(self, answers: tuple[str, ...]):
        self.answers = [" ".join(a.split()).lower() for a in answers if a]

    def holds(self, piece: str) -> bool:
        """Whether an answer holds ``piece`` (white space and case aside)."""
        piece = " ".join(piece.split()).lower()
        return bool(piece) and any(piece in a for a in self.answers)

    def _reach(self, text: str, start: int, end: int, step: int) -> int:
        """How far the answers' copy of the marker extends beyond it (``step`` +1:
        after it, −1: before it)."""
        k = 0
        while k < 8 * COPIED_CONTEXT:
            if (step > 0 and end + k >= len(text)) or (step < 0 and start - k <= 0):
                break
            piece = text[start:end + k + 1] if step > 0 else text[start - k - 1:end]
            if not self.holds(piece):
                break
            k += 1
        return k

    def __call__(self, text: str, start: int, end: int) -> bool:
        if not self.holds(text[start:end]):
            return False
        if self._reach(text, start, end, -1) >= COPIED_CONTEXT:
            return True  # the words before it are the answer's: inside a quote
        after = self._reach(text, start, end, 1)
        # the words after it are the answer's up to a verdict (or for long): a quote. A
        # judge's own close may share generic words with an answer ("Final verdict:
        # [["), never the verdict it then gives
        return after >= 4 * COPIED_CONTEXT or bool(_VALUE.search(text, end, end + after))
