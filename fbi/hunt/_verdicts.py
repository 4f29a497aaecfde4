"""What a probe's calls say: missed or not, by the FBI paper's rule (§4), from the few
fields of each judgment a hunt keeps (issues 40 and 49).

Single-answer: missed when the edit is not scored below the gold answer (a shared call
per item and strategy); pairwise, in the one order a probe is asked in: missed when the
gold answer is not preferred; reference-guided: missed when the edit gets the top score.
A reply about the edit fbi cannot read counts as missed and unreadable (no hostile edit
lowers a miss rate by making the reply unreadable); a failed call, or an unreadable
score of the gold answer, leaves the probe out. In the sway population (a correct answer
with text added) "missed" is the other way round: the judge rated it *above* the gold,
or preferred it.
"""

from __future__ import annotations

from fbi.metrics import penalised
from fbi.records import Judgment


class Verdicts:
    """Each judgment's status and verdict, by call id: what a probe's outcome needs and
    nothing more (a 30,000-call hunt keeps no reply)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, tuple] = {}
        self.failed: set[str] = set()

    def collect(self, judgment: Judgment) -> None:
        if judgment.status == "error":
            self.failed.add(judgment.call_id)
            self.outcomes.pop(judgment.call_id, None)
            return
        self.failed.discard(judgment.call_id)
        score = judgment.expected_score if judgment.expected_score is not None \
            else judgment.score
        top = judgment.score_range[1] if judgment.score_range else None
        self.outcomes[judgment.call_id] = (judgment.status, score, judgment.verdict, top)

    def missed(self, calls: tuple[str, ...], paradigm: str, sway: bool
               ) -> tuple[bool, bool] | None:
        """(missed, unreadable) for a probe's calls (the edit's first); None when it
        counts nowhere."""
        if any(c in self.failed or c not in self.outcomes for c in calls):
            return None
        status, score, verdict, top = self.outcomes[calls[0]]
        if status != "ok" or (score is None and verdict is None):
            return True, True
        if paradigm == "pairwise":
            return (verdict == "perturbed" if sway else verdict != "gold"), False
        if paradigm == "reference":
            return (top is None or not penalised("reference", score, top=top)), False
        gold_status, gold_score, _, _ = self.outcomes[calls[1]]
        if gold_status != "ok" or gold_score is None:
            return None
        if sway:
            return score > gold_score, False
        return not penalised("single", score, gold_score), False
