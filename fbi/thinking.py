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


def split_thinking(text: str, quoted: Quoted = _never) -> tuple[str, str | None]:
    """(reply, thinking) of ``text``: every block of thinking it opens with split off
    (see the module docstring); thinking None when it opens with none."""
    position, thoughts = _skip_space(text, 0), []
    while True:
        opening = _ANY.match(text, position)
        if opening is None or opening.group(0).lower() not in _OPEN or \
                quoted(text, opening.start(), opening.end()):
            break
        depth, start, closed = 1, opening.end(), None
        for marker in _ANY.finditer(text, opening.end()):
            if quoted(text, marker.start(), marker.end()):
                continue
            depth += 1 if marker.group(0).lower() in _OPEN else -1
            if depth == 0:
                closed = marker
                break
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


#: Characters next to a marker that an answer must share with the reply for the marker to
#: count as copied from it.
COPIED_CONTEXT = 12


def copied_from(answers: tuple[str, ...]) -> Quoted:
    """A ``quoted`` test for `split_thinking`: a marker is copied from an answer when an
    answer holds it with at least ``COPIED_CONTEXT`` characters (white space and case
    aside) of the same text right before it or right after it. A judge's own closing
    marker shares no such stretch with an answer: its thinking and its reply are its
    own words."""
    normalised = [" ".join(a.split()).lower() for a in answers if a]

    def held(piece: str) -> bool:
        piece = " ".join(piece.split()).lower()
        return any(piece in a for a in normalised)

    def reach(text: str, start: int, end: int, step: int) -> int:
        """How far the answers' copy of the marker extends beyond it (``step`` +1:
        after it, −1: before it)."""
        k = 0
        while k < 4 * COPIED_CONTEXT:
            if (step > 0 and end + k >= len(text)) or (step < 0 and start - k <= 0):
                break
            piece = text[start:end + k + 1] if step > 0 else text[start - k - 1:end]
            if not held(piece):
                break
            k += 1
        return k

    def quoted(text: str, start: int, end: int) -> bool:
        return held(text[start:end]) and max(reach(text, start, end, 1),
                                              reach(text, start, end, -1)) \
            >= COPIED_CONTEXT
    return quoted
