"""Text from outside (labels, category names, dataset texts, judge replies), escaped for
where it goes: a terminal, a Markdown table cell, a CSV cell.

Every byte fbi prints or writes that it did not make passes through one of these, so a
dataset or a ``--label`` cannot drive the terminal (an OSC 52 clipboard write, a title
change, a screen clear), break a Markdown table or inject a link, or be a live formula
in a spreadsheet.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and C1 controls (U+0080–U+009F: a single-byte
# CSI, U+009B, is as good as ESC [ to a terminal).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What lets text break out of a Markdown table cell or become live: a backslash (it
# would escape what follows), a pipe (a new cell), a code span's backtick, an inline
# link or image ("](" — brackets alone stay, as in "75.0 [30–95]"), HTML and autolinks.
_MARKDOWN_SPECIAL = {"\\": "\\\\", "|": "\\|", "`": "\\`", "](": "]\\(",
                     "<": "&lt;", ">": "&gt;"}
_MARKDOWN_PATTERN = re.compile("|".join(re.escape(k) for k in _MARKDOWN_SPECIAL))
# OWASP, "CSV Injection": a cell starting with these is read as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def has_control_characters(text: str) -> bool:
    return _CONTROL.search(text) is not None


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape
    (``\\x1b``), so printing it cannot drive the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def markdown_text(text: object) -> str:
    """A value as one line of Markdown text (a table cell, a heading, a list item): on
    one line, with what could break out of it or turn live (pipes, links, code, HTML)
    escaped, and no control characters. fbi's own figures pass through unchanged."""
    flat = " ".join(visible(str(text)).split())
    return _MARKDOWN_PATTERN.sub(lambda m: _MARKDOWN_SPECIAL[m.group()], flat)


def csv_cell(value: object) -> object:
    """A value for a CSV cell: text that a spreadsheet would run as a formula gets a
    leading ``'`` (OWASP); numbers are left as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate (a ``\\ud800`` a JSON reply may hold, which
    no UTF-8 file can) replaced by U+FFFD, so a reply can always be written and read
    back (issue 50)."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def writable(value):
    """``value`` (a string, or a dict or list holding strings) with every lone surrogate
    replaced: what a reply's parsed fields become before they are a record."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, dict):
        return {writable(k): writable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(writable(v) for v in value)
    return value
