"""fbi's one bootstrap: scipy's ``scipy.stats.bootstrap``, used three ways.

* A share of 0/1 values (the ability and overall rates): the percentile interval the
  bootstrap approaches as its resamples grow, computed exactly from the counts
  (`bootstrap_interval`), so no seed and no Monte Carlo error.
* Any other statistic (agreement with people, Cohen's κ, rank correlations, Kendall's τ
  between two rankings): scipy draws the resamples, a block at a time, and
  `bootstrap_distribution` hands back every resample's value; the caller drops the
  resamples where its statistic is undefined before taking percentiles.
* The QA noise metrics (`fbi.metrics._qa`): the noise paper's 95% BCa interval,
  percentile where BCa is degenerate (`bca_interval`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=8192)  # a report asks for the same counts in many groups
def bootstrap_interval(hits: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the share hits/n of 0/1 values, computed
    exactly rather than by resampling; None when n is 0.

    A resample of the n values drawn with replacement holds Binomial(n, hits/n) ones, so
    the resamples' means follow Binomial(n, hits/n)/n exactly, and the percentile
    interval a bootstrap approaches as its resamples grow is that distribution's
    quantiles: scipy's ``binom.ppf`` gives them. The same interval as
    ``scipy.stats.bootstrap(method="percentile")`` without its Monte Carlo error, no
    seed, and in time that does not grow with n (a report over 20 judges asks for
    about a thousand).
    """
    if n == 0:
        return None
    from scipy.stats import binom

    tail = (1 - level) / 2
    low, high = binom.ppf([tail, 1 - tail], n, hits / n) / n
    return float(low), float(high)


def bootstrap_distribution(samples: Sequence[np.ndarray],
                           statistic: Callable[..., np.ndarray], resamples: int,
                           seed: int, block: int) -> np.ndarray:
    """``statistic`` over ``resamples`` resamples of ``samples``, each resampled on its own
    with replacement (several samples make a stratified bootstrap), drawn by
    ``scipy.stats.bootstrap`` ``block`` resamples at a time: an array whose last axis is
    the resamples. ``statistic(*resampled, axis=-1)`` gets each sample as block × its
    size and returns its values with the block last. NaN values are kept."""
    from scipy.stats import bootstrap

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns of NaN draws; the caller drops them
        return bootstrap(list(samples), statistic, n_resamples=resamples, batch=block,
                         vectorized=True, method="percentile",
                         rng=np.random.default_rng(seed)).bootstrap_distribution


def bca_interval(samples: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray],
                 resamples: int, seed: int, paired: bool = False
                 ) -> tuple[float | None, float | None, str | None]:
    """scipy's 95% BCa interval of ``statistic`` (vectorised) over ``samples``, with the
    method used: BCa, else the percentile interval where BCa is degenerate (NaN), else
    (None, None, None)."""
    from scipy.stats import bootstrap

    for method in ("BCa", "percentile"):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a degenerate BCa is handled just below
            interval = bootstrap(samples, statistic, paired=paired, vectorized=True,
                                 n_resamples=resamples, method=method,
                                 random_state=seed).confidence_interval
        if np.isfinite(interval.low) and np.isfinite(interval.high):
            return float(interval.low), float(interval.high), method
    return None, None, None
