"""Question variants for the robustness suites: rephrasings, natural noise, distracting
passages, and multiple-choice shuffles.

Noise never touches digits or the words of a gold answer (so a variant cannot change
what the right answer is), and everything is seeded. Shuffles move the option contents
while the labels A, B, C, ... stay in place, and remap the answer key.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from fbi.robustness._items import LETTERS, QAItem
from fbi.text import KEYBOARD_NEIGHBOURS

NOISE_KINDS = ("casing", "punctuation", "typos", "swaps", "whitespace", "combined")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Variant:
    """One form of a question: the original, a rephrasing, a noisy copy, a paraphrase, a
    distractor or a shuffle of its choices."""
    id: str
    """Which variant: ``original``, ``rephrase-2``, ``noise-typos``, ``paraphrase``,
    ``shuffle-3``, ..."""
    kind: str
    """``original``, ``rephrase``, ``noise``, ``paraphrase``, ``distractor`` or ``shuffle``."""
    question: str
    """The question in this form."""
    choices: tuple[str, ...] | None = None
    """The choices in this form's order (multiple-choice)."""
    context: str | None = None
    """The passage, when the item has one."""

    def gold_letter(self, item: QAItem) -> str | None:
        if not self.choices:
            return None
        return LETTERS[self.choices.index(item.answers[0])]


def original(item: QAItem) -> Variant:
    """An item's unperturbed question as variant 0."""
    return Variant("original", "original", item.question, item.choices, item.context)


def _protected_words(item: QAItem) -> set[str]:
    words = {w.lower() for gold in item.answers for w in re.findall(r"\w+", gold)}
    for choice in item.choices or ():
        words |= {w.lower() for w in re.findall(r"\w+", choice)}
    return words


def _editable(token: str, protected: set[str]) -> bool:
    core = re.sub(r"\W", "", token).lower()
    return bool(core) and not any(c.isdigit() for c in token) and core not in protected


def add_noise(item: QAItem, kind: str, rng: random.Random) -> str:
    """The question with one kind of natural noise (or ``combined``: several at once)."""
    if kind == "combined":
        text = item.question
        for part in ("casing", "typos", "whitespace"):
            text = add_noise(item.model_copy(update={"question": text}), part, rng)
        return text
    protected = _protected_words(item)
    tokens = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(item.question)]
    editable = [t for t in tokens if _editable(t[2], protected)]
    text = item.question
    if kind == "whitespace":
        spaces = [m.start() for m in re.finditer(" ", text)]
        for position in sorted(rng.sample(spaces, min(len(spaces), 2)), reverse=True):
            text = text[:position] + "  " + text[position:]
        return "  " + text if not spaces else text + " "
    if kind == "punctuation":
        # drop punctuation outside numbers and gold words
        keep = {i for s, e, t in tokens if not _editable(t, protected) for i in range(s, e)}
        return "".join(c for i, c in enumerate(text)
                       if i in keep or c not in ".,;:!?'\"()-")
    chosen = rng.sample(editable, min(len(editable), 1 if kind == "casing" else 2)) \
        if editable else []
    for start, end, token in sorted(chosen, reverse=True):
        text = text[:start] + _noisy_token(token, kind, rng) + text[end:]
    if kind == "casing" and not chosen:
        text = text.lower() if not protected else text
    return text


def _noisy_token(token: str, kind: str, rng: random.Random) -> str:
    letters = [i for i, c in enumerate(token) if c.isalpha()]
    if kind == "casing":
        return token.upper() if token[:1].islower() else token.lower()
    if len(letters) < 3:
        return token
    i = rng.choice(letters[1:-1]) if len(letters) > 2 else letters[0]
    if kind == "typos" and token[i].lower() in KEYBOARD_NEIGHBOURS:
        return token[:i] + rng.choice(KEYBOARD_NEIGHBOURS[token[i].lower()]) + token[i + 1:]
    j = i + 1 if i + 1 < len(token) and token[i + 1].isalpha() else i - 1
    a, b = sorted((i, j))
    return token[:a] + token[b] + token[a] + token[b + 1:]  # swap two neighbouring letters


def noise_variants(item: QAItem, seed: int, distractors: list[str]) -> list[Variant]:
    """An item's seeded natural-noise variants: each kind of noise, a paraphrase, and for
    context questions a distractor passage before and after."""
    rng = random.Random(f"{seed}:{item.id}")
    variants = [Variant(f"noise-{kind}", "noise", add_noise(item, kind, rng), item.choices,
                        item.context) for kind in NOISE_KINDS]
    if item.context and distractors:
        passage = rng.choice(distractors)
        variants += [
            Variant("distractor-before", "distractor", item.question, item.choices,
                    passage + "\n\n" + item.context),
            Variant("distractor-after", "distractor", item.question, item.choices,
                    item.context + "\n\n" + passage)]
    return variants


def shuffle_variants(item: QAItem, count: int, seed: int) -> list[Variant]:
    """``count`` orders of the option contents; the labels stay, the key moves with them."""
    if not item.choices:
        return []
    rng = random.Random(f"{seed}:{item.id}:shuffle")
    variants, seen = [], {item.choices}
    for number in range(1, count + 1):
        order = list(item.choices)
        for _ in range(20):  # prefer orders not seen yet
            rng.shuffle(order)
            if tuple(order) not in seen or len(seen) >= _orders(len(order)):
                break
        seen.add(tuple(order))
        variants.append(Variant(f"shuffle-{number}", "shuffle", item.question, tuple(order),
                                item.context))
    return variants


def _orders(n: int) -> int:
    result = 1
    for i in range(2, n + 1):
        result *= i
    return result


def rephrase_variants(item: QAItem, rewrites: list[str]) -> list[Variant]:
    """The MultiQ&A rephrasings of an item, numbered from 1."""
    return [Variant(f"rephrase-{n}", "rephrase", text, item.choices, item.context)
            for n, text in enumerate(rewrites, start=1)]
