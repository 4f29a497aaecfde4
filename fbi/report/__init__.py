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
from fbi.report._human import HUMAN_NOTE, human_chart, human_tables, read_human_labels
from fbi.report._jury import MODES as JURY_MODES
from fbi.report._jury import jury_run
from fbi.report._labels import label_runs
from fbi.report._manipulation import MANIPULATION_NOTE, manipulation_table
from fbi.report._markdown import (
    convention_note,
    coverage_warning,
    render_csv,
    render_markdown,
)
from fbi.report._ranking import RANKING_NOTE, ranking_table
from fbi.report._robustness import (
    MULTIQA_COLUMNS,
    load_robustness,
    robustness_markdown,
    robustness_tables,
    suite_tables,
)
from fbi.report._schema import (
    SUMMARY_SCHEMA_VERSION,
    RateRow,
    RobustnessEntry,
    Summary,
)
from fbi.report._summary import (
    ABILITY_COLUMNS,
    CONVENTIONS,
    RATE_KEY,
    build_summary,
    coverage,
    explanation_check_rows,
)
from fbi.report._tables import (
    PREFERENCE_NOTE,
    WEIGHTED_NOTE,
    ability_columns,
    bias_tables,
    category_table,
    judge_strategies,
    leaderboard_table,
    pooled_table,
    table_3,
    table_4,
    weighted_table,
)
from fbi.report._verdict import (
    DIFFERS_MARK,
    VERDICT_LEGEND,
    comparison_rows,
    verdict_pair_tables,
    verdict_sentences,
    verdict_table,
)
from fbi.report._write import (
    FORMATS,
    read_summary,
    summary_json,
    write_report,
)

__all__ = [
    "ABILITY_COLUMNS",
    "CONVENTIONS",
    "DIFFERS_MARK",
    "EXAMPLES_PER_RUN",
    "FORMATS",
    "HUMAN_NOTE",
    "JURY_MODES",
    "MANIPULATION_NOTE",
    "MULTIQA_COLUMNS",
    "PREFERENCE_NOTE",
    "RANKING_NOTE",
    "RATE_KEY",
    "SUMMARY_SCHEMA_VERSION",
    "VERDICT_LEGEND",
    "WEIGHTED_NOTE",
    "RateRow",
    "RobustnessEntry",
    "Summary",
    "ability_bars",
    "ability_columns",
    "bias_tables",
    "build_summary",
    "category_table",
    "comparison_rows",
    "convention_note",
    "coverage",
    "coverage_warning",
    "explanation_check_rows",
    "heat_colour",
    "heatmap",
    "human_chart",
    "human_tables",
    "judge_strategies",
    "jury_run",
    "label_runs",
    "leaderboard_table",
    "load_robustness",
    "manipulation_table",
    "missed_examples",
    "noise_charts",
    "pooled_table",
    "ranking_table",
    "read_human_labels",
    "read_summary",
    "render_csv",
    "render_html",
    "render_markdown",
    "robustness_markdown",
    "robustness_tables",
    "suite_tables",
    "summary_json",
    "table_3",
    "table_4",
    "verdict_pair_tables",
    "verdict_sentences",
    "verdict_table",
    "weighted_table",
    "write_report",
]
