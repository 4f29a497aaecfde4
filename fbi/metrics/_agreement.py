"""Agreement between annotators: percent agreement, Cohen's κ, Fleiss' κ, Krippendorff's α.

Pure functions over ``annotator → {item: label}`` tables (nominal labels).

* Percent agreement: over items with two or more labels, the share of agreeing pairs of
  annotators (each item weighted equally).
* Cohen's κ (per pair of annotators, over the items both labelled):
  κ = (p_o − p_e) / (1 − p_e), p_e from each annotator's own label distribution. When
  both always use one and the same label, p_e = 1 and κ is undefined (None).
* Fleiss' κ (over the items every annotator labelled): P̄ = mean over items of
  Σ n_ij(n_ij − 1) / (n(n − 1)); P̄_e = Σ_j p_j²; κ = (P̄ − P̄_e) / (1 − P̄_e); None when
  P̄_e = 1.
* Krippendorff's α (nominal, any number of labels per item, missing allowed): from the
  coincidence matrix o_ck of items with two or more labels,
  α = 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k; None when only one label value occurs.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np

from fbi.metrics._results import AnnotatorAgreement, AnnotatorPair, VettingAgreement


def _items_with(labels: dict[str, dict[str, str]], minimum: int) -> dict[str, list[str]]:
    per_item: dict[str, list[str]] = {}
    for by_item in labels.values():
        for item, label in by_item.items():
            per_item.setdefault(item, []).append(label)
    return {item: values for item, values in per_item.items() if len(values) >= minimum}


def percent_agreement(labels: dict[str, dict[str, str]]) -> float | None:
    """The mean share of agreeing annotator pairs per item, over items labelled by two or more."""
    items = _items_with(labels, 2)
    if not items:
        return None
    shares = []
    for values in items.values():
        pairs = list(combinations(values, 2))
        shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return float(np.mean(shares))


def cohen_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's κ between two annotators' labels of the same items, in order; None when there
    are none or the lists differ in length."""
    if not a or len(a) != len(b):
        return None
    categories = sorted(set(a) | set(b))
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[c] * count_b[c] for c in categories) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' κ of an items × categories count table with the same raters per item."""
    table = np.asarray(table, dtype=float)
    if table.size == 0:
        return None
    raters = table.sum(axis=1)
    if raters.min() < 2 or raters.min() != raters.max():
        return None
    n = raters[0]
    p_items = ((table * (table - 1)).sum(axis=1)) / (n * (n - 1))
    p_categories = table.sum(axis=0) / table.sum()
    expected = float((p_categories ** 2).sum())
    if expected == 1:
        return None
    return float((p_items.mean() - expected) / (1 - expected))


def krippendorff_alpha(labels: dict[str, dict[str, str]]) -> float | None:
    """Krippendorff's α for nominal labels over the items labelled by two or more annotators;
    None when there is only one label value."""
    items = _items_with(labels, 2)
    values = sorted({v for vs in items.values() for v in vs})
    if len(values) < 2:
        return None
    index = {v: i for i, v in enumerate(values)}
    coincidence = np.zeros((len(values), len(values)))
    for labels_of_item in items.values():
        m = len(labels_of_item)
        counts = Counter(labels_of_item)
        for c, n_c in counts.items():
            for k, n_k in counts.items():
                pairs = n_c * (n_k - 1) if c == k else n_c * n_k
                coincidence[index[c], index[k]] += pairs / (m - 1)
    marginals = coincidence.sum(axis=1)
    total = marginals.sum()
    off_diagonal = ~np.eye(len(values), dtype=bool)
    disagreement_observed = coincidence[off_diagonal].sum()
    disagreement_expected = np.outer(marginals, marginals)[off_diagonal].sum()
    return float(1 - (total - 1) * disagreement_observed / disagreement_expected)


def fleiss_table(labels: dict[str, dict[str, str]]) -> np.ndarray:
    """Items labelled by every annotator, as an items × label-values count table."""
    annotators = list(labels)
    common = set.intersection(*(set(v) for v in labels.values())) if labels else set()
    values = sorted({label for by_item in labels.values() for label in by_item.values()})
    rows = [[sum(labels[a][item] == v for a in annotators) for v in values]
            for item in sorted(common)]
    return np.array(rows, dtype=float).reshape(len(rows), len(values))


def agreement_summary(labels: dict[str, dict[str, str]]) -> AnnotatorAgreement:
    """Items labelled by two or more annotators, and their percent agreement, Fleiss' κ and
    Krippendorff's α."""
    return AnnotatorAgreement(
        items=len(_items_with(labels, 2)), percent_agreement=percent_agreement(labels),
        fleiss_kappa=fleiss_kappa(fleiss_table(labels)) if len(labels) >= 2 else None,
        krippendorff_alpha=krippendorff_alpha(labels))


def agreement_report(labels: dict[str, dict[str, str]],
                     categories: dict[str, str]) -> VettingAgreement:
    """Overall and per-category figures, and Cohen's κ and a confusion matrix per pair."""
    pairs = []
    for a, b in combinations(sorted(labels), 2):
        shared = sorted(set(labels[a]) & set(labels[b]))
        if not shared:
            continue
        first = [labels[a][i] for i in shared]
        second = [labels[b][i] for i in shared]
        values = sorted(set(first) | set(second))
        confusion = [[sum(x == row and y == col for x, y in zip(first, second, strict=True))
                      for col in values] for row in values]
        pairs.append(AnnotatorPair(a=a, b=b, items=len(shared),
                                   cohen_kappa=cohen_kappa(first, second), labels=values,
                                   confusion=confusion))
    by_category: dict[str, dict[str, dict[str, str]]] = {}
    for annotator, by_item in labels.items():
        for item, label in by_item.items():
            by_category.setdefault(categories.get(item, "?"), {}).setdefault(
                annotator, {})[item] = label
    per_category = {c: agreement_summary(t) for c, t in by_category.items()}
    return VettingAgreement(overall=agreement_summary(labels), pairs=pairs,
                            categories={c: a for c, a in per_category.items() if a.items})
