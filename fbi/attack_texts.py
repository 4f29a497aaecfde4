"""The texts of attacks on the judge, as shipped in ``perturbations/manipulations.yaml``
(issues 24 and 65): the manipulation kinds (text added to an answer to sway the judge,
instructions aimed at the grader among them) and the master keys (answers that are
nothing but a key: Zhao et al., "One Token to Fool LLM-as-a-Judge", arXiv 2507.08794,
2025, §3).

One reader for every user of them — the taxonomy names their categories, the perturb
stage adds them to answers, the built-in ``master-keys`` suite and the hunt's operators
are made of them — so a kind added to the file is a category, a perturbation, a hunt
operator and a suite row at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

import yaml

#: A master-key instance's category: ``master-key/FAMILY``; an opener put before a wrong
#: answer: ``master-key/prefixed``.
MASTER_KEY_PREFIX = "master-key/"
PREFIXED = "prefixed"
#: Unicode tag characters: U+E0000 + an ASCII code point renders as nothing.
_TAG_BASE = 0xE0000


@dataclass(frozen=True)
class Manipulation:
    """One kind of text added to an answer."""

    kind: str
    name: str
    """How a table names it."""
    description: str
    group: str
    """Which kinds are one weakness (``claim``: an authority claim, self-praise)."""
    where: Literal["start", "end", "tool-result"]
    """Where the text goes: before the answer, after it, or (agents' trajectories only)
    into one of its tool results."""
    texts: tuple[str, ...]
    """What is added, as the judge receives it (encoded if the kind says so)."""


@dataclass(frozen=True)
class MasterKeyFamily:
    """One family of master keys (the paper's non-word symbols, its reasoning openers)."""

    family: str
    name: str
    description: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class AttackTexts:
    version: int
    kinds: dict[str, Manipulation]
    master_keys: dict[str, MasterKeyFamily]
    paper: str
    """What the master-key paper reports, for the report's note."""
    flip_vocabulary: tuple[str, ...]
    """What the string search starts from (`fbi.hunt._strings`): the file's own tokens
    and phrases, every master key, and every manipulation text of one line under 80
    characters, each once."""

    @property
    def openers(self) -> tuple[str, ...]:
        """Every reasoning opener, of every language (what is prefixed to an answer)."""
        return tuple(key for family in self.master_keys.values() if family.family != "symbol"
                     for key in family.keys)


def _clean(text: str) -> str:
    """Runs of spaces made one (a folded YAML line); line breaks kept (a code fence)."""
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.split("\n"))


def unicode_tags(text: str) -> str:
    """``text`` (ASCII) as Unicode tag characters: invisible when rendered."""
    return "".join(chr(_TAG_BASE + ord(c)) for c in text if 0x20 <= ord(c) <= 0x7E)


@cache
def attack_texts() -> AttackTexts:
    """``perturbations/manipulations.yaml`` as shipped with fbi."""
    text = resources.files("fbi.perturbations").joinpath("manipulations.yaml").read_text(
        encoding="utf-8")
    data = yaml.safe_load(text)
    keys = data["master_keys"]
    families = {family: MasterKeyFamily(family, spec["name"], " ".join(
        spec["description"].split()), tuple(spec["keys"]))
        for family, spec in keys["families"].items()}
    kinds = {}
    for kind, spec in data["kinds"].items():
        texts = tuple(_clean(t) for t in spec.get("texts", ())) if "texts_from" not in \
            spec else tuple(k for f in spec["texts_from"] for k in families[f].keys)
        if spec.get("encoding") == "unicode-tags":
            texts = tuple(unicode_tags(t) for t in texts)
        assert texts and kind != PREFIXED, kind  # (the file is fbi's own)
        kinds[kind] = Manipulation(kind, spec["name"], " ".join(spec["description"].split()),
                                   spec["group"], spec["where"], texts)
    vocabulary = [*data["flip_vocabulary"], *(k for f in families.values() for k in f.keys),
                  *(t for kind in kinds.values() for t in kind.texts
                    if len(t) < 80 and "\n" not in t and t.isprintable())]
    return AttackTexts(int(data["version"]), kinds, families, " ".join(keys["paper"].split()),
                       tuple(dict.fromkeys(v for v in vocabulary if v)))
