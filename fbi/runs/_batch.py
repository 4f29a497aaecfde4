"""Provider batch APIs: the calls of a run sent as batch files, at half price.

A full FBI run is tens of thousands of calls; the providers' batch services (the FBI
authors ran theirs through OpenAI's) take them as files, answer within 24 hours at about
half the price, and are not bound by per-minute rate limits. This engine does what
[`fbi.runs.execute`][fbi.runs.execute] does, through batches:

1. **collect**: every batch recorded beside the run log (a log ``NAME.jsonl`` has its
   batches in ``NAME.batches.jsonl``) and not yet collected is retrieved; a finished one
   (completed, expired, failed, cancelled) has its output read into the run log and the
   response cache exactly as live replies, and is marked collected. Requests that failed
   inside it go back to pending, and so do those whose output line is not a readable
   reply (the provider's files are input: a bad line is that request's failure, counted
   in the record's ``bad_lines``, never the end of the collection);
2. **submit**: the calls neither finished, cached nor inside an open batch are written
   as batch input files (split at the provider's limits), uploaded and submitted; each
   batch is recorded *before* anything else happens, so the command can be stopped at
   any moment and run again to poll, collect and resume. A kill between the provider
   creating a batch and fbi recording it leaves a batch fbi does not know of: every
   batch carries this log's tag in its ``metadata``, and before submitting, fbi lists
   the provider's batches and adopts those with its tag that it has not recorded (their
   requests are read back from their input file), so nothing is paid for twice;
3. with ``wait``, 1 and 2 repeat every ``poll_s`` seconds until nothing is open.

A call whose request failed in ``MAX_BATCH_TRIES`` batches is recorded as an error
(tried again by the next run), or made live with ``fallback="live"``.

The providers whose batch services it drives, and how, are `fbi.providers`'
(`BATCH_PROTOCOLS`, each giving a `fbi.providers.BatchService`).
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fbi.errors import FbiWarning, InputError, ModelError
from fbi.logs import AppendLog, append_durably, read_log
from fbi.providers import (
    BATCH_PROTOCOLS,
    BatchService,
    BatchState,
    ModelClient,
    ModelResponse,
    batch_reply,
    provider_of,
)
from fbi.redaction import public_url
from fbi.runs._execute import Call, NoProgress, Progress, RunTotals, execute, record_of
from fbi.settings import ModelSettings

#: OpenAI's limits per batch input file (Mistral's are higher; one split serves both).
MAX_REQUESTS_PER_FILE = 50_000
MAX_BYTES_PER_FILE = 200 * 1024 * 1024
FINISHED_STATES = ("completed", "expired", "failed", "cancelled")
MAX_BATCH_TRIES = 3
BATCH_RECORD_VERSION = 1


class BatchRecord(BaseModel):
    """One line of ``batches.jsonl``: a batch's state when last seen (last line wins)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = BATCH_RECORD_VERSION
    """The record format's version."""
    batch_id: str
    """The provider's id for the batch."""
    provider: str
    """The batch protocol (``openai``, ...)."""
    model: str
    """The model its requests ask for."""
    api_base: str | None = None
    """Without credentials."""
    input_file_id: str
    """The provider's id for the uploaded requests file."""
    custom_ids: list[str]
    """The call ids in this batch."""
    status: str
    """The provider's status, as last seen (``validating``, ``in_progress``, ``completed``,
    ...)."""
    output_file_id: str | None = None
    """The provider's id for the results file, once there is one."""
    error_file_id: str | None = None
    """The provider's id for the errors file, once there is one."""
    collected: bool = False
    """Its results are in the run's log."""
    failed_ids: list[str] = []
    """Requests that came back with an error."""
    bad_lines: int = 0
    """Lines of its output or error file that were no readable reply."""
    duplicated_ids: list[str] = []
    """Requests answered more than once: none trusted."""
    adopted: bool = False
    """Found at the provider by its tag, after fbi was killed."""
    created_at: float
    """When it was submitted (Unix time)."""
    updated_at: float
    """When its status was last seen (Unix time)."""


@dataclass
class BatchOptions:
    """How `--batch` runs: wait and poll for the results, and what to do with requests that
    keep failing in batches (`fallback`)."""
    wait: bool = False
    """Wait for the batches to end and collect them (--wait), instead of returning after
    submitting."""
    poll_s: float = 30.0
    """Seconds between two looks at a batch's status while waiting."""
    fallback: Literal["batch", "live"] = "batch"
    """What to do with requests that keep failing in batches: submit them in a batch again,
    or call them live (--batch-fallback)."""
    concurrency: int = 8
    """For live fallback calls."""


def batches_path(log_path: str | Path) -> Path:
    """Where the batches of the calls logged at ``log_path`` are recorded:
    ``judgments.jsonl`` → ``judgments.batches.jsonl``."""
    log_path = Path(log_path)
    return log_path.with_name(f"{log_path.stem}.batches.jsonl")


def read_batches(path: str | Path) -> dict[str, BatchRecord]:
    """batch id → its latest record, from a ``*.batches.jsonl`` file."""
    contents = read_log(Path(path), BatchRecord)
    return {record.batch_id: record for record in contents.records}


def check_batchable(batch: BatchOptions | None, settings: ModelSettings) -> None:
    """Refuse what batch mode cannot keep: a budget (a batch's cost is known only when it
    returns) and a pool of servers (a batch goes to one provider)."""
    if batch is None:
        return
    if settings.max_cost is not None:
        raise InputError("--max-cost cannot be kept in batch mode: a batch's cost is known "
                         "only when it returns. Fix: price the run with --dry-run and leave "
                         "out --max-cost, or run without --batch")
    if settings.api_pool:
        raise InputError("--batch sends the calls to one provider's batch service: give "
                         "one --api-base, or leave out --batch to spread live calls over "
                         "the servers")


class BatchRunner:
    """Runs ``calls`` through the provider's batch API into ``log`` (see module doc)."""

    def __init__(self, path: Path, client: ModelClient, model: str, api_base: str | None,
                 options: BatchOptions, sleep: Callable[[float], None] = time.sleep):
        self.path = Path(path)  # the batches log (see batches_path)
        self.client = client
        self.model, self.api_base = model, api_base
        self.provider, self.model_name = provider_of(model, api_base)
        self.protocol = BATCH_PROTOCOLS[self.provider]
        self.service: BatchService = self.protocol.service(
            self.provider, model, self.model_name, api_base,
            client.api_key_for(model, api_base), client.timeout_s)
        self.service.tag = self.tag
        self.options = options
        self._sleep = sleep
        # failures per call in this invocation: a new run retries them afresh
        self.failures: dict[str, int] = {}
        self.given_up: set[str] = set()

    # -- the provider's batch service ------------------------------------------------

    def retrieve(self, batch_id: str) -> BatchState:
        """The batch's state at the provider now."""
        return self.service.retrieve(batch_id)

    def cancel(self, batch_id: str) -> BatchState:
        """Cancel the batch; its state after."""
        self.service.cancel(batch_id)
        return self.service.retrieve(batch_id)

    def _content(self, file_id: str) -> tuple[list[dict], int]:
        """The JSON objects of a provider's JSONL file, and how many of its lines were
        not one (those are counted, never a traceback)."""
        rows, bad = [], 0
        for line in self.service.content(file_id).split(b"\n"):
            if not line.strip():
                continue
            try:  # (NaN and Infinity, which no count can be, make a line bad too)
                row = json.loads(line, parse_constant=_refuse_constant)
            except ValueError:  # not JSON, not UTF-8, or a non-finite number
                row = None
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
        return rows, bad

    @property
    def tag(self) -> str:
        """What marks this log's batches at the provider (``metadata["fbi_run"]``)."""
        return hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:32]

    # -- one pass --------------------------------------------------------------------

    def run(self, calls: list[Call], log: AppendLog, progress: Progress | None = None
            ) -> RunTotals:
        progress = progress or NoProgress()
        by_id = {call.call_id: call for call in calls}
        self.service.index(by_id)  # (a provider whose ids are not the call ids maps them)
        totals = RunTotals(total=len(calls),
                           already_done=sum(1 for c in calls if c.call_id in log.finished))
        progress.start(len(calls), totals.already_done)
        try:
            while True:
                self._collect(by_id, log, totals, progress)
                submitted = self._submit(by_id, log, totals, progress)
                open_batches = [b for b in read_batches(self.path).values()
                                if not b.collected]
                totals.in_batches = sum(len(b.custom_ids) for b in open_batches)
                if not open_batches or not self.options.wait:
                    break
                if not submitted:
                    self._sleep(self.options.poll_s)
        finally:
            progress.finish()
        return totals

    def _record(self, batch: BatchRecord, **changes) -> BatchRecord:
        updated = batch.model_copy(update={**changes, "updated_at": time.time()})
        append_durably(self.path, updated)
        return updated

    def _collect(self, by_id: dict[str, Call], log: AppendLog, totals: RunTotals,
                 progress: Progress) -> None:
        """Read every finished batch into the log and the cache."""
        for batch in read_batches(self.path).values():
            if batch.collected:
                continue
            state = self.retrieve(batch.batch_id)
            if state.status not in FINISHED_STATES:
                if state.status != batch.status:
                    self._record(batch, status=state.status)
                continue
            answered: set[str] = set()
            bad_lines = 0
            files = [self._content(file_id) if file_id else ([], 0)
                     for file_id in (state.output_file_id, state.error_file_id)]
            # a request answered twice (a forged line placed before the real one): neither
            # line is trusted; the request goes back to pending and is asked again
            seen = Counter(str(line.get("custom_id", "")) for rows, _ in files
                           for line in rows)
            doubled = {custom_id for custom_id, times in seen.items() if times > 1}
            for rows, bad in files:
                bad_lines += bad
                for line in rows:
                    if str(line.get("custom_id", "")) in doubled:
                        continue
                    call = by_id.get(str(line.get("custom_id", "")))
                    response = batch_reply(line, self.model, not self.protocol.deployment)
                    if call is None or call.call_id in log.finished or \
                            call.call_id not in batch.custom_ids:
                        continue
                    if response is None:
                        bad_lines += _is_malformed(line)
                        continue
                    answered.add(call.call_id)
                    self._save(call, response, log, totals, progress)
            failed = [i for i in batch.custom_ids if i not in answered]
            for call_id in failed:
                self.failures[call_id] = self.failures.get(call_id, 0) + 1
            if bad_lines:
                warnings.warn(
                    f"batch {batch.batch_id}: {bad_lines} line(s) of the provider's output "
                    "were not readable replies; their requests go back to pending and are "
                    "submitted again", FbiWarning, stacklevel=2)
            if doubled:
                warnings.warn(
                    f"batch {batch.batch_id}: {len(doubled)} request(s) came back more than "
                    f"once (custom_id {sorted(doubled)[0]!r} first); no line of them is "
                    "trusted or cached, and they are submitted again", FbiWarning,
                    stacklevel=2)
            self._record(batch, status=state.status, collected=True, failed_ids=failed,
                         output_file_id=state.output_file_id,
                         error_file_id=state.error_file_id,
                         bad_lines=bad_lines + sum(seen[c] for c in doubled),
                         duplicated_ids=sorted(doubled))

    def _save(self, call: Call, response: ModelResponse, log: AppendLog, totals: RunTotals,
              progress: Progress) -> None:
        """A reply, as a live one would be kept: the record, and the cache entry."""
        if self.client.cache is not None and not response.cached:
            self.client.cache.put(call.request.cache_key(), call.request.model,
                                  response.to_cache())
        record = record_of(call, [response])
        log.append(record)
        totals.add(record)
        progress.advance(record)

    def _submit(self, by_id: dict[str, Call], log: AppendLog, totals: RunTotals,
                progress: Progress) -> bool:
        """Submit what is neither finished, cached nor in an open batch; True when a
        batch was submitted. A call that failed in MAX_BATCH_TRIES batches this time is
        made live (``fallback="live"``) or recorded as an error, for the next run."""
        known = read_batches(self.path)
        if any(c.call_id not in log.finished for c in by_id.values()):
            known.update(self._adopt_orphans(known))
        in_open = {i for b in known.values() if not b.collected for i in b.custom_ids}
        pending, live = [], []
        for call in by_id.values():
            if call.call_id in log.finished or call.call_id in in_open or \
                    call.call_id in self.given_up:
                continue
            hit = self.client.cached(call.request)
            if hit is not None:
                self._save(call, hit, log, totals, progress)
            elif self.failures.get(call.call_id, 0) < MAX_BATCH_TRIES:
                pending.append(call)
            elif self.options.fallback == "live":
                live.append(call)
            else:
                self.given_up.add(call.call_id)
                record = record_of(call, [], ModelError(
                    f"{self.model}: the request failed in {MAX_BATCH_TRIES} batches"))
                log.append(record)
                totals.add(record)
                progress.advance(record)
        if live:
            self.given_up.update(c.call_id for c in live)
            phase = execute(live, self.client, log, self.options.concurrency)
            phase.total = phase.already_done = 0  # counted in this run's totals already
            totals.merge(phase)
        for chunk in self._chunks(pending):
            self._submit_chunk(chunk)
        totals.requests += len(pending)  # each a request to the model, through a batch
        totals.submitted += len(pending)
        return bool(pending)

    def _adopt_orphans(self, known: dict[str, BatchRecord]) -> dict[str, BatchRecord]:
        """Batches at the provider with this log's tag that fbi never recorded (it was
        killed between creating and recording them): recorded now, their requests read
        back from the provider, so they are collected rather than paid for again."""
        adopted: dict[str, BatchRecord] = {}
        for orphan in self.service.orphans(self.tag, known,
                                           lambda file_id: self._content(file_id)[0]):
            stamp = time.time()
            adopted[orphan.batch_id] = BatchRecord(
                batch_id=orphan.batch_id, provider=self.provider, model=self.model,
                api_base=public_url(self.api_base), input_file_id=orphan.input_file_id,
                custom_ids=orphan.custom_ids, status=orphan.status, adopted=True,
                created_at=stamp, updated_at=stamp)
            append_durably(self.path, adopted[orphan.batch_id])
        return adopted

    def _chunks(self, calls: list[Call]) -> list[list[tuple[Call, bytes]]]:
        chunks: list[list[tuple[Call, bytes]]] = []
        size = 0
        for call in calls:
            line = (json.dumps(self.service.line(
                call.call_id, self.client.batch_body(call.request, self.model_name)),
                ensure_ascii=True) + "\n").encode()
            if not chunks or len(chunks[-1]) >= MAX_REQUESTS_PER_FILE or \
                    size + len(line) > MAX_BYTES_PER_FILE:
                chunks.append([])
                size = 0
            chunks[-1].append((call, line))
            size += len(line)
        return chunks

    def _submit_chunk(self, chunk: list[tuple[Call, bytes]]) -> None:
        self.client.check_deferred()
        data = b"".join(line for _, line in chunk)
        batch_id, input_file_id, status = self.service.submit(
            [json.loads(line) for _, line in chunk], data,
            {"fbi_log": str(self.path)[-64:], "fbi_run": self.tag})
        stamp = time.time()
        append_durably(self.path, BatchRecord(
            batch_id=batch_id, provider=self.provider, model=self.model,
            api_base=public_url(self.api_base), input_file_id=input_file_id,
            custom_ids=[call.call_id for call, _ in chunk], status=status,
            created_at=stamp, updated_at=stamp))


def _refuse_constant(name: str) -> None:
    raise ValueError(f"the number {name}")


def _is_malformed(line: dict) -> bool:
    """A line that is neither a reply nor a reported failure (which has an ``error``, or
    a response with a status other than 200)."""
    response = line.get("response")
    if line.get("error"):
        return False
    return not (isinstance(response, dict) and response.get("status_code") not in (200, None))
