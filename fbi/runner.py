"""Runs many model-calling tasks: concurrently, resumably, within a budget.

The runner knows nothing of judges. It takes tasks (an id, an estimated cost, and a
coroutine that makes the calls and returns a record), skips those whose record is
already in the output log, runs the rest with a concurrency limit, appends each record
to the log as it completes (flushed, so a crash loses at most the calls in flight), and
reports progress through the small :class:`Progress` protocol, so it never imports a UI.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

Record = TypeVar("Record", bound=BaseModel)


class Progress(Protocol):
    """What the runner tells a UI. The CLI implements it with a rich progress bar."""

    def start(self, total: int, already_done: int) -> None: ...

    def advance(self, record: BaseModel) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    def start(self, total: int, already_done: int) -> None:
        pass

    def advance(self, record: BaseModel) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass(frozen=True)
class Task:
    """One unit of work: ``run`` makes its model calls and returns the record to keep."""

    call_id: str
    run: Callable[[], Awaitable[BaseModel]]
    estimated_cost: float | None = None


class RecordLog(Generic[Record]):
    """An append-only JSONL file of records with a ``call_id`` and a ``status``.

    On opening, a torn last line (the process was killed mid-write) is dropped, and
    records with status ``error`` are dropped so those calls are tried again; the file
    is rewritten only when something was dropped, so no call ever has two records.
    """

    def __init__(self, path: str | Path, model: type[Record]):
        self.path = Path(path)
        self.model = model
        self.finished: dict[str, Record] = {}
        self._load()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def _load(self) -> None:
        if not self.path.exists():
            return
        kept: dict[str, Record] = {}
        rewrite = False
        with open(self.path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                try:
                    record = self.model.model_validate_json(line)
                except ValidationError:
                    rewrite = True  # a torn line, or one from an incompatible schema
                    continue
                call_id = record.call_id  # type: ignore[attr-defined]
                if record.status == "error" or call_id in kept:  # type: ignore[attr-defined]
                    rewrite = True
                    if record.status == "error":  # type: ignore[attr-defined]
                        continue
                kept[call_id] = record
        if rewrite:
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as out:
                for record in kept.values():
                    out.write(record.model_dump_json() + "\n")
                out.flush()
                os.fsync(out.fileno())
            tmp.replace(self.path)
        self.finished = kept

    def rewrite(self, records: list[Record]) -> None:
        """Replace the whole log (atomically), e.g. after re-parsing stored replies."""
        self._file.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            for record in records:
                out.write(record.model_dump_json() + "\n")
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(self.path)
        self.finished = {r.call_id: r for r in records}  # type: ignore[attr-defined]
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def append(self, record: Record) -> None:
        self._file.write(record.model_dump_json() + "\n")
        self._file.flush()  # in the OS's hands: survives the process being killed

    def close(self) -> None:
        self._file.close()


@dataclass
class RunTotals:
    total: int = 0
    already_done: int = 0
    completed: int = 0
    cached: int = 0
    unparseable: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    stopped_by_budget: bool = False
    budget: float | None = None
    errors: list[str] = field(default_factory=list)

    def add(self, record: BaseModel) -> None:
        self.completed += 1
        status = getattr(record, "status", "ok")
        self.cached += bool(getattr(record, "cached", False))
        self.unparseable += status == "unparseable"
        if status == "error":
            self.failed += 1
            if len(self.errors) < 5:
                self.errors.append(str(getattr(record, "reason", "")))
        self.prompt_tokens += getattr(record, "prompt_tokens", 0) or 0
        self.completion_tokens += getattr(record, "completion_tokens", 0) or 0
        self.cost += getattr(record, "cost", 0.0) or 0.0


async def run_tasks(
    tasks: Iterable[Task],
    log: RecordLog,
    concurrency: int = 8,
    progress: Progress | None = None,
    max_cost: float | None = None,
    spent_before: float = 0.0,
) -> RunTotals:
    """Run every task whose call_id has no finished record in ``log``."""
    progress = progress or NoProgress()
    tasks = list(tasks)
    pending = [t for t in tasks if t.call_id not in log.finished]
    totals = RunTotals(total=len(tasks), already_done=len(tasks) - len(pending),
                       budget=max_cost)
    progress.start(len(tasks), totals.already_done)
    queue = iter(pending)
    reserved = 0.0

    async def worker() -> None:
        nonlocal reserved
        for task in queue:  # one shared iterator: each task is taken once
            estimate = task.estimated_cost or 0.0
            if max_cost is not None and spent_before + totals.cost + reserved + estimate > max_cost:
                totals.stopped_by_budget = True
                return
            reserved += estimate
            try:
                record = await task.run()
            finally:
                reserved -= estimate
            log.append(record)
            totals.add(record)
            progress.advance(record)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        progress.finish()
    return totals


def read_records(path: str | Path, model: type[Record]) -> list[Record]:
    """Every parseable record of a JSONL log (a torn last line is skipped)."""
    records = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                records.append(model.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError):
                continue
    return records
