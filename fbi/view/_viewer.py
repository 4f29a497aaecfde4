"""What `fbi view` serves: the runs found under its paths, their indexes (built once,
in the background and on demand, again when a run's log grows), and each page's
contents. The HTTP side is `fbi.view._server`; the pages' HTML, `templates/`."""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fbi.diffing import answer_diff
from fbi.errors import InputError
from fbi.taxonomy import (
    BESIDE_ABILITIES,
    FBI_ABILITIES,
    ability_legend,
    category_order,
    strategy_order,
)
from fbi.view._catalog import RunEntry, discover
from fbi.view._index import OUTCOMES, PAGE_SIZE, Filters, RunIndex, Stamp, build_index, matching


class Viewer:
    """The runs under ``paths``, indexed as they are asked for. Thread-safe: the server
    answers each request on its own thread, and one run is indexed once."""

    def __init__(self, paths: Sequence[str | Path], human: Path | None = None):
        self.paths = [Path(p) for p in paths]
        self.human = human
        self.entries: dict[str, RunEntry] = {}
        self._indexes: dict[str, RunIndex] = {}
        self._failures: dict[str, str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._human_cache: dict[frozenset, tuple[dict[str, list], list[str]]] = {}
        self.refresh()

    # -- runs and their indexes ------------------------------------------------------

    def refresh(self) -> list[RunEntry]:
        """Look for run folders again (cheap: specs only) and return them, newest first."""
        entries = discover(self.paths)
        with self._guard:
            self.entries = {e.key: e for e in entries}
        return entries

    def entry(self, key: str) -> RunEntry:
        try:
            return self.entries[key]
        except KeyError:
            raise InputError(f"no run '{key}' is served here. Fix: pick one on the runs "
                             "page") from None

    def index(self, key: str) -> RunIndex:
        """The run's index, built on first use and again when its log has changed."""
        entry = self.entry(key)
        if not entry.judgeable:
            raise InputError(f"{key}: a {entry.kind} run has no judgments to show")
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            current = self._indexes.get(key)
            log = entry.folder / "judgments.jsonl"
            if current is not None and log.exists() and Stamp.of(log) == current.stamp:
                return current
            try:
                built = build_index(entry)
            except InputError as error:
                self._failures[key] = str(error)
                raise
            self._failures.pop(key, None)
            self._indexes[key] = built
            return built

    def indexed(self, key: str) -> RunIndex | None:
        """The index if built already (the runs page never waits for one)."""
        return self._indexes.get(key)

    def failure(self, key: str) -> str | None:
        """Why the run could not be indexed, if it could not."""
        return self._failures.get(key)

    def warm(self) -> threading.Thread:
        """Index every judge run on a background thread, newest first, so pages open
        without waiting; a run that cannot be read is noted, not fatal."""
        def work() -> None:
            for entry in list(self.entries.values()):
                if entry.judgeable:
                    try:
                        self.index(entry.key)
                    except InputError:
                        pass
                    except OSError as error:  # a folder removed while served
                        self._failures[entry.key] = str(error)
        thread = threading.Thread(target=work, name="fbi-view-index", daemon=True)
        thread.start()
        return thread

    def judge_keys(self, asked: Sequence[str]) -> list[str]:
        """The judge runs asked for, or every one served."""
        if asked:
            for key in asked:
                self.entry(key)
            return list(dict.fromkeys(asked))
        return sorted(e.key for e in self.entries.values() if e.judgeable)

    def names(self, keys: Sequence[str]) -> dict[str, str]:
        """How pages name each run: its label, or its key where labels repeat."""
        labels = {key: self.entry(key).label for key in keys}
        counts: dict[str, int] = {}
        for label in labels.values():
            counts[label] = counts.get(label, 0) + 1
        return {key: label if counts[label] == 1 else f"{label} ({key})"
                for key, label in labels.items()}

    # -- pages ------------------------------------------------------------------------

    def runs_page(self) -> dict[str, Any]:
        rows = []
        for entry in self.refresh():
            index = self.indexed(entry.key)
            spec = entry.spec
            totals = spec.totals if spec else None
            watch, damaged = _watch_steps(entry)
            rows.append({
                "entry": entry, "index": index,
                "failure": self.failure(entry.key) or damaged,
                "calls": index.calls if index else (totals.total if totals else None),
                "cost": index.cost_usd if index else (
                    None if totals is None or totals.unpriced else totals.cost),
                "unpriced": index.unpriced_calls if index else (
                    totals.unpriced if totals else 0),
                "whole_run": index is not None,
                "dataset": _dataset_name(spec.dataset.spec) if spec else "",
                "instances": spec.dataset.instances if spec else None,
                "watch": watch[-1:],
            })
        return {"rows": rows, "paths": [str(p) for p in self.paths]}

    def grid_page(self, keys: Sequence[str], strategies: Sequence[str]) -> dict[str, Any]:
        keys = self.judge_keys(keys)
        if not keys:
            raise InputError("no judge run is served here: `fbi evaluate` writes one")
        indexes = [self.index(key) for key in keys]
        names = self.names(keys)
        shown = strategy_order({s for index in indexes for s in index.strategies})
        if strategies:
            shown = [s for s in shown if s in strategies]
        cells: dict[tuple[str, str, str], list[dict]] = {}
        categories: set[str] = set()
        for index in indexes:
            for rate in index.rates:
                if rate.strategy not in shown:
                    continue
                if rate.level == "category":
                    categories.add(rate.group)
                cells.setdefault((rate.level, rate.group, rate.strategy), []).append(
                    {"key": index.entry.key, "name": names[index.entry.key], "rate": rate})
        rows = [("category", c) for c in category_order(categories)]
        # the paper's abilities, then preference pairs and agents' trajectories beside
        rows += [("ability", a.short) for a in (*FBI_ABILITIES, *BESIDE_ABILITIES)
                 if any(k[:2] == ("ability", a.short) for k in cells)]
        rows += [row for row in (("overall", "all"), ("score-invariant", "SI"))
                 if any(k[:2] == row for k in cells)]
        return {"keys": keys, "names": names, "strategies": shown, "rows": rows,
                "cells": cells, "all_strategies": strategy_order(
                    {s for index in indexes for s in index.strategies}),
                "chosen_strategies": list(strategies),
                "legend": ability_legend({group for _, group in rows}),
                "comparisons": self._comparisons(indexes, names, shown),
                "problems": [(names[i.entry.key], p) for i in indexes for p in i.problems],
                "display": {s: _display_name(indexes, s) for s in shown}}

    def _comparisons(self, indexes: list[RunIndex], names: dict[str, str],
                     strategies: list[str]) -> list[dict]:
        """The report's paired tests (exact McNemar, Holm within each pair) between the
        runs shown, overall and per ability, each overall row with its sentence."""
        if len(indexes) < 2:
            return []
        from fbi.metrics import paired_comparisons
        from fbi.report import comparison_sentence

        outcomes = [o for index in indexes for o in index.outcomes()
                    if o.strategy in strategies]
        rows = []
        for row in paired_comparisons(outcomes):
            if row.level not in ("overall", "ability"):
                continue
            data = row.model_dump()
            data.update(sides=(names[row.judge_a], names[row.judge_b]),
                        strategy_name=_display_name(indexes, row.strategy))
            data["sentence"] = comparison_sentence(data) if row.level == "overall" else ""
            rows.append(data)
        order = strategy_order({r["strategy"] for r in rows})
        rows.sort(key=lambda r: (r["judge_a"], r["judge_b"], order.index(r["strategy"]),
                                 r["level"] != "overall", r["group"]))
        return rows

    def instances_page(self, filters: Filters) -> dict[str, Any]:
        keys = self.judge_keys(filters.runs)
        indexes = [self.index(key) for key in keys]
        by_key = {key: self.index(key) for key in
                  {filters.missed_by, filters.caught_by} - {""}}
        categories = category_order({index.instances[i].category for index in indexes
                                     for i in index.ids})
        strategies = strategy_order({s for i in indexes for s in i.strategies})
        abilities = [a.short for a in (*FBI_ABILITIES, *BESIDE_ABILITIES)]
        # a filter naming nothing the runs hold would keep nothing, or (ignored) all:
        # either way a page that does not show what the link says
        for name, asked, known in (("outcome", filters.outcomes, OUTCOMES),
                                   ("strategy", filters.strategies, strategies),
                                   ("category", filters.categories, categories),
                                   ("ability", filters.abilities, abilities)):
            unknown = [value for value in asked if value not in known]
            if unknown:
                raise InputError(f"{name}={unknown[0]!r}: the runs shown hold no such "
                                 f"{name}; one of {', '.join(known)}")
        found = matching(indexes, filters, by_key)
        return {"filters": filters, "keys": keys, "names": self.names(keys),
                "all_runs": [e for e in self.entries.values() if e.judgeable],
                "all_names": self.names([e.key for e in self.entries.values()
                                         if e.judgeable]),
                "found": found, "pages": max(1, -(-found.total // PAGE_SIZE)),
                "categories": categories, "abilities": abilities, "strategies": strategies,
                "outcomes": OUTCOMES}

    def instance_page(self, instance_id: str, keys: Sequence[str]) -> dict[str, Any]:
        keys = self.judge_keys(keys)
        holding = [index for index in (self.index(key) for key in keys)
                   if index.position_of(instance_id) is not None]
        if not holding:
            raise InputError(f"no run shown holds an instance '{instance_id}'")
        instance = holding[0].instances[instance_id]
        names = self.names([index.entry.key for index in holding])
        columns = []
        for index in holding:
            judgments = index.judgments_of(instance_id)
            outcomes = index.outcome_of(instance_id)
            by_strategy: dict[str, list] = {}
            for judgment in judgments:
                by_strategy.setdefault(judgment.strategy, []).append(
                    {"judgment": judgment, "show": _show_command(index.entry.folder,
                                                                 judgment.call_id)})
            columns.append({"key": index.entry.key, "name": names[index.entry.key],
                            "outcomes": outcomes, "calls": by_strategy})
        strategies = strategy_order({s for c in columns for s in c["outcomes"]})
        labels, warnings = self._human_labels(holding)
        return {"instance": instance, "diff": answer_diff(instance.gold_answer,
                                                          instance.perturbed_answer),
                "columns": columns, "strategies": strategies, "keys": keys,
                "display": {s: _display_name(holding, s) for s in strategies},
                "human": labels.get(instance_id, []), "human_warnings": warnings}

    def full_text(self, key: str, instance_id: str, call_id: str, field: str) -> str:
        """One call's whole reply (``reply``), reasoning (``reasoning``) or N-th repair
        (``repair-N``): what a page shows clipped (`TEXT_SHOWN`)."""
        for judgment in self.index(key).judgments_of(instance_id):
            if judgment.call_id != call_id:
                continue
            if field == "reply":
                return judgment.raw_output or ""
            if field == "reasoning":
                return judgment.reasoning or ""
            number = field.removeprefix("repair-")
            if number.isdigit() and 1 <= int(number) <= len(judgment.repair_outputs):
                return judgment.repair_outputs[int(number) - 1]
            raise InputError(f"no text {field!r} (reply, reasoning or repair-N)")
        raise InputError(f"no call {call_id!r} of instance {instance_id!r} in {key}")

    def check_human(self) -> list[str]:
        """Read ``--human`` against every judge run served: a bad row is an InputError
        now, before the first page; the warnings are returned."""
        return self._human_labels([self.index(key) for key in self.judge_keys([])])[1]

    def _human_labels(self, indexes: list[RunIndex]) -> tuple[dict[str, list], list[str]]:
        """``--human`` labels by instance id, read against the runs shown (once per set)."""
        if self.human is None:
            return {}, []
        wanted = frozenset(index.entry.key for index in indexes)
        if wanted not in self._human_cache:
            from fbi.trust import read_human_labels

            instances = {i: inst for index in indexes for i, inst in index.instances.items()}
            labels, warnings = read_human_labels(self.human, instances)
            by_instance: dict[str, list] = {}
            for label in labels:
                by_instance.setdefault(label.instance_id, []).append(label)
            self._human_cache[wanted] = (by_instance, warnings)
        return self._human_cache[wanted]

    def run_page(self, key: str) -> dict[str, Any]:
        entry = self.entry(key)
        hunt, hunt_view = None, {}
        if entry.kind == "hunt" and (entry.folder / "hunt.json").exists():
            from fbi.report import load_hunt

            hunt = load_hunt(entry.folder)
            hunt_view = _hunt_view(hunt)
        queue = None
        if entry.queue is not None and entry.queue.exists():
            from collections import Counter

            from fbi.datasets import load_dataset

            candidates = load_dataset(str(entry.queue)).instances
            queue = {"file": entry.queue.name, "total": len(candidates),
                     "by_category": sorted(Counter(c.category for c in candidates).items()),
                     "by_label": sorted(Counter(c.label.value for c in candidates).items())}
        files = sorted(p.name for p in entry.folder.iterdir()) if entry.folder.is_dir() else []
        watch, damaged = _watch_steps(entry)
        return {"entry": entry, "spec": entry.spec, "hunt": hunt, "queue": queue,
                "watch": watch[-WATCH_STEPS_SHOWN:][::-1], "watch_steps": len(watch),
                "watch_problem": damaged,
                "files": files, "command": shlex.join(entry.spec.command) if entry.spec
                else "", **hunt_view}


#: The latest steps a watch's page lists (a year of hourly steps is 8,760).
WATCH_STEPS_SHOWN = 200


def _watch_steps(entry) -> tuple[list, str | None]:
    """A watch's history (`fbi watch`), oldest first, or what is wrong with its file;
    nothing for another kind of run."""
    if entry.kind != "watch":
        return [], None
    from fbi.watch import read_history

    try:
        return read_history(entry.folder), None
    except InputError as error:
        return [], str(error)


#: Characters of a judge's reply an example shows (the whole reply: `fbi show`).
REPLY_SHOWN = 600


def _hunt_view(hunt) -> dict[str, Any]:
    """What a hunt's page shows beyond hunt.json: its summary sentence, its findings
    numbered as the terminal numbers them, each example's word diff."""
    from fbi.report import hunt_summary

    confirmed = [f for f in hunt.findings if f.confirmed]
    others = [f for f in hunt.findings if not f.confirmed]
    numbered = list(enumerate(confirmed, 1))
    examples = {f.name: [(e, answer_diff(e.gold_answer, e.edited_answer),
                          (e.judge_reply or "")[:REPLY_SHOWN],
                          len(e.judge_reply or "") > REPLY_SHOWN) for e in f.examples]
                for f in confirmed}
    return {"hunt_summary": hunt_summary(hunt), "hunt_examples": examples,
            "hunt_tables": [("Blind spots found", "findings", numbered),
                            ("Candidates not confirmed", "candidates",
                             list(enumerate(others, len(confirmed) + 1)))]}


def _display_name(indexes: Sequence[RunIndex], strategy: str) -> str:
    for index in indexes:
        prompt = index.entry.spec.prompts.get(strategy) if index.entry.spec else None
        if prompt and prompt.display_name:
            return prompt.display_name
    return strategy


def _dataset_name(spec: str | None) -> str:
    if not spec:
        return ""
    return Path(spec).name if os.sep in spec else spec


def _show_command(folder: Path, call_id: str) -> str:
    """The `fbi show` command of one call, pasteable in the server's directory."""
    try:
        shown = folder.resolve().relative_to(Path.cwd())
    except ValueError:
        shown = folder.resolve()
    return shlex.join(["fbi", "show", str(shown), call_id])
