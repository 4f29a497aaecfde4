"""The JSON a schema allows, checked a character at a time, for constrained decoding.

The language is the one llama-cpp-python's ``json_schema_to_gbnf`` writes for the same
schema (its ``SchemaConverter``, read on 0.3.x), so both runtimes of the embedded judge
accept the same replies: at most one space where JSON allows whitespace
(``space ::= " "?``), properties in the schema's order (the required ones, then any of
the optional ones in order), ``maxLength``/``minLength`` counted in characters (an
escape is one), integers of at most 16 digits (bounds are not enforced, as there),
enums and consts as their JSON text with no space after them, arrays bounded by
``minItems``/``maxItems``. A schema using anything else (``anyOf``, ``$ref``, patterns,
a list of types) is refused with a message rather than followed loosely.

A state is an immutable stack of frames, the top last; feeding a character returns the
next state or None.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, replace
from typing import Any

_HEX = set("0123456789abcdefABCDEF")
_DIGITS = set("0123456789")
_MAX_DIGITS = 16


class _Skip:
    """A frame that may end here without the character, which goes to the frame below."""


SKIP = _Skip()


@dataclass(frozen=True)
class _Expand:
    """Replace the top frame by these (natural order) and give them the character."""

    frames: tuple


def _push(*frames) -> tuple:
    """Frames in the order they match, as stack entries (the first on top)."""
    return tuple(reversed(frames))


@dataclass(frozen=True)
class Lit:
    text: str
    at: int = 0

    def step(self, char: str):
        if char != self.text[self.at]:
            return None
        return () if self.at + 1 == len(self.text) else (Lit(self.text, self.at + 1),)

    def may_end(self) -> bool:
        return False


@dataclass(frozen=True)
class Space:
    def step(self, char: str):
        return () if char == " " else SKIP

    def may_end(self) -> bool:
        return True


@dataclass(frozen=True)
class Choice:
    """One of several literal texts (an enum or const, as JSON)."""

    options: tuple[str, ...]
    at: int = 0

    def step(self, char: str):
        going = tuple(o for o in self.options if len(o) > self.at and o[self.at] == char)
        if not going:
            return SKIP if self.may_end() else None
        if all(len(o) == self.at + 1 for o in going):
            return ()
        return (Choice(going, self.at + 1),)

    def may_end(self) -> bool:
        return any(len(o) == self.at for o in self.options)


@dataclass(frozen=True)
class StringBody:
    """A string's characters after its opening quote, through the closing one."""

    low: int
    high: int | None
    count: int = 0
    escape: int = 0  # 0 none, 1 after "\", 2-5 hex digits of "\u" still to come

    def step(self, char: str):
        if self.escape == 1:
            if char in '"\\/bfnrt':
                return self._one_more()
            return (replace(self, escape=2),) if char == "u" else None
        if self.escape >= 2:
            if char not in _HEX:
                return None
            if self.escape == 5:
                return self._one_more()
            return (replace(self, escape=self.escape + 1),)
        if char == '"':
            return () if self.count >= self.low else None
        if char == "\\":
            return (replace(self, escape=1),) if self._room() else None
        return self._one_more()

    def _room(self) -> bool:
        return self.high is None or self.count < self.high

    def _one_more(self):
        if self.escape == 0 and not self._room():
            return None
        return (replace(self, count=self.count + 1, escape=0),)

    def takes_any_character(self) -> bool:
        return self.escape == 0 and self._room()

    def may_end(self) -> bool:
        return False


@dataclass(frozen=True)
class Number:
    """``"-"? integral-part`` and, for numbers, a fraction and an exponent."""

    integer: bool
    part: str = "sign"  # sign, int, zero, dot, frac, e, esign, exp
    digits: int = 0

    def step(self, char: str):
        part, digit = self.part, char in _DIGITS
        if part in ("sign", "minus"):
            if char == "-" and part == "sign":
                return (replace(self, part="minus"),)
            if not digit:
                return None
            return (replace(self, part="zero" if char == "0" else "int", digits=1),)
        if part == "int" and digit and self.digits < _MAX_DIGITS:
            return (replace(self, digits=self.digits + 1),)
        if part in ("int", "zero") and not self.integer:
            if char == ".":
                return (replace(self, part="dot", digits=0),)
            if char in "eE":
                return (replace(self, part="e", digits=0),)
        if part in ("dot", "frac") and digit and self.digits < _MAX_DIGITS:
            return (replace(self, part="frac", digits=self.digits + 1),)
        if part == "frac" and char in "eE":
            return (replace(self, part="e", digits=0),)
        if part == "e" and char in "+-":
            return (replace(self, part="esign"),)
        if part in ("e", "esign") and digit:
            return (replace(self, part="expzero" if char == "0" else "exp", digits=1),)
        if part == "exp" and digit and self.digits < _MAX_DIGITS:
            return (replace(self, digits=self.digits + 1),)
        return SKIP if self.may_end() else None

    def may_end(self) -> bool:
        return self.part in ("int", "zero", "frac", "exp", "expzero")


@dataclass(frozen=True)
class Items:
    """An array's items after ``[``: ``(item ("," space item)*)?`` within the bounds."""

    schema: Any
    low: int
    high: int | None
    count: int = 0

    def step(self, char: str):
        if self.count == 0:
            if char == "]" or self.high == 0:
                return SKIP if self.may_end() else None
            return _Expand((*value(self.schema), replace(self, count=1)))
        if char == "," and (self.high is None or self.count < self.high):
            return _push(Space(), *value(self.schema), replace(self, count=self.count + 1))
        return SKIP if self.may_end() else None

    def may_end(self) -> bool:
        return self.count >= self.low


@dataclass(frozen=True)
class Properties:
    """An object's members after ``{ ``: the required ones in order, then any of the
    optional ones in order."""

    members: tuple  # (name, schema, required) still to come, in the schema's order
    started: bool = False

    def step(self, char: str):
        if not self.members:
            return SKIP
        name, schema, required = self.members[0]
        if required:
            comma = (Lit(","), Space()) if self.started else ()
            return _Expand((*comma, *self._member(name, schema, self.members[1:])))
        if self.started:
            return _push(Space(), Keys(self.members)) if char == "," else SKIP
        return _Expand((Keys(self.members),)) if char == '"' else SKIP

    @staticmethod
    def _member(name: str, schema, rest: tuple) -> tuple:
        return (Lit(json.dumps(name)), Space(), Lit(":"), Space(), *value(schema),
                Properties(rest, started=True))

    def may_end(self) -> bool:
        return all(not required for _, _, required in self.members)


@dataclass(frozen=True)
class Keys:
    """The key of one of the optional members still to come."""

    members: tuple
    typed: str = ""

    def step(self, char: str):
        typed = self.typed + char
        keys = [json.dumps(name) for name, _, _ in self.members]
        if not any(key.startswith(typed) for key in keys):
            return None
        if typed in keys:  # a key ends only at its closing quote: no other starts with it
            i = keys.index(typed)
            name, schema, _ = self.members[i]
            return _push(*Properties._member(name, schema, self.members[i + 1:])[1:])
        return (replace(self, typed=typed),)

    def may_end(self) -> bool:
        return False


def value(schema: Any) -> tuple:
    """The frames matching a value of ``schema``, in matching order."""
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"a schema must be an object, not {schema!r}")
    unsupported = sorted(set(schema) & {"anyOf", "oneOf", "allOf", "$ref", "not",
                                          "pattern", "format", "if", "prefixItems"})
    if unsupported:
        raise UnsupportedSchema(f"the schema uses {', '.join(unsupported)}")
    if "const" in schema:
        return (Choice((json.dumps(schema["const"]),)),)
    if "enum" in schema:
        return (Choice(tuple(json.dumps(v) for v in schema["enum"])),)
    kind = schema.get("type", "object" if "properties" in schema else None)
    if kind == "object":
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        members = tuple((name, sub, name in required) for name, sub in properties.items()
                        if name in required)
        members += tuple((name, sub, False) for name, sub in properties.items()
                         if name not in required)
        return (Lit("{"), Space(), Properties(members), Lit("}"), Space())
    if kind == "array":
        items = schema.get("items", {})
        return (Lit("["), Space(), Items(items, int(schema.get("minItems", 0)),
                                         schema.get("maxItems")), Lit("]"), Space())
    if kind == "string":
        return (Lit('"'), StringBody(int(schema.get("minLength", 0)),
                                     schema.get("maxLength")), Space())
    if kind in ("integer", "number"):
        return (Number(integer=kind == "integer"), Space())
    if kind == "boolean":
        return (Choice(("true", "false")), Space())
    if kind == "null":
        return (Lit("null"), Space())
    raise UnsupportedSchema(f"the schema's type {kind!r} is not one the embedded judge follows")


class UnsupportedSchema(ValueError):
    """A JSON schema outside what `value` follows."""


@dataclass(frozen=True)
class State:
    stack: tuple
    pending: bytes = b""  # the first bytes of a character a later token completes

    def complete(self) -> bool:
        return not self.pending and all(frame.may_end() for frame in self.stack)


def start(schema: dict) -> State:
    """The state before the reply's first character."""
    return State(_push(*value(schema)))


def feed(state: State, data: bytes) -> State | None:
    """The state after ``data`` (a token's bytes), or None when the schema refuses it."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(state.pending + data)
    except UnicodeDecodeError:
        return None
    stack = state.stack
    for char in text:
        stack = _feed_char(stack, char)
        if stack is None:
            return None
    pending = decoder.getstate()[0]
    if pending and not (stack and isinstance(stack[-1], StringBody)
                        and stack[-1].takes_any_character()):
        return None  # a partial character only where any character may come
    return State(stack, pending)


def _feed_char(stack: tuple, char: str) -> tuple | None:
    while stack:
        outcome = stack[-1].step(char)
        if outcome is None:
            return None
        if outcome is SKIP:
            stack = stack[:-1]
            continue
        if isinstance(outcome, _Expand):
            stack = stack[:-1] + _push(*outcome.frames)
            continue
        return stack[:-1] + outcome
    return None  # the value is over: nothing more may come
