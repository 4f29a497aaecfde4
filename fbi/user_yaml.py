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
#: The deepest nesting of lists and mappings read (a config is two levels deep; PyYAML's
#: composer recurses, and 20,000 levels end in a RecursionError).
MAX_USER_YAML_DEPTH = 50
#: The most digits an integer may have (past 64 bits no option means anything; past
#: 4,300 Python refuses to read it).
MAX_USER_YAML_DIGITS = 19


def load_user_yaml(text: str, where: str) -> Any:
    """``text`` parsed as YAML without aliases; InputError naming ``where`` (and the line)
    for an alias, a document too long, or YAML that does not parse."""
    import yaml

    if len(text) > MAX_USER_YAML_CHARS:
        raise InputError(f"{where}: {len(text):,} characters of YAML, more than the "
                         f"{MAX_USER_YAML_CHARS:,} fbi reads. Fix: keep only the options")

    class NoAliases(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            event = self.peek_event()
            if self.check_event(yaml.events.AliasEvent):
                raise InputError(f"{where}, line {event.start_mark.line + 1}: a YAML alias "
                                 f"(*{event.anchor}). Fix: write the value out; fbi reads "
                                 "no anchors or aliases")
            self.depth += 1
            if self.depth > MAX_USER_YAML_DEPTH:
                raise InputError(f"{where}, line {event.start_mark.line + 1}: YAML nested "
                                 f"more than {MAX_USER_YAML_DEPTH} levels deep. Fix: write "
                                 "the option's value plainly")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_yaml_int(self, node):
            digits = sum(c.isdigit() for c in str(node.value))
            if digits > MAX_USER_YAML_DIGITS:
                raise InputError(f"{where}, line {node.start_mark.line + 1}: an integer of "
                                 f"{digits:,} digits, past what any option holds. Fix: "
                                 "write the number the option means")
            return super().construct_yaml_int(node)

    NoAliases.add_constructor("tag:yaml.org,2002:int", NoAliases.construct_yaml_int)

    try:
        return yaml.load(text, Loader=NoAliases)  # (a SafeLoader without aliases)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputError(f"{where}{line}: not valid YAML ({problem}). Fix: correct the "
                         "YAML") from None
