"""How fast `fbi watch` raises its alarm, and how often falsely (issue 53): simulated
canaries, the watch's own evidence (`fbi.watch.change_evidence`, `combined_log_e`).

    python benchmarks/watch_alarm.py [--seeds 100] [--null-seeds 1000]

A step asks each watched category 10 judgments (the default --canary), each failing
independently with the category's rate — what the watch's draws with replacement make
of any judge. **Changed**: from a call drawn uniformly in [0, 10,000) on, one category's
failure rate is 15 points higher; the delay is the canary calls (all categories) from
that call to the end of the step whose E first reaches 1/α (α = 0.01, the default).
**Unchanged**: the share of watches alarmed within 10,000 canary calls. Two canaries:
one category watched (10 calls a step), and four (40 calls a step; the change in one of
them). Beside each, **the oracle's floor**: a test told both rates and the change's
call still needs log(1/α) / KL(p + 0.15 ‖ p) judgments of the changed category on
average (Wald), times the categories a step asks. Timing: one step's evidence over a
history of 1,000 and 10,000 steps (the input grown 10×), against a pure-Python loop
computing the same sum; peak RSS of the invocation. JSON to stdout; copy to RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from peak_rss import peak_rss_mb

from fbi.watch import change_evidence, combined_log_e

ALPHA, RISE, PER_STEP, HORIZON = 0.01, 0.15, 10, 10_000


def first_alarm(rates: list[float], changed: int, change_call: int | None, rng) -> int | None:
    """The canary call at whose step's end the alarm first sounds (None: not within the
    horizon plus 2,000 calls)."""
    step_calls = PER_STEP * len(rates)
    counts: list[list[tuple[int, int]]] = [[] for _ in rates]
    limit = HORIZON + (2_000 if change_call is not None else 0)
    for step in range(limit // step_calls):
        for k, rate in enumerate(rates):
            # the calls of category k this step: their global indices, in category blocks
            first = step * step_calls + k * PER_STEP
            index = np.arange(first, first + PER_STEP)
            p = np.full(PER_STEP, rate)
            if change_call is not None and k == changed:
                p[index >= change_call] += RISE
            counts[k].append((int((rng.uniform(size=PER_STEP) < p).sum()), PER_STEP))
        log_e = combined_log_e([change_evidence(c).log_e for c in counts])
        if log_e >= math.log(1 / ALPHA):
            return (step + 1) * step_calls
    return None


def kl(p: float, q: float) -> float:
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def delays(rates: list[float], changed: int, seeds: int) -> dict:
    found, early = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        change = int(rng.integers(0, HORIZON))
        at = first_alarm(rates, changed, change, rng)
        if at is not None and at <= change:
            early += 1  # a false alarm before the change
            continue
        found.append(math.inf if at is None else at - change)
    base = rates[changed]
    oracle = math.log(1 / ALPHA) / kl(base + RISE, base) * len(rates)
    return {"base rate": base,
            "flagged within 300 canary calls": sum(d <= 300 for d in found) / seeds,
            "median delay (canary calls)": float(np.median(found)) if found else None,
            "oracle's floor (canary calls)": round(oracle),
            "alarms before the change": early}


def false_alarms(rates: list[float], seeds: int) -> float:
    alarmed = sum(first_alarm(rates, 0, None, np.random.default_rng(10_000 + seed))
                  is not None for seed in range(seeds))
    return alarmed / seeds


def timing(steps: int) -> dict:
    rng = np.random.default_rng(1)
    counts = [(int(rng.binomial(PER_STEP, 0.2)), PER_STEP) for _ in range(steps)]
    started = time.perf_counter()
    fbi_value = change_evidence(counts).log_e
    fbi_s = time.perf_counter() - started
    started = time.perf_counter()
    baseline = _pure_python(counts)
    baseline_s = time.perf_counter() - started
    assert abs(fbi_value - baseline) < 1e-6 * max(1.0, abs(baseline))
    return {"steps": steps, "fbi (ms)": round(1000 * fbi_s, 2),
            "pure-Python loop (ms)": round(1000 * baseline_s, 2)}


def _pure_python(counts: list[tuple[int, int]]) -> float:
    """The same log E by math.lgamma, one start at a time."""
    def log_kt(m: int, n: int) -> float:
        return (math.lgamma(m + .5) + math.lgamma(n - m + .5) - math.lgamma(n + 1)
                - math.log(math.pi))

    m_all, n_all = sum(c[0] for c in counts), sum(c[1] for c in counts)
    null = sum(x * math.log(x / n_all) for x in (m_all, n_all - m_all) if x)
    terms, m_before, n_before = [], 0, 0
    for k in range(2, len(counts) + 1):
        m_before += counts[k - 2][0]
        n_before += counts[k - 2][1]
        weight = math.log(2) * (1 / math.log(k) - 1 / math.log(k + 1))
        terms.append(log_kt(m_before, n_before) + log_kt(m_all - m_before, n_all - n_before)
                     - null + math.log(weight))
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--null-seeds", type=int, default=1000)
    args = parser.parse_args()
    started = time.perf_counter()
    results: dict = {"alpha": ALPHA, "rise": RISE, "per step per category": PER_STEP}
    four = [0.05, 0.1, 0.2, 0.3]
    results["one category watched"] = [delays([p], 0, args.seeds) for p in four]
    results["four categories watched"] = [delays(four, k, args.seeds) for k in range(4)]
    results["false alarms within 10,000 calls"] = {
        "one category (rate 0.2)": false_alarms([0.2], args.null_seeds),
        "four categories": false_alarms(four, args.null_seeds)}
    results["one step's evidence"] = [timing(1_000), timing(10_000)]
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["peak RSS (MB)"] = peak_rss_mb()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
