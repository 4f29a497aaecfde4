"""The report's table of the master-key suite (`fbi.metrics.master_key_rates`; issue 65)."""

from __future__ import annotations

from fbi.attack_texts import PREFIXED, attack_texts
from fbi.report._cells import percent_with_interval
from fbi.report._schema import Summary


def master_key_note() -> str:
    return (
        "Answers that are nothing but a master key — a punctuation mark, a reasoning "
        "opener in English or another language — and wrong answers with an opener put "
        "before them (`--dataset master-keys`), graded against the sample's references: "
        "% accepted is the share the judge did not grade below the gold answer (scored as "
        "high, the top score against the reference, or preferred), the paper's false "
        "positives in the FBI protocol's terms, with 95% Wilson intervals; a reply fbi "
        f"could not read is counted nowhere (\"unparseable\"). The paper: {attack_texts().paper}.")


def master_key_table(summary: Summary, terminal: bool = False
                     ) -> tuple[list[str], list[list[str]]]:
    """One row per judge × strategy × key family."""
    names = summary.display_names
    families = {f.family: f.name for f in attack_texts().master_keys.values()}
    families[PREFIXED] = "Opener before a wrong answer"
    header = ["judge", "strategy", "keys", "n", "accepted", "% accepted [95% CI]"] + \
        ([] if terminal else ["unparseable"])
    rows = []
    for row in summary.master_keys:
        shown = percent_with_interval(row.rate, row.ci_low, row.ci_high)
        rows.append([row.judge, names.get(row.strategy, row.strategy),
                     families.get(row.group, row.group), str(row.judged), str(row.undetected),
                     shown] + ([] if terminal else [str(row.unparseable)]))
    return header, rows
