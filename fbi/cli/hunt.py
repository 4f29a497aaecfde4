"""`fbi hunt`: search a judge's blind spots among fbi's own edits of gold answers."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._bundles import (
    CallOptions,
    bundle,
    cache_bundle,
    calls_bundle,
    reasoning_bundle,
)
from fbi.cli._console import console, print_command
from fbi.cli._run import (
    SEED,
    FiniteFloat,
    dry_run_option,
    force_option,
    model_settings,
    parse_model_args,
)
from fbi.hunt import DEFAULT_BUDGET
from fbi.providers import LOCAL_JUDGE


class HuntProgress:
    """One bar over the whole budget for every round of the hunt (the harness starts and
    finishes a bar per round), with what is being tried; the best findings so far are
    printed above it whenever they change."""

    def __init__(self, budget: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(TextColumn("[bold]{task.fields[stage]}"), BarColumn(bar_width=16),
                             MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                             TimeRemainingColumn(), TextColumn("{task.fields[trying]}"),
                             console=console, transient=False)
        self._task = self._bar.add_task("hunt", total=budget, completed=1, stage="searching",
                                        trying="")
        self._started = False
        self._best = ""

    def status(self, status) -> None:
        """A round begins: say what it is doing, and the best miss rates when they
        change."""
        stage = "searching" if status.stage == "search" else "confirming"
        trying = status.trying.split("; ")[0] if status.trying else ""
        trying = trying if len(trying) <= 30 else trying[:29] + "…"
        self._bar.update(self._task, stage=stage, trying=escape(trying))
        best = "; ".join(f"{d} {100 * r:.0f}% of {n}" for d, r, n in status.best[:2])
        leaders = "; ".join(d for d, _, _ in status.best[:2])
        if best and leaders != self._best and status.stage == "search":
            self._best = leaders  # (printed when the leaders change, not their counts)
            self._bar.console.print(f"best so far: {escape(best)}", soft_wrap=False,
                                    overflow="ellipsis", no_wrap=True)

    def start(self, total: int, already_done: int) -> None:
        if not self._started:
            self._bar.start()
            self._started = True
        self._bar.update(self._task, advance=already_done)

    def advance(self, record) -> None:
        self._bar.update(self._task, advance=1)

    def finish(self) -> None:  # (between rounds: the bar stays)
        pass

    def close(self) -> None:
        if self._started:
            self._bar.stop()


@dataclass(frozen=True)
class Helpers:
    """The models that help the hunt: an LLM perturber and a describer of blind spots."""

    perturber: str | None = None
    perturber_api_base: str | None = None
    perturber_edits: int = 24
    describer: str | None = None
    describer_api_base: str | None = None
    describer_edits: int = 30

    def settings(self, calls: CallOptions):
        """(the perturber's settings, the describer's), None for one not asked: the
        judge's concurrency, time-out and retries (the budget and the rate are the
        judge's)."""
        return tuple(None if model is None else model_settings(
            model, base, concurrency=calls.concurrency, timeout=calls.timeout,
            retries=calls.retries) for model, base in (
                (self.perturber, self.perturber_api_base),
                (self.describer, self.describer_api_base)))


helpers_bundle = bundle("helpers", Helpers,
    click.option("--perturber", help="An LLM perturber model: its edits in the categories no "
                                      "rule makes (entity, incorrect-fact, ...) join the search as "
                                      "llm/CATEGORY operators."),
    click.option("--perturber-api-base", help="The perturber's server, if not the provider's."),
    click.option("--perturber-edits", type=click.IntRange(min=2, max=10_000), default=24,
                 show_default=True,
                 help="Edits asked of the perturber per category (half from each split); its "
                      "calls count against --budget."),
    click.option("--describer", help="A model that reads missed and caught edits midway "
                                      "through the search and proposes blind spots in words; "
                                      "each proposal is tested with edits made for it."),
    click.option("--describer-api-base", help="The describer's server, if not the provider's."),
    click.option("--describer-edits", type=click.IntRange(min=2, max=1000), default=30,
                 show_default=True,
                 help="Edits the describer makes for each proposal it cannot say with the "
                      "hunt's predicates (half from each split); its calls count against "
                      "--budget."))


@dataclass(frozen=True)
class SearchOptions:
    """How the hunt searches and confirms: its budget, operators, seed and tests."""

    budget: int = DEFAULT_BUDGET
    operators: tuple[str, ...] = ()
    seed: int = 0
    alpha: float = 0.05
    margin: float = 0.10
    search: str = "adaptive"


search_bundle = bundle("searching", SearchOptions,
    click.option("--budget", type=click.IntRange(min=0), default=DEFAULT_BUDGET,
                 show_default=True,
                 help="Model calls the hunt may make: the judge's, the preflight probe's "
                      "included, and a --perturber's (a cached reply counts too, so a hunt "
                      "is the same whatever the cache holds)."),
    click.option("--operator", "operators", multiple=True,
                 help="Search only these operators (repeatable): an error rule "
                      "(number-errors) or one of the hunt's (negation, entity-swap, "
                      "order-swap), two composed (grammar+spelling), one followed by a "
                      "manipulation (chronology+manipulation/padding), or a manipulation "
                      "alone (manipulation/padding). Default: all."),
    click.option("--seed", type=SEED, default=0, show_default=True,
                 help="Seeds the split of the items, the edits and the search."),
    click.option("--alpha", type=FiniteFloat(min=0, max=1, min_open=True, max_open=True),
                 default=0.05, show_default=True,
                 help="Family-wise error level at which a blind spot is confirmed."),
    click.option("--margin", type=FiniteFloat(min=0, max=1, max_open=True), default=0.10,
                 show_default=True,
                 help="A blind spot must be missed this much more often than random edits "
                      "(0.10: ten points)."),
    click.option("--search", type=click.Choice(["adaptive", "grid", "strings"]),
                 default="adaptive", show_default=True,
                 help="grid: every probe a random edit, no suspicion tested (what the "
                      "adaptive search is measured against); strings: search for short "
                      "strings that, put before or after a wrong answer or standing "
                      "alone, make the judge accept it."))


@dataclass(frozen=True)
class Subject:
    """What the hunt edits: gold answers (--dataset) or agents' trajectories."""

    dataset_spec: str = "sample"
    trajectory_spec: str | None = None
    tools: Path | None = None


subject_bundle = bundle("subject", Subject,
    click.option("--dataset", "dataset_spec", default="sample", show_default=True,
                 help="Gold answers to edit: sample (built in), a .jsonl/.csv/.parquet file, "
                      "an FBI TSV folder or hf:ORG/NAME (rows need an instruction and a "
                      "gold answer)."),
    click.option("--trajectories", "trajectory_spec",
                 help="Hunt a judge of agents: gold trajectories to edit with the trajectory "
                      "rules instead of answers — sample (built in) or a file `fbi "
                      "trajectories validate` reads (τ-bench's reward-1 runs only)."),
    click.option("--tools", "tools", type=click.Path(dir_okay=False, path_type=Path),
                 help="With --trajectories: a YAML file correcting what fbi knows of the "
                      "tools (side effects, asking the user), as `fbi trajectories "
                      "validate --tools` takes it."))


@click.command()
@click.option("--judge", default=LOCAL_JUDGE, show_default=True,
              help="Any litellm model string, e.g. gpt-4-turbo or openai/NAME with --api-base.")
@subject_bundle
@click.option("--strategy", "strategies", multiple=True,
              help="Strategy to judge each edit by (repeatable). Default: vanilla "
                   "(agent with --trajectories).")
@helpers_bundle
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The hunt's folder. Re-running the same command resumes it.")
@search_bundle
@click.option("--api-base", "api_bases", multiple=True,
              help="Base URL of an OpenAI-compatible or other provider API (repeat it for "
                   "a pool of servers of the same model).")
@click.option("--label", help="The judge's name in the findings.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="A folder of extra or overriding strategy templates (NAME.jinja).")
@click.option("--model-arg", "model_args", multiple=True, callback=parse_model_args,
              metavar="KEY=VALUE", help="Extra argument for the judge's API (repeatable).")
@calls_bundle
@force_option
@dry_run_option
@cache_bundle
@reasoning_bundle
def hunt(judge, subject, strategies, helpers, output, searching, api_bases, label,
         prompts_dir, model_args, calls, force, dry_run, cache, reasoning) -> None:
    """Search JUDGE's blind spots: kinds of edit of the gold answers it misses more often
    than random edits, described by what the text holds (where the change lies, what it
    touches, the answer, how it was judged), found adaptively within --budget calls and
    confirmed on held-out items. Writes OUTPUT/hunt.json (every candidate), OUTPUT/hunt.md
    and OUTPUT/queue.jsonl (the confirmed findings' missed edits, for `fbi annotate`).
    Exit code 1 when calls failed, the run stopped before its end, or half of the
    judge's replies about edits could not be read.
    """
    from fbi.cli._run import exit_for, print_dry_run, print_totals
    from fbi.cli.report import show_hunt
    from fbi.hunt import HuntConfig, plan_hunt
    from fbi.hunt import hunt as run_hunt
    from fbi.judge import default_strategies

    dataset_spec, trajectory_spec = subject.dataset_spec, subject.trajectory_spec
    config_settings = calls.settings(judge, api_bases,
                                     model_args=reasoning.model_args(model_args))
    perturber_settings, describer_settings = helpers.settings(calls)
    config = HuntConfig(model=config_settings, budget=searching.budget,
                        perturber=perturber_settings, perturber_edits=helpers.perturber_edits,
                        describer=describer_settings, describer_edits=helpers.describer_edits,
                        strategies=tuple(strategies) or default_strategies(
                            judge, "trajectory" if trajectory_spec else "answer"),
                        seed=searching.seed, operators=tuple(searching.operators),
                        label=label, prompts_dir=prompts_dir, alpha=searching.alpha,
                        margin=searching.margin, search=searching.search)
    budget = searching.budget
    progress = HuntProgress(budget)

    def announce(stage) -> None:
        console.print(f"Read {stage.rows_read} rows from {escape(stage.dataset_spec)}: "
                      f"{len(stage.items)} gold "
                      f"{'trajectories' if trajectory_spec else 'answers'}, "
                      f"{len(stage.search_items)} to search and {len(stage.held_out)} held "
                      f"out; budget {budget} calls.")

    client = calls.client(config_settings, cache)
    if dry_run:
        stage = plan_hunt(config, output, dataset_spec, trajectories=trajectory_spec,
                          tools=subject.tools, force=force)
        announce(stage)
        print_dry_run(stage.dry_run(client), judge, str(output))
        console.print("The hunt's later rounds depend on the judge's replies: the figures "
                      "are its first round's, scaled to the budget.")
        return
    try:
        totals, result, queued = run_hunt(config, output, dataset_spec,
                                          trajectories=trajectory_spec,
                                          tools=subject.tools, client=client,
                                          progress=progress, force=force,
                                          observer=progress.status, announce=announce)
    finally:
        progress.close()
    print_totals(totals, "calls")
    if result is not None:
        show_hunt(output, write=False)
        if queued:
            print_command(f"Findings in {output / 'hunt.json'} and {output / 'hunt.md'}; "
                          f"{queued} missed edits of the confirmed ones in "
                          f"{output / 'queue.jsonl'}. Vet them with:",
                          f"fbi annotate {output / 'queue.jsonl'}")
        else:  # (an empty queue is nothing to vet)
            console.print(f"Findings in {output / 'hunt.json'} and {output / 'hunt.md'}; no "
                          "confirmed blind spot, so no missed edit to vet.")
        if result.mostly_unreadable:
            sys.exit(1)
    exit_for(totals)
