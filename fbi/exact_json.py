"""JSON read exactly, or refused with a reason: what no file fbi writes could hold
exactly — NaN and infinities, integers past 64 bits, lone surrogates, nesting past
`MAX_JSON_DEPTH`, a key given twice in one object — never reaches a column. Every JSON
row fbi reads from outside (`fbi.datasets._containers`) goes through `exact_json`."""

from __future__ import annotations

import json
import re
from typing import Any

#: The deepest nesting of arrays and objects a JSON row may have (fbi's rows are flat;
#: a conversation is three levels deep).
MAX_JSON_DEPTH = 32
#: The largest integer a JSON row may hold: what a 64-bit column stores.
MAX_JSON_INT = 2 ** 63 - 1


class JSONRefused(ValueError):
    """A JSON text fbi does not read: not JSON, or JSON with values no column can hold
    exactly (non-finite numbers, integers past 64 bits, lone surrogates, deep nesting)."""

    def __init__(self, message: str, fix: str, position: int | None = None,
                 extra_data: bool = False):
        super().__init__(message)
        self.message, self.fix, self.position, self.extra_data = \
            message, fix, position, extra_data

    def where(self, text: str) -> str:
        """``line N`` of the position in ``text`` (for a multi-line file)."""
        if self.position is None:
            return ""
        return f"line {text.count(chr(10), 0, self.position) + 1}"


def _refuse_constant(name: str) -> Any:
    raise JSONRefused(f"the number {name} (not standard JSON, and no rate can use it)",
                      "write a finite number, or null")


def _checked_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 19 or abs(value := int(digits)) > MAX_JSON_INT:
        raise JSONRefused(f"an integer of {len(digits.lstrip('-'))} digits, past what a "
                          "64-bit column holds", "write it as text (in quotes)")
    return value


def _checked_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JSONRefused(f"the number {text[:40]} overflows to infinity",
                          "write a smaller number, or text")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: one written twice would be read as
    its last value, and the first silently lost."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise JSONRefused(f"the key {twice!r} is given twice in one object (its first "
                          "value would be lost)", "keep one of them")
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def exact_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``text`` parsed as JSON, refusing (`JSONRefused`) what no file fbi writes
    could hold exactly: NaN and infinities, integers past 64 bits, lone surrogates
    (``"\\ud800"``: text that cannot be written as UTF-8), and nesting deeper than
    ``max_depth`` — checked before parsing, so no reader recurses that deep."""
    if text.count("[") + text.count("{") > max_depth and _depth(text) > max_depth:
        raise JSONRefused(f"JSON nested more than {max_depth} levels deep",
                          "flatten the record")
    try:
        data = json.loads(text, parse_int=_checked_int, parse_float=_checked_float,
                          parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except JSONRefused:
        raise
    except RecursionError:
        raise JSONRefused("JSON nested too deeply to read", "flatten the record") from None
    except json.JSONDecodeError as error:
        raise JSONRefused(f"not valid JSON ({error.msg} at column {error.colno}); the line "
                          "may be truncated", "write one complete JSON object per line",
                          error.pos, extra_data=error.msg == "Extra data") from None
    except ValueError as error:  # an integer literal past Python's digit limit
        raise JSONRefused(f"not readable JSON ({error})", "correct the value") from None
    if _SURROGATE_ESCAPE.search(text) and _holds_surrogate(data):
        raise JSONRefused("a lone surrogate escape (\\ud800-\\udfff without its pair): "
                          "text that cannot be written as UTF-8",
                          "remove it or write the whole character")
    return data


#: A JSON string (escapes respected; one left open runs to the end) and one bracket.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
_BRACKET = re.compile(r"[\[\]{}]")


def _depth(text: str) -> int:
    """How deep arrays and objects nest in ``text`` (strings respected): the strings
    cut out and the brackets found by regular expressions, in C, then counted."""
    deepest = depth = 0
    for char in _BRACKET.findall(_STRING.sub("", text)):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _holds_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if isinstance(value, dict):
        return any(_holds_surrogate(k) or _holds_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_surrogate(v) for v in value)
    return False
