"""The consoles every command prints through: text from outside never reaches the
terminal raw (control characters are shown as escapes, see `fbi.escaping.visible`)."""

from __future__ import annotations

from rich.console import Console

from fbi.escaping import visible


class SafeConsole(Console):
    """A rich Console whose strings (printed, or in tables and panels) are made visible
    before rich reads them; rich's own styling codes are added after."""

    def render_str(self, text: str, **kwargs):
        return super().render_str(visible(text), **kwargs)


console = SafeConsole(highlight=False)
err_console = SafeConsole(stderr=True, highlight=False)
