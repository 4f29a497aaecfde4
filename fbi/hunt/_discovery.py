"""Subgroup discovery over probes, with explaining away (issue 49).

The probes are a table: one row per probe, one boolean column per predicate
([`PREDICATES`][fbi.hunt.PREDICATES] and those made per hunt), and whether the judge
missed the edit. A *description* is a conjunction of at most three columns. This module
finds the descriptions whose probes are missed more often than the rest, by **sequential
covering** (Lavrač, Kavšek, Flach and Todorovski, "Subgroup discovery with CN2-SD", JMLR
5, 2004, §3; Michalski's covering algorithm before it):

1. among the rows not yet explained, score every description of one and two predicates
   exactly, and of three predicates as extensions of the ``BEAM`` best pairs and singles
   (a beam search, as pysubgroup's ``BeamSearch`` does);
2. a description's score is its one-sided Fisher exact test against the rows outside it
   (the hypergeometric tail, vectorised over all descriptions at once), so a description
   wins by being missed often *and* covering many rows: the one that matches a blind spot
   beats a narrower part of it (less evidence) and a broader one (diluted);
3. the best description is taken — as broad as its evidence (`generalize`), and named by
   the description that explains the same misses without caught edits (`explainer`) —
   unless its rows are a *mix* (`hot_part`: hot parts and an ordinary remainder, as
   "short edits" are when negations and edits inside parentheses are short), in which
   case its hottest part is taken instead (`unmixed`) and the others are left for the
   next steps — its rows are set aside as *explained*, and the search starts again on
   the rest — so the second finding is measured against rows the first does not
   explain, a loud blind spot cannot make a quiet one look ordinary, nor return as four
   descriptions of itself, and two quiet ones cannot hide inside a broad description.

Why not pysubgroup or sliceline as they are (docs/how-to/hunt.md, "Why fbi searches
descriptions itself"): both rank descriptions by one quality over the *whole* table, so
their top-k are the loudest blind spot seen several ways (pysubgroup 0.9 also pins
``numpy<2``); sliceline's score is the same enumeration with another quality, and a test
(tests/test_hunt_discovery.py) checks this module's enumeration finds sliceline's top
slice on the same data. The covering step is what the hunt needs and neither library has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Pairs and singles extended to three predicates (a beam search).
BEAM = 40
#: Probes a description needs before it is scored.
MIN_N = 6
#: A predicate is dropped from a found description unless the rows it leaves out are
#: missed less often at this level (the broadest description that is not diluted).
GENERALIZE_ALPHA = 0.05
#: Naming: the other descriptions `explainer` weighs, the strongest this many.
EXPLAINERS_TRIED = 100
#: A mix (`hot_part`): a part of a description's rows missed this much more often than
#: the rest of them, at this level (strict: every description of the rows is tried).
SPLIT_EFFECT = 0.25
SPLIT_P = 1e-3
MAX_PARTS = 4

Description = tuple[int, ...]
"""A conjunction of predicates, as their sorted column indices."""


@dataclass(frozen=True)
class Scored:
    """A description and its evidence among the rows it was scored on."""

    description: Description
    """The predicates' column indices."""
    n: int
    """Rows it covers."""
    misses: int
    """Of those, missed."""
    outside_n: int
    """Rows outside it."""
    outside_misses: int
    """Of those, missed."""
    p_value: float
    """One-sided Fisher exact test: missed more often inside than outside."""

    @property
    def rate(self) -> float:
        return self.misses / self.n if self.n else 0.0

    @property
    def outside_rate(self) -> float:
        return self.outside_misses / self.outside_n if self.outside_n else 0.0


def covers(X: np.ndarray, description: Description) -> np.ndarray:
    """The rows of ``X`` a description covers."""
    mask = np.ones(X.shape[0], dtype=bool)
    for column in description:
        mask &= X[:, column]
    return mask


def score_all(X: np.ndarray, missed: np.ndarray, allowed: np.ndarray | None = None,
              min_n: int = MIN_N, max_terms: int = 3,
              min_effect: float | None = None) -> list[Scored]:
    """Every description of up to ``max_terms`` predicates (three: by beam) covering at
    least ``min_n`` rows of ``X``, scored. ``allowed`` masks the columns a description may
    use. Descriptions that cover exactly the same rows as a shorter one are left out (a
    predicate implied by another adds nothing); with ``min_effect``, so are those not
    missed that much more often than the rest (their test is not computed)."""
    rows, columns = X.shape
    if rows == 0:
        return []
    allowed = np.ones(columns, dtype=bool) if allowed is None else allowed
    total, total_missed = rows, int(missed.sum())
    Xi = X.astype(np.float32)
    Xm = Xi[missed]
    n1 = Xi.sum(0)
    m1 = Xm.sum(0)
    found: dict[Description, tuple[int, int]] = {}
    for i in np.flatnonzero(allowed & (n1 >= min_n)):
        found[(int(i),)] = (int(n1[i]), int(m1[i]))
    if max_terms >= 2:
        n2 = Xi.T @ Xi
        m2 = Xm.T @ Xm
        good = np.triu(np.outer(allowed, allowed) & (n2 >= min_n), k=1)
        for i, j in zip(*np.nonzero(good), strict=True):
            n, m = int(n2[i, j]), int(m2[i, j])
            if n == n1[i] or n == n1[j]:
                continue  # one implies the other: the shorter description says it
            found[(int(i), int(j))] = (n, m)
    scored = _scored(found, total, total_missed, min_effect)
    if max_terms >= 3 and scored:
        beam = sorted(scored, key=lambda s: s.p_value)[:BEAM]
        triples: dict[Description, tuple[int, int]] = {}
        for base in beam:
            mask = covers(X, base.description)
            n3 = Xi[mask].sum(0)
            m3 = Xi[mask & missed].sum(0)
            for k in np.flatnonzero(allowed & (n3 >= min_n)):
                if int(k) in base.description or n3[k] == base.n:
                    continue
                key = tuple(sorted((*base.description, int(k))))
                if len(key) == 3 and key not in found and key not in triples:
                    shorter = [found.get(tuple(c for c in key if c != drop))
                               for drop in key]
                    if any(s is not None and s[0] == n3[k] for s in shorter):
                        continue
                    triples[key] = (int(n3[k]), int(m3[k]))
        scored += _scored(triples, total, total_missed, min_effect)
    return scored


def _scored(found: dict[Description, tuple[int, int]], total: int, total_missed: int,
            min_effect: float | None = None) -> list[Scored]:
    keys = list(found)
    n = np.array([found[k][0] for k in keys], dtype=np.int64)
    m = np.array([found[k][1] for k in keys], dtype=np.int64)
    if min_effect is not None and keys:
        outside = np.maximum(total - n, 1)
        keep = m / np.maximum(n, 1) - (total_missed - m) / outside >= min_effect
        keys = [k for k, kept in zip(keys, keep, strict=True) if kept]
        n, m = n[keep], m[keep]
    if not keys:
        return []
    # P(X >= m), X ~ Hypergeometric(total, total_missed, n): Fisher's one-sided test of
    # the 2×2 table (inside/outside × missed/caught)
    p = stats.hypergeom.sf(m - 1, total, total_missed, n)
    return [Scored(k, int(n[i]), int(m[i]), total - int(n[i]), total_missed - int(m[i]),
                   float(p[i])) for i, k in enumerate(keys)]


def best(scored: list[Scored], min_effect: float) -> Scored | None:
    """The description with the strongest evidence of being missed at least
    ``min_effect`` more often than the rows outside it; ties go to the shorter
    description, then the one covering more rows."""
    eligible = [s for s in scored if s.rate - s.outside_rate >= min_effect]
    if not eligible:
        return None
    return min(eligible, key=lambda s: (s.p_value, len(s.description), -s.n, s.description))


def scored(X: np.ndarray, missed: np.ndarray, description: Description) -> Scored:
    """One description's evidence among the rows of ``X``."""
    inside = covers(X, description)
    n, m = int(inside.sum()), int(missed[inside].sum())
    return _scored({description: (n, m)}, X.shape[0], int(missed.sum()))[0]


def _greater(a: np.ndarray, missed: np.ndarray, b: tuple[int, int] | np.ndarray) -> float:
    """One-sided Fisher test: rows ``a`` missed more often than ``b`` (rows, or a
    (misses, n) pair)."""
    if isinstance(b, np.ndarray):
        b = (int(missed[b].sum()), int(b.sum()))
    if not a.any() or not b[1]:
        return 1.0
    table = [[int(missed[a].sum()), int((~missed[a]).sum())], [b[0], b[1] - b[0]]]
    return float(stats.fisher_exact(table, alternative="greater").pvalue)


def _part_of(X: np.ndarray, missed: np.ndarray, rows: np.ndarray, core: np.ndarray,
             outside: tuple[int, int]) -> bool:
    """Whether ``rows`` belong with ``core``: missed not significantly less often than
    it, or significantly more often than the rows ``outside`` (a blind spot with a
    louder part is still one blind spot) — unless only because another blind spot lies
    among them (`hot_part`)."""
    if _greater(core, missed, rows) > GENERALIZE_ALPHA:
        return True
    return _greater(rows, missed, outside) < GENERALIZE_ALPHA and \
        hot_part(X, missed, rows, outside) is None


def hot_part(X: np.ndarray, missed: np.ndarray, rows: np.ndarray,
             outside: tuple[int, int]) -> Description | None:
    """The first of the parts of ``rows`` that make them a *mix* — hot parts, each
    missed much more often than the rest of ``rows`` (``SPLIT_P``), and a remainder of
    at least ``MIN_N`` rows missed no more often than the rows ``outside`` — or None.
    "Edits changing 1–5 characters" that are missed more often only because negations
    and edits inside parentheses are short is a mix of two blind spots and ordinary
    edits; "edits changing digits", missed less often when the change is larger but
    still more often than the rest, is one blind spot (its remainder stands out)."""
    active = rows.copy()
    parts: list[Description] = []
    while len(parts) < MAX_PARTS and active.sum() >= 2 * MIN_N:
        found = best(score_all(X[active], missed[active], max_terms=2), SPLIT_EFFECT)
        if found is None or found.p_value > SPLIT_P:
            break
        parts.append(found.description)
        active &= ~covers(X, found.description)
    if not parts or active.sum() < MIN_N or \
            _greater(active, missed, outside) < GENERALIZE_ALPHA:
        return None
    return parts[0]


def generalize(X: np.ndarray, missed: np.ndarray, found: Scored, min_effect: float
               ) -> Scored:
    """The broadest description that keeps ``found``'s evidence: a predicate is dropped
    while the rows the shorter description adds belong with it (`_part_of`) and the
    shorter one still stands out by ``min_effect``. "Authority claim added, replacing
    text" becomes "authority claim added" when claims with other edits are missed as
    often; "changing digits, 1–5 characters" becomes "changing digits" when larger
    changes of numbers are missed too, if less often; "inside parentheses, changing
    digits" stays when other edits inside parentheses are caught."""
    current = found
    while len(current.description) > 1:
        inside = covers(X, current.description)
        options = []
        for drop in current.description:
            shorter = scored(X, missed, tuple(c for c in current.description if c != drop))
            if shorter.rate - shorter.outside_rate < min_effect:
                continue
            added = covers(X, shorter.description) & ~inside
            if not added.any() or _part_of(X, missed, added, inside,
                                           (shorter.outside_misses, shorter.outside_n)):
                options.append(shorter)
        if not options:
            break
        current = min(options, key=lambda s: (s.p_value, s.description))
    return current


def explainer(X: np.ndarray, missed: np.ndarray, found: Scored, scored_all: list[Scored]
              ) -> Scored:
    """Another description that explains ``found``'s misses better, if one does: no
    longer than it, holding at least half of its misses, such that the rest of
    ``found``'s rows are no more often missed than the rows outside it and what it adds
    belongs with it (`_part_of`); the strongest such. Two descriptions of the same misses,
    and the hunt names the one that does not take in caught edits ("edits the describer
    made to mention Zanzibar" rather than "named-entity changes of 6–40 characters", of
    which the judge catches the rest; "adding or removing a negation" rather than
    "negation-rule edits", whose antonyms it catches)."""
    inside = covers(X, found.description)
    own = inside & missed
    outside = (found.outside_misses, found.outside_n)
    best = None
    for other in sorted(scored_all, key=lambda s: s.p_value)[:EXPLAINERS_TRIED]:
        if len(other.description) > len(found.description) or \
                other.description == found.description:
            continue
        theirs = covers(X, other.description)
        if 2 * (theirs & own).sum() < own.sum():
            continue
        rest, added = inside & ~theirs, theirs & ~inside
        if rest.any() and _greater(rest, missed, outside) < GENERALIZE_ALPHA:
            continue  # it leaves part of the blind spot unexplained
        if added.any() and not _part_of(X, missed, added, theirs & inside, outside):
            continue  # it takes in edits that do not belong
        best = other
        break
    return found if best is None else best


def unmixed(X: np.ndarray, missed: np.ndarray, found: Scored, min_effect: float
            ) -> Scored:
    """``found``, or its hottest part when its rows are a mix (`hot_part`): the part's
    own description or its conjunction with ``found``'s, whichever has the stronger
    evidence (at most three predicates), as broad as that evidence allows. The rest of
    the mix stays unexplained, so the covering finds the other parts in turn."""
    part = hot_part(X, missed, covers(X, found.description),
                    (found.outside_misses, found.outside_n))
    if part is None:
        return found
    options = [scored(X, missed, d) for d in
               {part, tuple(sorted(set(part) | set(found.description)))} if len(d) <= 3]
    options = [o for o in options if o.rate - o.outside_rate >= min_effect]
    if not options:
        return found
    return generalize(X, missed, min(options, key=lambda s: (s.p_value, s.description)),
                      min_effect)


def cover(X: np.ndarray, missed: np.ndarray, *, max_found: int, p_threshold: float,
          min_effect: float, allowed: np.ndarray | None = None, min_n: int = MIN_N,
          explained: np.ndarray | None = None, rename: bool = False) -> list[Scored]:
    """Sequential covering: up to ``max_found`` descriptions, each the best (see
    `best`) among the rows the ones before it do not cover, while its p-value is below
    ``p_threshold``. ``explained`` marks rows set aside from the start. ``rename``: each
    then named again without the rows of those after it (`_without_later`) — for the
    candidates a search carries, not its suspicions round by round (renamed there, a
    suspicion's edits go to a narrower description and the spot's other edits surface
    as a second suspicion)."""
    active = np.ones(X.shape[0], dtype=bool) if explained is None else ~explained
    chosen: list[Scored] = []
    seen: list[np.ndarray] = []  # the rows each was chosen among
    while len(chosen) < max_found and active.sum() >= min_n:
        scored_all = score_all(X[active], missed[active], allowed, min_n,
                               min_effect=min_effect)
        found = best(scored_all, min_effect)
        if found is None or found.p_value > p_threshold:
            break
        found = generalize(X[active], missed[active], found, min_effect)
        found = explainer(X[active], missed[active], found, scored_all)
        found = unmixed(X[active], missed[active], found, min_effect)
        chosen.append(found)
        seen.append(active.copy())
        active &= ~covers(X, found.description)
    if not rename:
        return chosen
    return [_without_later(X, missed, chosen, seen, k, allowed, min_n, min_effect)
            for k in range(len(chosen))]


def _without_later(X: np.ndarray, missed: np.ndarray, chosen: list[Scored],
                   seen: list[np.ndarray], k: int, allowed: np.ndarray | None,
                   min_n: int, min_effect: float) -> Scored:
    """The ``k``-th description, named again (`explainer`, narrower only) by what it
    holds without the rows the later ones cover: a description found first can hold the
    blind spots found after it besides its own — in short trajectories "edits in the
    last third" holds the final answers and the steps with side effects and tool errors,
    all missed, and without the later findings' rows it is "edits in the final
    answer". Only when the new name leaves out nothing but the later ones' rows, or
    what else it leaves out is missed significantly less than what it keeps: a part
    with too little evidence stays in."""
    later = np.zeros(X.shape[0], dtype=bool)
    for other in chosen[k + 1:]:
        later |= covers(X, other.description)
    rows = seen[k] & ~later
    if not (later & seen[k] & covers(X, chosen[k].description)).any() or \
            rows.sum() < min_n:
        return chosen[k]
    own = scored(X[rows], missed[rows], chosen[k].description)
    named = explainer(X[rows], missed[rows], own,
                      score_all(X[rows], missed[rows], allowed, min_n,
                                min_effect=min_effect))
    inside = covers(X, chosen[k].description)
    kept = covers(X, named.description)
    if named.description == chosen[k].description or (kept & seen[k] & ~inside).any():
        return chosen[k]  # (only ever narrower: what it adds was weighed when found)
    left = inside & rows & ~kept
    if left.any() and _greater(kept & rows, missed, left) > GENERALIZE_ALPHA:
        # what it leaves out besides the later ones' rows is not shown to be missed
        # less: too little evidence to call it no blind spot, so the extent stays
        return chosen[k]
    return scored(X[seen[k]], missed[seen[k]], named.description)
