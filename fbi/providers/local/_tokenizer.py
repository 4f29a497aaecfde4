"""The embedded model's tokenizer and chat template, read from its GGUF file, as
llama.cpp applies them (``llama-vocab.cpp``: the ``gpt2`` byte-level BPE with the
``smollm`` pre-tokenizer; llama-cpp-python's ``Jinja2ChatFormatter``).

Pre-tokenizing follows llama.cpp's two expressions for ``smollm`` in turn: every digit
alone (``\\p{N}``), then GPT-2's word pattern on each piece. Control and user-defined
tokens (``<|im_start|>``…) are cut out of the text first, as ``tokenize(special=True)``
does. Checked token for token against llama-cpp-python (tests/test_embedded_runtime.py).
"""

from __future__ import annotations

import itertools
from datetime import datetime
from functools import lru_cache
from typing import Any

import regex

#: llama.cpp's expressions for the ``smollm`` pre-tokenizer, applied one after the other.
_SPLITS = (
    regex.compile(r"\p{N}"),
    regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
                  r"|\s+(?!\S)|\s+"),
)
CONTROL, USER_DEFINED = 3, 4  # GGUF token types parsed out of the text as one token
#: Texts of tokens llama.cpp treats as end of generation besides the EOS id
#: (``llama_vocab::impl::load``'s list).
_END_TEXTS = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
              "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>"}


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's map of the 256 bytes onto printable characters."""
    visible = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
               *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in visible:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return chars


_BYTE_CHARS = _byte_alphabet()
_CHAR_BYTES = {char: byte for byte, char in _BYTE_CHARS.items()}


class Tokenizer:
    """Text to token ids and back, with the vocabulary and merges of a GGUF file."""

    def __init__(self, tokens: list[str], token_types: list[int], merges: list[str],
                 bos_id: int, eos_id: int, chat_template: str):
        self.tokens = tokens
        self._ids = {text: i for i, text in enumerate(tokens)}
        self._ranks = {tuple(merge.split(" ", 1)): rank for rank, merge in enumerate(merges)}
        special = [text for text, kind in zip(tokens, token_types, strict=True)
                   if kind in (CONTROL, USER_DEFINED) and text]
        # longest first, so a special token that contains another is cut whole
        self._special = regex.compile("|".join(
            regex.escape(text) for text in sorted(special, key=len, reverse=True))) \
            if special else None
        self._control = {i for i, kind in enumerate(token_types) if kind == CONTROL}
        self.eos_id = eos_id
        self.end_ids = frozenset({eos_id} | {i for i, text in enumerate(tokens)
                                             if text in _END_TEXTS})
        self.pieces = [self._piece(i) for i in range(len(tokens))]
        self._template = _compile_template(chat_template)
        self._eos_text, self._bos_text = tokens[eos_id], tokens[bos_id]

    # -- text to tokens ------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``, special tokens parsed (llama.cpp's ``special=True``), no
        BOS added (the chat template writes what the model needs)."""
        ids: list[int] = []
        start = 0
        for match in (self._special.finditer(text) if self._special else ()):
            ids += self._encode_plain(text[start:match.start()])
            ids.append(self._ids[match.group()])
            start = match.end()
        ids += self._encode_plain(text[start:])
        return ids

    def _encode_plain(self, text: str) -> list[int]:
        words = [text] if text else []
        for expression in _SPLITS:
            words = [piece for word in words for piece in _split(expression, word)]
        ids: list[int] = []
        for word in words:
            ids += self._word_ids("".join(_BYTE_CHARS[b] for b in word.encode("utf-8")))
        return ids

    @lru_cache(maxsize=65_536)  # noqa: B019 -- one tokenizer per process, words repeat
    def _word_ids(self, word: str) -> tuple[int, ...]:
        parts = list(word)
        while len(parts) > 1:
            ranked = [(self._ranks.get((a, b)), i)
                      for i, (a, b) in enumerate(itertools.pairwise(parts))]
            ranked = [(rank, i) for rank, i in ranked if rank is not None]
            if not ranked:
                break
            _, i = min(ranked)  # the lowest rank, leftmost on a tie
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        ids: list[int] = []
        for part in parts:
            if part in self._ids:
                ids.append(self._ids[part])
            else:  # not in the vocabulary: byte by byte, as llama.cpp falls back
                ids += [self._ids[char] for char in part]
        return tuple(ids)

    # -- tokens to text ------------------------------------------------------------

    def _piece(self, token: int) -> bytes:
        """A token's bytes as ``llama_token_to_piece(special=False)`` gives them: control
        tokens render as nothing."""
        if token in self._control:
            return b""
        text = self.tokens[token]
        if all(char in _CHAR_BYTES for char in text):
            return bytes(_CHAR_BYTES[char] for char in text)
        return text.encode("utf-8")  # user-defined tokens are kept as written

    # -- chat ----------------------------------------------------------------------

    def chat_prompt(self, messages: list[dict[str, Any]]) -> list[int]:
        """The tokens the model reads for ``messages``: the GGUF's chat template with
        the generation prompt, as llama-cpp-python's ``Jinja2ChatFormatter`` renders it."""
        text = self._template.render(
            messages=messages, eos_token=self._eos_text, bos_token=self._bos_text,
            add_generation_prompt=True, functions=None, function_call=None, tools=None,
            tool_choice=None, strftime_now=lambda fmt: datetime.now().strftime(fmt))
        return self.encode(text)


def _split(expression: regex.Pattern, text: str) -> list[str]:
    """``text`` cut at ``expression``'s matches, the matches and the text between kept
    (llama.cpp's ``unicode_regex_split``)."""
    pieces, start = [], 0
    for match in expression.finditer(text):
        if match.start() > start:
            pieces.append(text[start:match.start()])
        if match.end() > match.start():
            pieces.append(match.group())
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _compile_template(source: str):
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str):
        raise ValueError(message)

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                extensions=["jinja2.ext.loopcontrols"])
    environment.globals["raise_exception"] = raise_exception
    return environment.from_string(source)
