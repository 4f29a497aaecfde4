"""YAML written by users (``--config`` files, template front matter), read safely.

PyYAML's ``safe_load`` builds no objects but does expand aliases: a 600-byte document of
nested aliases ("billion laughs") expands to gigabytes. A user's configuration never
needs an alias, so `load_user_yaml` refuses them, and files past
`MAX_USER_YAML_CHARS`, before anything is built.
"""

from __future__ import annotations

from typing import Any

from fbi.errors import InputError

#: The longest YAML text fbi reads from a user (a config file is a few hundred bytes).
MAX_USER_YAML_CHARS = 1_000_000


def load_user_yaml(text: str, where: str) -> Any:
    """``text`` parsed as YAML without aliases; InputError naming ``where`` (and the line)
    for an alias, a document too long, or YAML that does not parse."""
    import yaml

    if len(text) > MAX_USER_YAML_CHARS:
        raise InputError(f"{where}: {len(text):,} characters of YAML, more than the "
                         f"{MAX_USER_YAML_CHARS:,} fbi reads. Fix: keep only the options")

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise InputError(f"{where}, line {event.start_mark.line + 1}: a YAML alias "
                                 f"(*{event.anchor}). Fix: write the value out; fbi reads "
                                 "no anchors or aliases")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliases)  # (a SafeLoader without aliases)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{where}{line}: not valid YAML ({problem}). Fix: correct the "
                         "YAML") from None
