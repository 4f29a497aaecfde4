"""The report's sections, in the order it shows them (`fbi.report._sections`): each
declared once, drawn by the terminal, ``report.md`` and ``report.html`` alike. The
paper's tables, the heatmap, the per-category tables and the missed examples come before
and after them; these are fbi's own diagnostics."""

from __future__ import annotations

from fbi.report._best_of_n import BEST_OF_N_NOTE, best_of_n_tables
from fbi.report._certificate import CERTIFICATE_NOTE, certificate_table
from fbi.report._human import HUMAN_NOTE, human_tables
from fbi.report._manipulation import MANIPULATION_NOTE, manipulation_table
from fbi.report._master_keys import master_key_note, master_key_table
from fbi.report._ranking import RANKING_NOTE, ranking_table
from fbi.report._sections import Section, Table, register_section
from fbi.report._steps import STEPS_NOTE, steps_table
from fbi.report._tables import (
    TURN_TITLE,
    WEIGHTED_NOTE,
    bias_tables,
    leaderboard_table,
    repeatability_table,
    turn_table,
    weighted_table,
)
from fbi.report._trail import TRAIL_NOTE, trail_table

LEADERBOARD_NOTE = (
    "Judge × strategy pairs by overall undetected rate (lower is better), with what they "
    "cost: % unparseable of the judged instances, % flips (pairwise verdicts that change "
    "with the slot order), cost and model time per 1,000 judgments from the stored usage "
    "(replies from the cache count as free).")
REPEATABILITY_NOTE = (
    "How often an instance's outcome changes between samples, Fleiss' κ of the samples as "
    "raters, and the undetected rate's spread over samples (the other tables read the "
    "first sample).")


def _one(table: tuple[list[str], list[list[str]]] | None) -> list[Table]:
    return [] if table is None or not table[1] else [Table(*table)]


def _titled(tables: list[tuple[str, list[str], list[list[str]]]]) -> list[Table]:
    return [Table(header, rows, title) for title, header, rows in tables]


SECTIONS = [
    Section("manipulation", "Judges under manipulation", note=MANIPULATION_NOTE,
            terminal_title="Under manipulation: errors caught in the twins, then missed",
            tables=lambda s, terminal: _one(manipulation_table(s, terminal))
            if s.manipulation else []),
    Section("master-keys", "Master keys: answers that are only a key", note=master_key_note(),
            terminal_title="Master keys: % accepted though the answer is only a key",
            tables=lambda s, terminal: _one(master_key_table(s, terminal))
            if s.master_keys else []),
    Section("human", "Agreement with people", note=HUMAN_NOTE, figure="human",
            tables=lambda s, terminal: _titled(human_tables(s, terminal))),
    Section("certificate", "Certificate: what the figures allow", note=CERTIFICATE_NOTE,
            contents="Certificate",
            tables=lambda s, terminal: _one(certificate_table(s.certificates))
            if s.certificates else [],
            sentences=lambda s: [c.sentence for c in s.certificates]),
    Section("turns", TURN_TITLE, contents="By turn",
            tables=lambda s, terminal: _one(turn_table(s))),
    Section("best-of-n", "Best-of-N sets", note=BEST_OF_N_NOTE, terminal_note=True,
            tables=lambda s, terminal: _titled(best_of_n_tables(s, terminal))),
    Section("steps", "Agents: the first wrong step", note=STEPS_NOTE,
            contents="First wrong step", tables=lambda s, terminal: _one(steps_table(s))),
    Section("trail", "Agents by TRAIL's taxonomy", note=TRAIL_NOTE, contents="TRAIL classes",
            terminal_title="Agents by TRAIL's taxonomy: % of planted errors missed",
            tables=lambda s, terminal: _one(trail_table(s, terminal)) if s.trail else []),
    Section("ranking", "Ranking stability: which errors are hardest", note=RANKING_NOTE,
            contents="Ranking stability", terminal=False,
            tables=lambda s, terminal: _one(ranking_table(s)) if s.ranking_stability
            else []),
    Section("leaderboard", "Leaderboard", note=LEADERBOARD_NOTE, terminal=False,
            tables=lambda s, terminal: _one(leaderboard_table(s)) if s.leaderboard
            else []),
    Section("weighted", "Probability-weighted scores", note=WEIGHTED_NOTE,
            terminal_title="% undetected under the sampled and the probability-weighted "
            "score (--logprobs) [95% interval]",
            tables=lambda s, terminal: _one(weighted_table(s)) if s.weighted_scores
            else []),
    Section("repeatability", "Repeatability (the same calls asked several times)",
            note=REPEATABILITY_NOTE, contents="Repeatability", terminal=False,
            tables=lambda s, terminal: _one(repeatability_table(s)) if s.repeatability
            else []),
    Section("bias", "Bias", table_prefix="Bias: ", terminal=False,
            tables=lambda s, terminal: _titled(bias_tables(s))),
]
for _section in SECTIONS:  # (in the registry, in this order: the report's)
    register_section(_section)

