"""The report stage: the summary of stored runs and its renderers (terminal, md,
html, json, csv). Never calls a model.
"""

from fbi.report._html import (
    EXAMPLES_PER_RUN,
    ability_bars,
    heat_colour,
    heatmap,
    missed_examples,
    noise_charts,
    render_html,
)
from fbi.report._summary import (
    ABILITY_COLUMNS,
    MULTIQA_COLUMNS,
    SUMMARY_SCHEMA_VERSION,
    build_summary,
    category_table,
    explanation_check_rows,
    judge_strategies,
    label_runs,
    load_robustness,
    render_csv,
    render_markdown,
    robustness_markdown,
    robustness_tables,
    table_3,
    table_4,
)
from fbi.report._write import (
    FORMATS,
    write_report,
)

__all__ = [
    "ABILITY_COLUMNS",
    "EXAMPLES_PER_RUN",
    "FORMATS",
    "MULTIQA_COLUMNS",
    "SUMMARY_SCHEMA_VERSION",
    "ability_bars",
    "build_summary",
    "category_table",
    "explanation_check_rows",
    "heat_colour",
    "heatmap",
    "judge_strategies",
    "label_runs",
    "load_robustness",
    "missed_examples",
    "noise_charts",
    "render_csv",
    "render_html",
    "render_markdown",
    "robustness_markdown",
    "robustness_tables",
    "table_3",
    "table_4",
    "write_report",
]
