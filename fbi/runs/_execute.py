"""Where a model reply becomes a record, and how a stage's calls are run.

A stage plans [`Call`][fbi.runs.Call] objects: an id, the request, the record type with the
fields known before calling, and a ``parse`` function that reads what the replies say.
[`record_of`][fbi.runs.record_of] is the one place a reply (or an error) becomes a record:
the prompt hash, the raw reply and any follow-up replies, the parsed fields, the status, the
usage. [`execute`][fbi.runs.execute] runs the calls not yet finished in a log, concurrently,
within a budget, appending each record as it completes and reporting progress through the
small [`Progress`][fbi.runs.Progress] protocol (so it never imports a UI).

Interruption: on the first Ctrl-C (or SIGTERM, which a scheduler or ``timeout`` sends) no
new call starts, calls in flight get a few seconds to finish (the embedded judge stops
generating at once), everything finished is already on disk, and
[`execute`][fbi.runs.execute] returns with ``interrupted`` set and the signal in
``interrupted_by``; a second signal exits at once. The caller writes its totals and exits
128 + the signal (130, 143).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from fbi.errors import MissingKey, ModelError, ModelUnavailable
from fbi.escaping import writable
from fbi.estimates import count_tokens, estimate_cost
from fbi.logs import AppendLog, read_log
from fbi.providers import (
    ModelClient,
    ModelRequest,
    ModelResponse,
    abort_calls,
    allow_calls,
    check_model,
)
from fbi.records import CallRecord
from fbi.run_spec import RunTotals

#: Seconds the calls in flight get to finish after the first Ctrl-C.
GRACE_S = 3.0


@dataclass(frozen=True)
class Parsed:
    """What a stage read from a call's replies."""

    status: Literal["ok", "unparseable"]
    """``ok``, or ``unparseable`` when the reply could not be read."""
    fields: dict[str, Any] = field(default_factory=dict)
    """The record's fields read from the reply (score, verdict, explanation, ...)."""
    reason: str | None = None
    """Why the reply could not be read."""
    reply: str | None = None
    """The first reply's text outside any thinking, when the parser split it otherwise
    than the transport did (a judge knows the answers a forged marker hides in)."""
    reasoning: str | None = None
    """The thinking that goes with ``reply``."""


@dataclass(frozen=True)
class Call:
    """One planned model call and how to turn its replies into a record.

    ``planned`` is the request, or a function that renders it:
    [`request`][fbi.runs.Call.request] renders it when first asked for, so a resumed run
    never renders the prompts of the calls it skips. ``parse`` receives every reply of the
    call (the first, then follow-ups); ``repair``, when given, builds a follow-up request
    from the request and its first reply, asked up to ``repairs`` times while the parse
    stays unparseable.
    """

    call_id: str
    """Unique within its log; the record takes it (a resumed run skips ids already
    there)."""
    planned: ModelRequest | Callable[[], ModelRequest]
    """The request, or a function that renders it (see above)."""
    record_type: type[CallRecord]
    """The record class its reply becomes (`Judgment`, `QAAnswer`, ...)."""
    fields: dict[str, Any]
    """The record's fields that come from the plan, not the reply (instance, strategy, role,
    ...)."""
    parse: Callable[[list[ModelResponse]], Parsed]
    """Reads the call's replies (the first, then any repairs) into the record's fields."""
    repair: Callable[[ModelRequest, str], ModelRequest] | None = None
    """Makes a follow-up request from the request and an unreadable reply (None: no
    repair)."""
    repairs: int = 0
    """How many follow-ups to ask for at most."""
    expected_reply_tokens: int | None = None
    """For --dry-run estimates."""

    @functools.cached_property
    def request(self) -> ModelRequest:
        """The call's request, rendered on first use."""
        planned = self.planned
        return planned if isinstance(planned, ModelRequest) else planned()


def record_of(call: Call, responses: list[ModelResponse],
              error: Exception | None = None) -> CallRecord:
    """The record of ``call``: its replies read by ``call.parse``, or the error."""
    base = {"call_id": call.call_id, "prompt_hash": call.request.prompt_hash(), **call.fields}
    if not responses:
        return call.record_type(**base, status="error", reason=str(error or "no reply"))
    parsed = call.parse(responses)
    costs = [r.cost for r in responses]
    return call.record_type(
        **base, **writable(parsed.fields),  # (a JSON reply may decode to lone surrogates)
        raw_output=responses[0].text if parsed.reply is None else parsed.reply,
        repair_outputs=[r.text for r in responses[1:]], status=parsed.status,
        reason=parsed.reason, prompt_tokens=sum(r.prompt_tokens for r in responses),
        completion_tokens=sum(r.completion_tokens for r in responses),
        cost=None if all(c is None for c in costs) else sum(c or 0.0 for c in costs),
        latency_s=sum(r.latency_s for r in responses),
        cached=all(r.cached for r in responses),
        reasoning=responses[0].reasoning if parsed.reply is None else parsed.reasoning,
        reasoning_tokens=sum(r.reasoning_tokens for r in responses),
        reasoning_cost=None if any(r.reasoning_cost is None for r in responses)
        else sum(r.reasoning_cost or 0.0 for r in responses))


async def perform(call: Call, client: ModelClient) -> CallRecord:
    """Make ``call`` (and its follow-ups, if its reply is unreadable) and record it."""
    try:
        responses = [await client.complete(call.request)]
    except ModelUnavailable:
        raise  # stops the run (see execute); this call is made again on the next run
    except ModelError as error:
        return record_of(call, [], error)
    if call.repair is not None:
        for _ in range(call.repairs):
            if call.parse(responses).status == "ok":
                break
            try:
                responses.append(await client.complete(call.repair(call.request,
                                                                     responses[0].text)))
            except ModelError:
                break  # the first reply stands
    return record_of(call, responses)


class Progress(Protocol):
    """What the harness tells a UI. The CLI draws it as a rich progress bar."""

    def start(self, total: int, already_done: int) -> None: ...

    def advance(self, record: CallRecord) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """A progress display that shows nothing: for library callers and tests."""
    def start(self, total: int, already_done: int) -> None:
        pass

    def advance(self, record: CallRecord) -> None:
        pass

    def finish(self) -> None:
        pass


def estimated_cost(request: ModelRequest) -> float | None:
    """What a call can cost at most: its prompt and the longest reply it allows."""
    prompt_tokens = count_tokens(request.model, request.message_dicts())
    return estimate_cost(request.model, prompt_tokens, request.max_tokens or 0)


def execute(calls: Iterable[Call], client: ModelClient, log: AppendLog,
            concurrency: int = 8, progress: Progress | None = None,
            max_cost: float | None = None, total: int | None = None) -> RunTotals:
    """Run every call without a finished record in ``log``; see the module docstring.

    ``calls`` may be a generator that renders each call as it is taken, with ``total``
    their number: then no list of calls is ever held, and the progress bar starts from
    the log's finished calls (a run folder's log holds only its own plan's calls)."""
    finished = log.finished
    if total is None:
        calls = list(calls)
        total = len(calls)
        done_before = sum(1 for c in calls if c.call_id in finished)
    else:
        done_before = min(len(finished), total)
    totals = RunTotals(total=total, already_done=done_before, budget=max_cost)
    skipped = 0

    def pending() -> Iterator[Call]:
        nonlocal skipped
        for call in calls:
            if call.call_id in finished:
                skipped += 1
            else:
                yield call

    progress = progress or NoProgress()
    requests_before = client.calls_made
    allow_calls()
    progress.start(total, done_before)
    try:
        queue = pending()
        with heap_frozen():
            totals.interrupted_by = _run_interruptibly(lambda stop: _run(
                queue, client, log, totals, progress, stop, concurrency, max_cost, log.spent))
        totals.interrupted = bool(totals.interrupted_by)
        if next(queue, None) is None:  # every call was taken: the count is exact
            totals.already_done = skipped
    finally:
        progress.finish()
        totals.requests = client.calls_made - requests_before
    return totals


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """Everything alive when the calls start (the imported libraries, the dataset) kept
    out of the garbage collector's full collections until they end.

    A run allocates enough that Python makes dozens of full collections, and each walked
    that whole start-up heap: at concurrency 256 they took 2.7 s of a 15 s run, and 1.5 s
    with the heap frozen (benchmarks/RESULTS.md, the run harness). Garbage already there
    is collected first; if the caller froze the heap itself, it is left as it is."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _run(queue: Iterator[Call], client: ModelClient, log: AppendLog,
               totals: RunTotals, progress: Progress, stop: asyncio.Event, concurrency: int,
               max_cost: float | None, spent_before: float) -> None:
    reserved = 0.0

    async def worker() -> None:
        nonlocal reserved
        for call in queue:  # one shared iterator: each call is taken once
            if stop.is_set():
                return
            estimate = 0.0
            if max_cost is not None:
                estimate = estimated_cost(call.request) or 0.0
                if spent_before + totals.cost + reserved + estimate > max_cost:
                    totals.stopped_by_budget = True
                    return
            reserved += estimate
            try:
                record = await perform(call, client)
            except ModelUnavailable as error:
                totals.stopped_by = totals.stopped_by or str(error)
                stop.set()  # the circuit breaker: no new call starts
                return
            finally:
                reserved -= estimate
            if stop.is_set() and record.status == "error":
                return  # cut short by the interruption, not failed: made again on resume
            log.append(record)
            totals.add(record)
            progress.advance(record)

    workers = asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({workers, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not workers.done():  # interrupted: give the calls in flight a moment
        try:
            await asyncio.wait_for(asyncio.shield(workers), GRACE_S)
        except asyncio.TimeoutError:
            workers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await workers
    stopped.cancel()
    with contextlib.suppress(Exception):  # the transports' connections, on this loop
        await asyncio.wait_for(client.aclose(), GRACE_S)
    if not workers.cancelled():
        workers.result()  # a bug in a stage surfaces here, not silently


def _run_interruptibly(make) -> int:
    """Run ``make(stop_event)`` on a fresh event loop; returns the signal that stopped it
    (SIGINT or SIGTERM), or 0."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    interrupted = 0

    def on_interrupt(signum: int) -> None:
        nonlocal interrupted
        if interrupted:  # the second signal: finished records are flushed already
            os._exit(128 + signum)
        interrupted = signum
        loop.call_soon_threadsafe(stop.set)
        abort_calls()

    handled = ()
    if threading.current_thread() is threading.main_thread():
        handled = tuple((signum, signal.getsignal(signum))
                        for signum in (signal.SIGINT, signal.SIGTERM))
        for signum, _ in handled:
            loop.add_signal_handler(signum, on_interrupt, signum)
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(make(stop))
    finally:
        for signum, previous in handled:  # as they were (the CLI's SIGTERM handler)
            loop.remove_signal_handler(signum)
            signal.signal(signum, previous)
        # Like asyncio.run: cancel what is left (litellm's logging worker, calls
        # abandoned after the grace period) and let it unwind, then close.
        leftovers = asyncio.all_tasks(loop)
        for task in leftovers:
            task.cancel()
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        asyncio.set_event_loop(None)
        loop.close()  # never waits for threads still busy: they were told to stop
    return interrupted


@dataclass
class DryRun:
    """What a dry run found: calls planned, already done, answered by the cache, still to
    make, and the tokens and cost of those still to make."""

    calls: int = 0
    """Calls the run plans."""
    done: int = 0
    """Of those, already in the run's log."""
    cached: int = 0
    """Of the rest, answered by the response cache."""
    to_call: int = 0
    """Calls still to make."""
    prompt_tokens: int = 0
    """Their prompt tokens (estimated from a sample when ``sampled`` is not 0)."""
    completion_tokens: int = 0
    """Their reply tokens, from each strategy's expected reply length."""
    cost_usd: float | None = None
    """What they would cost, from the price list; None when the model's price is unknown."""
    sampled: int = 0
    """Calls rendered to estimate the rest; 0 when every call was (the figures are
    exact)."""
    prompt_tokens_margin: int = 0
    """Half-width of the 95% interval of ``prompt_tokens`` when estimated from a sample."""
    missing: str | None = None
    """What the real run will need that is missing now (an API key), else None."""

    #: The counts that add up (and scale up from a sample).
    COUNTS = ("calls", "done", "cached", "to_call", "prompt_tokens", "completion_tokens")

    def add(self, other: DryRun) -> None:
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def finished_ids(path, record_type: type[CallRecord]) -> list[str]:
    """Call ids of a log that need no new try (read only: for --dry-run)."""
    return [call_id for call_id, (status, _) in
            read_log(path, record_type, keep=False).outcomes.items() if status != "error"]


def dry_run(calls: Iterable[Call], client: ModelClient, finished: Iterable[str]) -> DryRun:
    """Calls still to make, their tokens and cost; calls nothing and writes nothing.
    ``calls`` may be a generator: each is rendered, priced and dropped in turn."""
    finished = set(finished)
    estimate, model = DryRun(), ""
    for call in calls:
        if not estimate.calls:
            model = _check_access(call, client, estimate)
        estimate.add(price_call(call, client, finished))
    return _priced(estimate, model)


def price_call(call: Call, client: ModelClient, finished: set[str]) -> DryRun:
    """One call's share of a dry run (its tokens counted only if it is still to make)."""
    if call.call_id in finished:
        return DryRun(calls=1, done=1)
    if client.cached(call.request) is not None:
        return DryRun(calls=1, cached=1)
    return DryRun(calls=1, to_call=1,
                  prompt_tokens=count_tokens(call.request.model, call.request.message_dicts()),
                  completion_tokens=min(call.request.max_tokens or 1024,
                                        call.expected_reply_tokens or 250))


def sampled_dry_run(strata: Iterable[tuple[int, Iterable[list[Call]]]],
                    client: ModelClient, finished: Iterable[str]) -> DryRun:
    """A dry run estimated from samples, for work too large to render every prompt.

    ``strata`` gives, per stratum (fbi: a strategy), its number of units (instances) and the
    calls of each unit of a simple random sample of them; each sampled call is rendered and
    priced as [`dry_run`][fbi.runs.dry_run] does, and
    [`estimate_from_sample`][fbi.runs.estimate_from_sample] scales the sample up."""
    finished = set(finished)
    sampled, model, priced_strata, access = 0, "", [], DryRun()
    for size, units in strata:
        priced = []
        for unit_calls in units:
            unit = DryRun()
            for call in unit_calls:
                if not sampled:
                    model = _check_access(call, client, access)
                sampled += 1
                unit.add(price_call(call, client, finished))
            priced.append(unit)
        priced_strata.append((size, priced))
    estimate = estimate_from_sample(priced_strata)
    estimate.sampled, estimate.missing = sampled, access.missing
    return _priced(estimate, model)


def estimate_from_sample(strata: Iterable[tuple[int, list[DryRun]]]) -> DryRun:
    """Population totals from a simple random sample of units in each stratum: each
    count is the sample's sum × N/n, stratum by stratum. ``prompt_tokens_margin`` is the
    95% half-width of the stratified estimator of the total, with the finite-population
    correction (Cochran, *Sampling Techniques*, 3rd ed., §5.3):
    1.96·√(Σ N²(1 − n/N)·s²/n), s² the sample variance of the units' prompt tokens.
    A stratum whose units all plan the same number of calls keeps ``calls`` exact."""
    estimate, variance = DryRun(), 0.0
    for size, units in strata:
        n = len(units)
        if not n:
            continue
        for name in DryRun.COUNTS:
            value = round(sum(getattr(unit, name) for unit in units) * size / n)
            setattr(estimate, name, getattr(estimate, name) + value)
        if 1 < n < size:
            tokens = [unit.prompt_tokens for unit in units]
            mean = sum(tokens) / n
            spread = sum((t - mean) ** 2 for t in tokens) / (n - 1)
            variance += size ** 2 * (1 - n / size) * spread / n
    estimate.prompt_tokens_margin = round(1.96 * variance ** 0.5)
    return estimate


def _check_access(call: Call, client: ModelClient, estimate: DryRun) -> str:
    """What can be checked without a call: the provider is known (else ConfigError) and
    its key is set (else ``estimate.missing`` says so: a dry run needs no key). Returns
    the model."""
    try:
        check_model(call.request.model, call.request.api_base, client.api_key,
                    fetch_weights=False)
    except MissingKey as error:
        estimate.missing = str(error)
    return call.request.model


def _priced(estimate: DryRun, model: str) -> DryRun:
    if estimate.to_call:
        estimate.cost_usd = estimate_cost(model, estimate.prompt_tokens,
                                          estimate.completion_tokens)
    return estimate
