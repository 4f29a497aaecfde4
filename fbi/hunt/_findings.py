"""From the judged probes to what a hunt claims: the held-out tests in order, merging,
the examples, the queue (issue 49).

Candidates are tested loudest first (`Summary.tested_order`; `fbi.hunt._confirm` has
the statistics). For each: its held-out probes are every held-out probe of its
population its description covers, and its baseline every held-out *random* probe it
does not cover, both without the probes an earlier confirmed finding covers. A candidate
whose held-out probes an earlier confirmed finding mostly covers, and that is not
confirmed on the rest, is merged into it ("also seen as"); so is a confirmed candidate
that is a neighbour of an earlier one on one axis (`fbi.hunt._neighbours`): one blind
spot, reported once, by its widest description when the held-out probes confirm it
(a test counted in the Bonferroni family). A finding's examples are
missed probes it covers and no other confirmed finding covers, plainest first: held-out
before searched, covered by fewer other candidates, made by one operator with nothing
added, a readable reply, a smaller edit.
``queue.jsonl`` holds each missed edit of a confirmed finding once, under the first
finding that covers it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fbi.findings import HuntExample, HuntFinding, OverallRate
from fbi.hunt._confirm import bonferroni, confirmation_test, planned_rates
from fbi.hunt._neighbours import family_size, neighbour_groups, widest
from fbi.hunt._predicates import Predicate, describe, slug
from fbi.hunt._search import Found
from fbi.hunt._table import Phase, Population, ProbeTable
from fbi.metrics import wilson_interval
from fbi.records import Instance, VettingLabel

EXAMPLES = 5
#: A merged candidate: an earlier finding covers at least this share of its probes.
MERGE_SHARE = 0.5


@dataclass
class Decision:
    """What the confirmation made of one candidate."""

    found: Found
    name: str
    description: str
    status: str
    own: np.ndarray
    """Its held-out probes counted (a row mask)."""
    base: np.ndarray
    """Its baseline's probes (a row mask)."""
    p_value: float
    p_adjusted: float
    merged_into: int | None = None
    cover: np.ndarray | None = None
    """The rows it covers, when it is a blind spot's widest description (a union of
    neighbouring candidates: `fbi.hunt._neighbours`); None: its own description's."""
    populations: tuple[Population, ...] = ()
    """Its populations (a merged manipulation's may be both); empty: its candidate's."""
    predicate_names: tuple[str, ...] = ()
    """The predicates a widened description is made of."""


class Summary:
    """The confirmation's decisions over a hunt's table (see the module docstring)."""

    def __init__(self, table: ProbeTable, candidates: list[Found],
                 predicates: dict[str, Predicate], alpha: float, margin: float,
                 strings: dict[str, tuple[str, str]] | None = None):
        self.table = table
        self.candidates = candidates
        self.predicates = predicates
        self.margin = margin
        self.alpha = alpha
        self.strings = strings or {}
        """The string search's strings by predicate name (`fbi.hunt._strings`)."""
        self.spots = neighbour_groups(candidates, self.strings, table)
        #: The Bonferroni family: every candidate and every blind spot's widest
        #: description tested (`family_size`), fixed by the search's candidates alone.
        self.family = family_size(candidates, self.strings, table)
        self.decisions: list[Decision] = []
        names: set[str] = set()
        for found in self.tested_order(candidates):
            words = describe([predicates[n] for n in found.description])
            name = slug(words)
            while name in names:
                name += "-2"
            names.add(name)
            decision = Decision(found, name, words, "not confirmed", *self._test(
                found, self.confirmed), 1.0)
            decision.p_adjusted = bonferroni(decision.p_value, self.family)
            if decision.p_adjusted < alpha and decision.own.any():
                decision.status = "confirmed"
            else:
                decision.merged_into = self._explainer(self._held(found))
                if decision.merged_into is not None:
                    decision.status = "merged"
            self.decisions.append(decision)
        self._merge_narrower()
        self._merge_neighbours()

    def tested_order(self, candidates: list[Found]) -> list[Found]:
        """The order candidates are tested in: the loudest first, by the low end of the
        one-sided 95% bound of the miss rate of every search probe its description
        covers (`planned_rates`; a covering candidate's own evidence counts only what
        the ones found before it leave), ties in the search's order. Each candidate is
        tested with what the confirmed ones before it cover left out, so a quiet blind
        spot tested before a loud one would meet the loud one's misses in its baseline.
        The order is a function of the search half alone: each candidate is still tested
        once, as if the order had been fixed in advance."""
        table = self.table
        search = table.phase <= Phase.TARGET

        def loudness(found: Found) -> float:
            rows = search & (table.population == found.population) & \
                table.covered(found.description)
            n, misses = int(rows.sum()), int(table.missed[rows].sum())
            return planned_rates(misses, n, 0, 0)[0]

        return sorted(candidates, key=loudness, reverse=True)

    def _held(self, found: Found) -> np.ndarray:
        table = self.table
        return (table.phase >= Phase.BASELINE) & (table.population == found.population) & \
            table.covered(found.description)

    def covers(self, decision: Decision) -> np.ndarray:
        """The rows a decision's description covers, in its populations."""
        table = self.table
        covered = decision.cover if decision.cover is not None else \
            table.covered(decision.found.description)
        return covered & np.isin(table.population, decision.populations or
                                 (decision.found.population,))

    def _test(self, found: Found, before: list[Decision], cover: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, float]:
        """A candidate's held-out probes (or those of ``cover``, a widened description
        of its population), its baseline's, and the margin test between them, leaving
        out what the findings ``before`` cover."""
        table = self.table
        explained = np.zeros(table.size, dtype=bool)
        for decision in before:
            explained |= self.covers(decision)
        population = table.population == found.population
        covered = table.covered(found.description) if cover is None else cover
        own = (table.phase >= Phase.BASELINE) & population & covered & ~explained
        base = (table.phase == Phase.BASELINE) & population & ~covered & ~explained
        missed = table.missed
        p = confirmation_test(int(missed[own].sum()), int(own.sum()),
                              int(missed[base].sum()), int(base.sum()), self.margin)
        return own, base, p

    def _merge_narrower(self) -> None:
        """A confirmed finding whose description narrows another confirmed one ("negation
        rule edits, adding or removing a negation" beside "adding or removing a
        negation") is the same blind spot: it is merged into the broader one, whose
        figures are then counted again without leaving its edits out."""
        confirmed = self.confirmed
        merged = False
        for narrow in confirmed:
            for broad in confirmed:
                if broad is not narrow and broad.status == "confirmed" and \
                        set(broad.found.description) < set(narrow.found.description):
                    narrow.status = "merged"
                    narrow.merged_into = self.decisions.index(broad)
                    merged = True
                    break
        if merged:
            self._count_again()

    def _count_again(self) -> None:
        """The confirmed findings tested again in order, each leaving out what the ones
        before it that still pass cover (after a merge, a blind spot's widest
        description may leave out more of a later finding's edits, and its parts no
        longer do): a finding that no longer passes is merged into the one that covers
        most of its edits, or not confirmed — the figures shown are always the test's."""
        kept: list[Decision] = []
        for decision in self.confirmed:
            if decision.populations and len(decision.populations) > 1:
                decision.own = (self.table.phase >= Phase.BASELINE) & self.covers(decision)
                kept.append(decision)
                continue
            decision.own, decision.base, p = self._test(decision.found, kept,
                                                        decision.cover)
            decision.p_value = p
            decision.p_adjusted = bonferroni(decision.p_value, self.family)
            if decision.p_adjusted < self.alpha and decision.own.any():
                kept.append(decision)
                continue
            decision.status = "not confirmed"
            held = (self.table.phase >= Phase.BASELINE) & self.covers(decision)
            decision.merged_into = self._explainer(held)
            if decision.merged_into is not None:
                decision.status = "merged"

    def _merge_neighbours(self) -> None:
        """One finding per blind spot: candidates that are neighbours on one axis
        (`neighbour_groups`: where the change lies, or one manipulation family on
        correct and on wrong answers) are one spot. Of one population, their widest
        description (`widest`) is tested on held-out probes, counted in the Bonferroni
        family, leaving out what the other spots' confirmed findings cover; confirmed, it
        is the finding and the confirmed parts are merged into it.
        Otherwise — or across populations — the first confirmed part is the finding and
        the other confirmed parts are merged into it, each still confirmed on its own."""
        table, merged = self.table, False
        by_found = {id(d.found): d for d in self.decisions}
        for spot in self.spots:
            parts = [by_found[id(self.candidates[i])] for i in spot]
            confirmed = [d for d in parts if d.status == "confirmed"]
            if not confirmed:
                continue
            head = confirmed[0]
            wide = widest([self.candidates[i] for i in spot], self.predicates, table,
                          self.strings)
            if wide is not None:
                names, words, cover = wide
                # tested without what every other spot's confirmed findings cover, the
                # later ones too: a widening that holds only by taking in another spot's
                # misses ("the last third" taking the side-effect steps found after it)
                # is not this spot's extent
                others = [d for d in self.confirmed if d not in parts]
                own, base, p = self._test(head.found, others, cover)
                if bonferroni(p, self.family) < self.alpha and own.any():
                    head.cover, head.own, head.base, head.p_value = cover, own, base, p
                    head.p_adjusted = bonferroni(p, self.family)
                    head.description, head.predicate_names = words, names
                    merged = True
            else:
                head.populations = tuple(sorted({self.candidates[i].population
                                                 for i in spot}))
                head.cover = np.zeros(table.size, dtype=bool)
                for d in confirmed:
                    head.cover |= table.covered(d.found.description) & (
                        table.population == d.found.population)
            for other in confirmed[1:]:
                other.status, other.merged_into = "merged", self.decisions.index(head)
                merged = True
        if merged:
            self._count_again()

    def _explainer(self, rows: np.ndarray) -> int | None:
        """The earlier confirmed finding that covers most of ``rows``, if it covers at
        least ``MERGE_SHARE`` of them."""
        if not rows.any():
            return None
        best, share = None, MERGE_SHARE
        for index, decision in enumerate(self.decisions):
            if decision.status != "confirmed":
                continue
            covered = (self.covers(decision) & rows).sum()
            if covered / rows.sum() >= share:
                best, share = index, covered / rows.sum()
        return best

    @property
    def confirmed(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == "confirmed"]

    def only_theirs(self, decision: Decision) -> np.ndarray:
        """Missed probes ``decision`` covers and no other confirmed finding does."""
        mask = self.covers(decision) & self.table.missed
        for other in self.confirmed:
            if other is not decision:
                mask &= ~self.covers(other)
        return mask

    def examples(self, decision: Decision) -> list[int]:
        """The rows that could be its examples, plainest first: held-out before
        searched, then sharing less with the other candidates (each covering it counts,
        and each predicate of another confirmed finding it has: a typo in a heading that
        changes a name shows "inside a heading" less plainly beside "changing a named
        entity"), made by one operator, readable, smaller."""
        table = self.table
        rows = np.flatnonzero(self.only_theirs(decision))
        overlap = np.zeros(len(rows), int)
        for candidate in self.candidates:
            if candidate is not decision.found:
                overlap += table.covered(candidate.description)[rows]
        for other in self.confirmed:
            if other is not decision:
                for name in other.found.description:
                    overlap += table.X[rows, table.column[name]]
        composed = np.array([table.operator_names[i].count("+") for i in
                             table.operator[rows]], dtype=int)
        order = np.lexsort((rows, table.change_size[rows], table.unreadable[rows],
                            composed, overlap, table.phase[rows] < Phase.BASELINE))
        return [int(r) for r in rows[order]]


def _rate(table: ProbeTable, mask: np.ndarray) -> tuple[float | None, list[float] | None,
                                                        int, int]:
    n, misses = int(mask.sum()), int(table.missed[mask].sum())
    interval = wilson_interval(misses, n)
    return (misses / n if n else None, list(interval) if interval else None, n, misses)


def _distinct(example_of: Callable[[int], tuple[str, HuntExample]], rows: list[int]
              ) -> list[tuple[str, HuntExample]]:
    """The first ``EXAMPLES`` of ``rows`` that show different edits (two operators can
    make the same edit of an answer; one strategy's verdict on it is enough to see)."""
    chosen: list[tuple[str, HuntExample]] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        call, example = example_of(row)
        key = (example.gold_answer, example.edited_answer)
        if key not in seen:
            seen.add(key)
            chosen.append((call, example))
            if len(chosen) == EXAMPLES:
                break
    return chosen


def assemble(summary: Summary, example_of: Callable[[int], tuple[str, HuntExample]],
             replies: Callable[[set[str]], dict[str, str]]
             ) -> tuple[list[HuntFinding], OverallRate | None]:
    """The findings (confirmed first, in the order confirmed; then merged; then not
    confirmed) and the overall miss rate of random edits."""
    table = summary.table
    chosen: dict[int, list[tuple[str, HuntExample]]] = {}
    for index, decision in enumerate(summary.decisions):
        if decision.status == "confirmed":
            chosen[index] = _distinct(example_of, summary.examples(decision))
    texts = replies({call for examples in chosen.values() for call, _ in examples})
    findings = []
    for index, decision in enumerate(summary.decisions):
        rate, interval, n, misses = _rate(table, decision.own)
        base_rate, _, base_n, _ = _rate(table, decision.base)
        scored = decision.found.scored
        merged = [d.description for d in summary.decisions if d.merged_into == index]
        findings.append(HuntFinding(
            name=decision.name, description=decision.description,
            predicates=list(decision.predicate_names or decision.found.description),
            population="sway" if decision.found.population == Population.SWAY else "error",
            status=decision.status,  # type: ignore[arg-type]
            confirmed=decision.status == "confirmed",
            merged_into=summary.decisions[decision.merged_into].name
            if decision.merged_into is not None else None,
            also_seen_as=merged, miss_rate=rate, interval=interval, n=n, misses=misses,
            unreadable=int((table.unreadable & decision.own & table.missed).sum()),
            baseline_rate=base_rate, baseline_n=base_n, p_value=decision.p_value,
            p_adjusted=decision.p_adjusted, search_miss_rate=scored.rate,
            search_n=scored.n,
            examples=[example.model_copy(update={"judge_reply": texts.get(call)})
                      for call, example in chosen.get(index, [])]))
    rank = {"confirmed": 0, "merged": 1, "not confirmed": 2}
    findings.sort(key=lambda f: rank[f.status])
    return findings, overall_rate(table)


def overall_rate(table: ProbeTable) -> OverallRate | None:
    """Random error edits' miss rate: the held-out baseline's, else the search's
    exploring edits'."""
    error = table.population == Population.ERROR
    for phase, held in ((Phase.BASELINE, True), (Phase.EXPLORE, False)):
        mask = error & (table.phase == phase)
        if mask.any():
            rate, interval, n, _ = _rate(table, mask)
            return OverallRate(miss_rate=rate, interval=interval, n=n, held_out=held,
                               unreadable=int((table.unreadable & mask).sum()))
    return None


def queue_instances(summary: Summary, read_edit: Callable[[int], Instance]
                    ) -> list[Instance]:
    """Each missed edit of a confirmed finding once, under the first finding that
    covers it, as a vetting queue (category ``hunt/NAME``)."""
    table = summary.table
    taken: set[int] = set()
    queue = []
    for decision in summary.confirmed:
        rows = summary.covers(decision) & table.missed
        for row in np.flatnonzero(rows):
            offset = int(table.edit_offset[row])
            if offset in taken:
                continue
            taken.add(offset)
            instance = read_edit(offset)
            queue.append(instance.model_copy(update={
                "category": f"hunt/{decision.name}", "label": VettingLabel.UNVETTED,
                "rationale": f"{decision.description}: {instance.rationale or ''}"}))
    return queue
