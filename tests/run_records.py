"""A judge run's judgments.jsonl read by hand, for tests that check fbi's figures
against the paper's rule worked out here, not against fbi's own outcome code."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


def latest_records(folder: Path) -> list[dict]:
    by_call = {}
    for line in (folder / "judgments.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_call[record["call_id"]] = record
    return list(by_call.values())


def by_hand(folder: Path) -> dict[tuple[str, str], str]:
    """(instance, strategy) → its outcome by the paper's rule (§4): single-answer, the
    perturbed answer is penalised when it scores below the gold; pairwise, when the gold
    answer is preferred in both orders. A penalised planted error is detected, a
    penalised score-invariant rewrite is not retained; any unreadable call: unparseable."""
    roles: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    invariant = set()
    for record in latest_records(folder):
        roles[(record["instance_id"], record["strategy"])][record["role"]] = record
        if record["category"] == "score-invariant":
            invariant.add(record["instance_id"])
    outcomes = {}
    for key, calls in roles.items():
        if any(c["status"] != "ok" for c in calls.values()):
            outcomes[key] = "unparseable"
            continue
        if "gold" in calls:
            penalised = calls["perturbed"]["score"] < calls["gold"]["score"]
        else:
            penalised = {calls["gold-first"]["verdict"],
                         calls["perturbed-first"]["verdict"]} == {"gold"}
        if key[0] in invariant:
            outcomes[key] = "penalised" if penalised else "retained"
        else:
            outcomes[key] = "detected" if penalised else "undetected"
    return outcomes


def rate(outcomes: dict[tuple[str, str], str], strategy: str) -> float:
    """The undetected share of a strategy's readable planted errors."""
    readable = [o for (_, s), o in outcomes.items() if s == strategy
                and o in ("detected", "undetected")]
    return readable.count("undetected") / len(readable)
