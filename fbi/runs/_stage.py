"""What every model-calling stage does around its calls, written once (issue 25).

A stage (evaluate, explain-check, perturb's LLM engine, a robustness run) refuses a
batch with a budget, checks its folder before anything else (read only, so a refusal
comes before the probe call), probes the model, locks the folder and writes its spec,
runs its calls into a log — live or through a provider's batch API — and writes the spec
again with the totals: :func:`run_stage` around :func:`execute_into`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fbi.llm import ModelClient, ModelRequest
from fbi.logs import AppendLog
from fbi.records import CallRecord, RunSpec
from fbi.runs._batch import (
    BatchOptions,
    BatchRunner,
    batches_path,
    check_batchable,
    provider_of,
)
from fbi.runs._execute import Call, Progress, RunTotals, execute
from fbi.runs._folder import RunFolder


@contextmanager
def run_stage(spec: Callable[[RunTotals | None], RunSpec], spec_path: str | Path,
              client: ModelClient, model: str, api_base: str | None,
              first_requests: Callable[[], Iterable[ModelRequest] | None],
              batch: BatchOptions | None,
              max_cost: float | None, *, lock_path: str | Path | None = None,
              own_folder: bool = True, force: bool = False, writes: tuple[str, ...] = ()
              ) -> Iterator[RunTotals]:
    """The frame of one stage's run; yields the totals its phases merge into, and writes
    them into the spec when the block ends (an interruption included: the totals say
    so). ``spec(totals)`` builds the run's spec; ``first_requests()`` gives the calls the
    probe may be answered by from the cache (None: not known yet), asked only once the
    folder passed its check."""
    check_batchable(batch, max_cost)
    if batch is not None:  # a provider whose batch API fbi does not drive: said first
        provider_of(model, api_base)
    RunFolder.check(spec(None), spec_path, own_folder=own_folder, force=force, writes=writes)
    client.preflight(model, api_base, first_requests())
    with RunFolder.open(spec(None), spec_path, lock_path, own_folder=own_folder, force=force,
                        writes=writes) as folder:
        totals = RunTotals()
        yield totals
        folder.write(spec(totals))


def execute_into(path: str | Path, record_type: type[CallRecord], calls: Iterable[Call],
                 client: ModelClient, concurrency: int = 8, progress: Progress | None = None,
                 max_cost: float | None = None, batch: BatchOptions | None = None, *,
                 keep_records: bool = True, visit: Callable[[CallRecord], None] | None = None,
                 prepare: Callable[[AppendLog], None] | None = None, total: int | None = None
                 ) -> tuple[RunTotals, dict[str, CallRecord]]:
    """The calls into the log at ``path`` (opened and closed here), live (:func:`execute`,
    the calls taken as a stream) or through the provider's batch API (``batch``); returns
    the totals and, with ``keep_records``, the log's records by call id. ``visit`` sees
    each record already in the log as it is opened; ``prepare`` may rewrite the log
    before the calls run. The caller holds the run's lock (:func:`run_stage`)."""
    log = AppendLog(path, record_type, keep_records=keep_records, visit=visit)
    try:
        if prepare is not None:
            prepare(log)
        if batch is not None:
            calls = list(calls)  # a batch file holds them all
        if batch is not None and calls:
            request = calls[0].request
            runner = BatchRunner(batches_path(path), client, request.model,
                                 request.api_base, batch)
            totals = runner.run(calls, log, progress)
        else:
            totals = execute(calls, client, log, concurrency, progress, max_cost, total=total)
    finally:
        log.close()
    return totals, log.records
