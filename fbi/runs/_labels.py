"""The label each run has in a report: its --label, else its judge, told apart from the
runs it would be confused with by what differs between them."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import chain
from pathlib import Path

from fbi.errors import InputError
from fbi.run_spec import RunSpec, identity_of
from fbi.runs._read import Run


def label_runs(runs: list[Run]) -> list[Run]:
    """Give every run a label no other run with a strategy in common shares.

    A run's label is its ``--label``, else its judge; runs that would share one are told
    apart by what differs between them (``gpt-4o@t0.7``, ``@max512``, ``@api=host``,
    ``@prompts=…``, ``@data=…``). Runs still alike are refused: their instances must
    never be pooled into one row. The judgments of a relabelled run carry its label as
    ``judge``, so every table keys on it.
    """
    groups: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.spec.label or run.spec.model].append(run)
    labels: dict[int, str] = {}
    for label, group in groups.items():
        clashing = len(group) > 1 and _share_strategy(group)
        for run in group:
            labels[id(run)] = label + (_distinguishing_suffix(run, group)
                                       if clashing and not run.spec.label else "")
    seen: dict[tuple[str, str], Path] = {}
    for run in runs:
        for strategy in {j.strategy for j in run.judgments}:
            key = (labels[id(run)], strategy)
            if key in seen:
                raise InputError(
                    f"{seen[key]} and {run.folder} both hold {strategy} judgments labelled "
                    f"'{key[0]}', and nothing tells the runs apart; a report never pools "
                    "two runs. Fix: report them separately, or name them with `fbi evaluate "
                    "--output RUN --label NAME` (no model call on a finished run)")
            seen[key] = run.folder
    return [_relabelled(run, labels[id(run)]) for run in runs]


def _share_strategy(group: list[Run]) -> bool:
    strategies = [{j.strategy for j in run.judgments} | set(run.spec.prompts)
                  for run in group]
    return any(a & b for i, a in enumerate(strategies) for b in strategies[i + 1:])


def _distinguishing_suffix(run: Run, group: list[Run]) -> str:
    def facets(spec: RunSpec) -> dict[str, str]:
        prompts = json.dumps({k: (v.version, v.template_sha, v.score_range)
                              for k, v in spec.prompts.items()}, sort_keys=True)
        parameters = spec.parameters
        return {"protocol=": str(parameters.protocol or "fbi"),
                "t": str(parameters.temperature), "max": str(parameters.max_tokens),
                # runs recorded before the explanation cap was an option all used 600
                "expl": str(parameters.explanation_chars or 600),
                "api=": _host(spec.api_base),
                "prompts=": _digest(prompts), "data=": (spec.dataset.fingerprint or "")[:8],
                "selection=": _digest(json.dumps(identity_of(spec.selection),
                                                 sort_keys=True))}

    everyone = [facets(other.spec) for other in group]
    mine = facets(run.spec)
    parts = [f"{key}{mine[key]}" for key in mine
             if len({f[key] for f in everyone}) > 1]
    return "@" + "@".join(parts) if parts else ""


def _host(url: str | None) -> str:
    from urllib.parse import urlsplit

    if not url:
        return "default"
    parts = urlsplit(url)
    return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname \
        else url


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _relabelled(run: Run, label: str) -> Run:
    if label == run.spec.model:
        return run
    # The judgments are this report's own lean copies (fbi.runs.LeanJudgment, read with
    # full=False): relabelled in place, since a copy of a million costs seconds.
    for judgment in chain(run.judgments, run.repeats):
        judgment.judge = label
    return Run(run.folder, run.spec.model_copy(update={"label": label}), run.judgments,
               run.instances, [c.model_copy(update={"judge": label}) for c in run.checks],
               run.problems, run.repeats)
