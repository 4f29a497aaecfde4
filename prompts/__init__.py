"""Judge prompt templates: one jinja2 file per evaluation strategy (data, not code).

Installed as ``fbi.prompts`` so the templates travel inside the wheel.
"""

#: What the ``fbi.strategies`` entry point names: this package, whose ``*.jinja`` files are
#: strategies (a plug-in package declares its own the same way).
TEMPLATES = __name__
