"""The consoles every command prints through: text from outside never reaches the
terminal raw (control characters are shown as escapes, see `fbi.escaping.visible`)."""

from __future__ import annotations

import rich
from rich.console import Console

from fbi.escaping import visible


class SafeConsole(Console):
    """A rich Console whose strings (printed, or in tables and panels) are made visible
    before rich reads them; rich's own styling codes are added after."""

    def render_str(self, text: str, **kwargs):
        return super().render_str(visible(text), **kwargs)


console = SafeConsole(highlight=False)
err_console = SafeConsole(stderr=True, highlight=False)

# The console rich's own helpers draw on (rich.get_console()) is this one, so a bar a
# library part starts while a run's bar is up — the embedded judge's first weights
# fetch — is nested in the same live display rather than fighting it for the terminal.
rich._console = console


def print_command(lead: str, command: str, style: str = "") -> None:
    """``lead``, then ``command`` on a line of its own that is never broken: the terminal
    wraps it if it must, so a copy of it pastes as one command (rich would break it at
    a space, and a shell runs the halves as two)."""
    from rich.markup import escape

    console.print(f"[{style}]{escape(lead)}[/]" if style else escape(lead))
    console.print(f"  {escape(command)}", soft_wrap=True)
