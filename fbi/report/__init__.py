"""The report stage: the summary of stored runs and its renderers (terminal, md, html,
json, csv). Never calls a model.

Its public face holds what a Python user calls — write or build a report, read one back,
render it, the headline of a run — and is loaded lazily: a name's module is imported when
the name is first used, so ``fbi evaluate`` (which prints only the headline) does not pay
for the HTML renderer and the statistics (`fbi.faces`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fbi.faces import lazy_face, verb_package

__getattr__ = lazy_face("fbi.report")

if TYPE_CHECKING:  # the names, for readers and type checkers; lazy_face loads them
    from fbi.report._headline import Headline, headline_table
    from fbi.report._html import render_html
    from fbi.report._hunt import hunt_blocks, hunt_markdown, hunt_summary, load_hunt
    from fbi.report._markdown import render_csv, render_markdown
    from fbi.report._robustness import load_robustness
    from fbi.report._schema import Summary
    from fbi.report._sections import SECTIONS, Section, Table, register_section, sections
    from fbi.report._summary import build_summary
    from fbi.report._terminal import Block, report_warnings, robustness_blocks, terminal_report
    from fbi.report._trust_output import trust_blocks, write_trust
    from fbi.report._verdict import comparison_sentence
    from fbi.report._write import FORMATS, WrittenReport, read_summary, report

verb_package(__name__)  # fbi.report(...) is fbi.report.report(...)
