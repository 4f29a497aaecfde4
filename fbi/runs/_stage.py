"""The stage protocol: what a model-calling stage is to the run harness, and running one.

Every stage that calls a model (evaluate, explain-check, perturb, a robustness run, a
hunt) is a [`Stage`][fbi.runs.Stage]: its ``kind`` (which registers it:
[`stage_kinds`][fbi.runs.stage_kinds]), its
[`ModelSettings`][fbi.settings.ModelSettings], where its state lives
([`StageFolder`][fbi.runs.StageFolder]), what its run is
([`RunIdentity`][fbi.run_spec.RunIdentity]; the harness adds the header every spec shares),
and its calls grouped in
[`Phase`][fbi.runs.Phase] logs, each call a [`Call`][fbi.runs.Call] that says how its reply
becomes a record. [`run_stage`][fbi.runs.run_stage] does the rest, the same for all: refuses
what cannot be kept (a budget with batches, a pool with batches), checks the folder before
anything (read only, so a refusal comes before the probe call), probes the model, locks the
folder, writes the spec, runs each phase into its log — live or through a provider's batch
API — and writes the spec again with the totals. [`price_stage`][fbi.runs.price_stage] is
the same walk for ``--dry-run``: it calls and writes nothing.

A new stage subclasses [`Stage`][fbi.runs.Stage] (docs/contributing.md has a whole example).

**The one registry of stages.** A subclass that names a ``kind`` registers itself in
`STAGES` (a [`Registry`][fbi.registry.Registry]); [`stage_kinds`][fbi.runs.stage_kinds] is
what every list of run kinds reads (the viewer's, the run-folders reference, the tests).
fbi's own stages live in stage packages above the harness, named by the ``fbi.stages``
entry points of fbi's pyproject.toml, imported when the registry is first read; a package
installed beside fbi adds its stages the same way. Nothing here imports a stage package
at import time: the harness stays below the stages.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from fbi.logs import AppendLog, LogState, read_log
from fbi.providers import ModelClient, ModelRequest, litellm_version, provider_of
from fbi.records import CallRecord
from fbi.registry import Registry
from fbi.run_spec import RUN_SCHEMA_VERSION, RunIdentity, RunSpec, RunTotals
from fbi.runs._batch import (
    BatchOptions,
    BatchRunner,
    batches_path,
    check_batchable,
)
from fbi.runs._execute import (
    Call,
    DryRun,
    Progress,
    dry_run,
    execute,
    finished_ids,
)
from fbi.runs._folder import RunFolder, now
from fbi.settings import ModelSettings


@dataclass
class Phase:
    """One log of a stage's calls, run as one: live, or through a provider's batches."""

    log: Path
    """The append-only log the calls' records go into."""
    record_type: type[CallRecord]
    """What a line of it is."""
    calls: Iterable[Call]
    """The calls, planned; a generator is taken one call at a time (then give ``total``)."""
    total: int | None = None
    """How many calls ``calls`` yields, when it is a generator."""
    shown: bool = True
    """Drawn on the progress bar."""
    keep_records: bool = True
    """Hold the log's records in [`records`][fbi.runs.Phase.records] afterwards (a judge
    run's do not: 50,000 replies)."""
    visit: Callable[[CallRecord], None] | None = None
    """Sees each record already in the log as it is opened."""
    collect: Callable[[CallRecord], None] | None = None
    """Sees each record the phase appends (with ``visit``, every record of the log)."""
    known: LogState | None = None
    """What an earlier phase of the same log left (its ``state``): only what lies past it
    is read when the log is opened (a hunt's rounds append to one log)."""
    prepare: Callable[[AppendLog], None] | None = None
    """May rewrite the log before the calls run (a newer parser's reading)."""
    records: dict[str, CallRecord] = field(default_factory=dict)
    """After the phase: the log's records by call id (with ``keep_records``)."""
    totals: RunTotals | None = None
    """After the phase: what it did."""
    state: LogState | None = None
    """After the phase: its log's state, for the next phase of the same log."""


@dataclass(frozen=True)
class StageFolder:
    """Where a stage keeps its state."""

    spec_path: Path
    """The run spec (``run.json``, ``QUEUE.run.json``, ...)."""
    lock_path: Path | None = None
    """The one-writer lock; default ``.fbi.lock`` beside the spec."""
    own_folder: bool = True
    """The spec's folder is the run's (not a user's folder it sits in, as a queue's)."""
    force: bool = False
    """Write beside files fbi did not write (never over them)."""
    writes: tuple[str, ...] | None = None
    """The other files the run writes in its folder; None: the stage's ``outputs``."""


class Stage(ABC):
    """A model-calling stage (see the module docstring). A subclass that names a ``kind``
    registers itself ([`stage_kinds`][fbi.runs.stage_kinds]); every list of run kinds —
    the viewer's, the docs', the tests' — reads that registry."""

    kind: ClassVar[str]
    """The run kind its spec carries (``run.json``'s ``kind``), unique among stages."""
    title: ClassVar[str] = ""
    """What a run of it does, in one line (the docs' and the viewer's)."""
    spec_file: ClassVar[str] = "run.json"
    """Its spec's name in the folder (``QUEUE`` stands for a queue's name)."""
    outputs: ClassVar[tuple[str, ...]] = ()
    """The files it writes beside its spec (what the folder guard lets it write)."""
    listed: ClassVar[bool] = True
    """`fbi view` lists its runs (an explanation check lives inside a judge run: not)."""
    judge_run: ClassVar[bool] = False
    """Its folder is a judge run: instances and judgments the viewer's grid and
    `fbi report` read."""
    reported: ClassVar[bool] = False
    """`fbi report` reads its folder."""

    settings: ModelSettings
    folder: StageFolder

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:  # (a subclass of a stage is the same kind unless it says)
            register_stage(cls)

    @abstractmethod
    def identity(self) -> RunIdentity:
        """What the run is: model, prompts, dataset, parameters, settings. The harness
        adds the header ([`spec`][fbi.runs.Stage.spec])."""

    def spec(self, totals: RunTotals | None = None) -> RunSpec:
        """The spec the harness writes: the stage's ``identity()`` under the header every
        stage shares — its kind, fbi's and litellm's versions, the command line, the time
        and (with ``totals``) what this invocation did."""
        from fbi import __version__

        stamp = now()
        return RunSpec(schema_version=RUN_SCHEMA_VERSION, kind=self.kind,
                       fbi_version=__version__, litellm_version=litellm_version(),
                       command=list(sys.argv),
                       created_at=stamp, updated_at=stamp,
                       totals=RunTotals() if totals is None else totals,
                       **dict(self.identity()))

    @abstractmethod
    def phases(self) -> Iterator[Phase]:
        """The phases, in order. A generator may plan a phase from what the previous one
        recorded (its ``records``, filled in by the harness before the next is asked
        for); the harness asks for no further phase once a run stops (Ctrl-C, budget,
        model unavailable) or leaves calls in provider batches."""

    def calls_model(self) -> bool:
        """Whether this run calls a model at all; one that does not (a rules-only perturb
        run) is checked, locked and written like any other, with no client. Default:
        yes."""
        return True

    def probe_requests(self) -> Iterable[ModelRequest] | None:
        """The run's first requests, to skip the probe when the cache answers them all;
        None (the default): not known yet, probe anyway."""
        return None

    def finish(self, totals: RunTotals) -> None:  # noqa: B027 (most stages need none)
        """After the phases, inside the lock (robustness: its metrics). Default: nothing."""

    def dry_run(self, client: ModelClient) -> DryRun:
        """Calls still to make, their tokens and cost; writes nothing
        ([`price_stage`][fbi.runs.price_stage])."""
        return price_stage(self, client)

    def run(self, client: ModelClient | None, progress: Progress | None = None,
            batch: BatchOptions | None = None) -> RunTotals:
        """Run (or resume) the stage ([`run_stage`][fbi.runs.run_stage]); returns what this
        invocation did. ``client`` may be None only for a run that calls no model."""
        return run_stage(self, client, progress, batch)


# ----------------------------------------------------------- the registry of stages

#: Every stage by its kind (`fbi.registry`): fbi's own are the ``fbi.stages`` entry points
#: of its pyproject.toml (each a module whose stages register as it loads), a plug-in
#: package adds its own the same way.
STAGES: Registry[type[Stage]] = Registry("run kind", "fbi.stages")


def register_stage(stage: type[Stage]) -> None:
    """Add ``stage`` under its ``kind`` (done by ``Stage.__init_subclass__``). The same
    class loaded again (a module re-imported) replaces itself; another class under a kind
    already taken is refused."""
    STAGES.add(stage.kind, stage)


def stage_kinds() -> dict[str, type[Stage]]:
    """Every registered stage by kind, fbi's own first, each group by kind (the same
    whatever order they were imported in, installed or from a checkout)."""
    return dict(sorted(STAGES.items(), key=lambda item: (
        not item[1].__module__.startswith("fbi."), item[0])))


def stage_kind(kind: str) -> type[Stage]:
    """The stage registered as ``kind``; an unknown one is an
    [`UnknownName`][fbi.errors.UnknownName] naming the closest kinds."""
    return STAGES.get(kind)


# ------------------------------------------------------------------- running a stage

def run_stage(stage: Stage, client: ModelClient | None, progress: Progress | None = None,
              batch: BatchOptions | None = None) -> RunTotals:
    """Run (or resume) ``stage``; returns what this invocation did. A budget stop, an
    interruption, a model that became unavailable and calls left in batches are in the
    totals, with everything finished saved."""
    settings, folder = stage.settings, stage.folder
    calls_model = stage.calls_model()
    if calls_model:
        check_batchable(batch, settings)
    if batch is not None and calls_model:  # a provider whose batch API fbi does not
        provider_of(settings.model, settings.api_base)  # drive: said first
    check_folder(stage)
    if calls_model:
        if client is None:
            raise ValueError(f"a {stage.kind} run that calls a model needs a model client")
        client.preflight(settings.model, settings.api_base, stage.probe_requests())
    with RunFolder.open(stage.spec(None), folder.spec_path, folder.lock_path,
                        own_folder=folder.own_folder, force=folder.force,
                        writes=writes_of(stage)) as run_folder:
        totals = RunTotals(budget=settings.max_cost)
        spent: dict[Path, float] = {}  # each log's USD so far: --max-cost is the stage's
        for phase in stage.phases():
            elsewhere = sum(cost for log, cost in spent.items() if log != phase.log)
            phase.totals, phase.records, spent[phase.log], phase.state = execute_phase(
                phase, client, settings, progress if phase.shown else None, batch,
                spent_elsewhere=elsewhere)
            totals.merge(phase.totals)
            if stopped(totals):
                break
        stage.finish(totals)
        run_folder.write(stage.spec(totals))  # (not after a failure: the disk may be full)
    return totals


def check_folder(stage: Stage) -> None:
    """Refuse a folder fbi did not write, or whose spec is unreadable or has another
    identity than the stage's; reads only (a dry run, or before the probe call)."""
    folder = stage.folder
    RunFolder.check(stage.spec(None), folder.spec_path, own_folder=folder.own_folder,
                    force=folder.force, writes=writes_of(stage))


def writes_of(stage: Stage) -> tuple[str, ...]:
    """The files besides its spec a stage may write in its folder."""
    writes = stage.folder.writes
    return stage.outputs if writes is None else writes


def stopped(totals: RunTotals) -> bool:
    """Whether no further phase may start: interrupted, over budget, the model gone, or
    calls still at the provider."""
    return bool(totals.interrupted or totals.stopped_by_budget or totals.stopped_by
                or totals.in_batches)


def execute_phase(phase: Phase, client: ModelClient, settings: ModelSettings,
                  progress: Progress | None, batch: BatchOptions | None,
                  spent_elsewhere: float = 0.0
                  ) -> tuple[RunTotals, dict[str, CallRecord], float, LogState]:
    """One phase's calls into its log (opened and closed here), live (the calls taken as
    a stream) or through the provider's batch API; returns the totals, with
    ``keep_records`` the log's records by call id, the USD its log's calls cost and the
    log's state.
    ``spent_elsewhere``: what the stage's other logs cost, which ``--max-cost`` covers
    too (a robustness run's rewrites, a hunt's perturber)."""
    log = AppendLog(phase.log, phase.record_type, keep_records=phase.keep_records,
                    visit=phase.visit, on_append=phase.collect, known=phase.known)
    try:
        if phase.prepare is not None:
            phase.prepare(log)
        calls = phase.calls
        if batch is not None:
            calls = list(calls)  # a batch file holds them all
        if batch is not None and calls:
            request = calls[0].request
            runner = BatchRunner(batches_path(phase.log), client, request.model,
                                 request.api_base, batch)
            totals = runner.run(calls, log, progress)
        else:
            max_cost = None if settings.max_cost is None else \
                settings.max_cost - spent_elsewhere
            totals = execute(calls, client, log, settings.concurrency, progress,
                             max_cost, total=phase.total)
    finally:
        log.close()
    return totals, log.records, log.spent, log.state()


def price_stage(stage: Stage, client: ModelClient) -> DryRun:
    """The dry run of a stage: its folder checked (a folder holding another run is refused
    here too), each phase's calls priced against its log; nothing called or written. A
    phase planned from the previous one's records sees them as the logs hold them."""
    check_folder(stage)
    total, costs = DryRun(), []
    for phase in stage.phases():
        finished = finished_ids(phase.log, phase.record_type)
        priced = dry_run(phase.calls, client, finished)
        total.add(priced)
        total.missing = total.missing or priced.missing
        if priced.to_call:
            costs.append(priced.cost_usd)
        phase.records = read_log(phase.log, phase.record_type).latest()
    if costs:  # unknown when any phase's is
        total.cost_usd = None if None in costs else sum(costs)
    return total
