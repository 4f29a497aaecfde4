"""Judge prompt templates: one jinja2 file per evaluation strategy (data, not code).

Installed as ``fbi.prompts`` so the templates travel inside the wheel.
"""
