"""`fbi hunt`: search a judge's blind spots among fbi's own edits of gold answers."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._console import console, print_command
from fbi.cli._run import (
    SEED,
    FiniteFloat,
    cache_options,
    concurrency_option,
    dry_run_option,
    force_option,
    max_cost_option,
    model_access_options,
    parse_model_args,
    reasoning_options,
    retries_option,
    timeout_option,
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


def _trajectory_items(dataset_spec: str, trajectory_spec: str):
    """The gold trajectories of ``--trajectories`` as gold items, how many were read,
    and the spec the hunt records."""
    from fbi.cli.trajectories import read_spec
    from fbi.errors import InputError
    from fbi.records import GoldItem
    from fbi.trajectories import gold_only

    if dataset_spec != "sample":
        raise InputError("give --dataset (answers) or --trajectories (agents), not both")
    read = read_spec(trajectory_spec)
    items = [GoldItem.of_trajectory(t) for t in gold_only(read)]
    return items, len(read), f"trajectories:{trajectory_spec}"


@click.command()
@click.option("--judge", default=LOCAL_JUDGE, show_default=True,
              help="Any litellm model string, e.g. gpt-4-turbo or openai/NAME with --api-base.")
@click.option("--dataset", "dataset_spec", default="sample", show_default=True,
              help="Gold answers to edit: sample (built in), a .jsonl/.csv/.parquet file, "
                   "an FBI TSV folder or hf:ORG/NAME (rows need an instruction and a "
                   "gold answer).")
@click.option("--trajectories", "trajectory_spec",
              help="Hunt a judge of agents: gold trajectories to edit with the trajectory "
                   "rules instead of answers — sample (built in) or a file `fbi "
                   "trajectories validate` reads (τ-bench's reward-1 runs only).")
@click.option("--strategy", "strategies", multiple=True,
              help="Strategy to judge each edit by (repeatable). Default: vanilla "
                   "(agent with --trajectories).")
@click.option("--budget", type=click.IntRange(min=0), default=DEFAULT_BUDGET,
              show_default=True,
              help="Model calls the hunt may make: the judge's, the preflight probe's "
                   "included, and a --perturber's (a cached reply counts too, so a hunt "
                   "is the same whatever the cache holds).")
@click.option("--operator", "operators", multiple=True,
              help="Search only these operators (repeatable): an error rule "
                   "(number-errors) or one of the hunt's (negation, entity-swap, "
                   "order-swap), two composed (grammar+spelling), one followed by a "
                   "manipulation (chronology+manipulation/padding), or a manipulation "
                   "alone (manipulation/padding). Default: all.")
@click.option("--perturber", help="An LLM perturber model: its edits in the categories no "
                                   "rule makes (entity, incorrect-fact, ...) join the search as "
                                   "llm/CATEGORY operators.")
@click.option("--perturber-api-base", help="The perturber's server, if not the provider's.")
@click.option("--perturber-edits", type=click.IntRange(min=2, max=10_000), default=24,
              show_default=True,
              help="Edits asked of the perturber per category (half from each split); its "
                   "calls count against --budget.")
@click.option("--describer", help="A model that reads missed and caught edits midway "
                                   "through the search and proposes blind spots in words; "
                                   "each proposal is tested with edits made for it.")
@click.option("--describer-api-base", help="The describer's server, if not the provider's.")
@click.option("--describer-edits", type=click.IntRange(min=2, max=1000), default=30,
              show_default=True,
              help="Edits the describer makes for each proposal it cannot say with the "
                   "hunt's predicates (half from each split); its calls count against "
                   "--budget.")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The hunt's folder. Re-running the same command resumes it.")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seeds the split of the items, the edits and the search.")
@click.option("--alpha", type=FiniteFloat(min=0, max=1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Family-wise error level at which a blind spot is confirmed.")
@click.option("--margin", type=FiniteFloat(min=0, max=1, max_open=True), default=0.10,
              show_default=True,
              help="A blind spot must be missed this much more often than random edits "
                   "(0.10: ten points).")
@click.option("--search", type=click.Choice(["adaptive", "grid"]), default="adaptive",
              show_default=True,
              help="grid: every probe a random edit, no suspicion tested (what the "
                   "adaptive search is measured against).")
@click.option("--api-base", "api_bases", multiple=True,
              help="Base URL of an OpenAI-compatible or other provider API (repeat it for "
                   "a pool of servers of the same model).")
@click.option("--label", help="The judge's name in the findings.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="A folder of extra or overriding strategy templates (NAME.jinja).")
@click.option("--model-arg", "model_args", multiple=True, callback=parse_model_args,
              metavar="KEY=VALUE", help="Extra argument for the judge's API (repeatable).")
@concurrency_option
@timeout_option
@retries_option
@force_option
@dry_run_option
@max_cost_option
@cache_options
@reasoning_options
@model_access_options
def hunt(judge, dataset_spec, trajectory_spec, strategies, budget, operators, perturber,
         perturber_api_base, perturber_edits, describer, describer_api_base, describer_edits,
         output, seed, alpha, margin, search, api_bases, label, prompts_dir, model_args,
         concurrency, timeout, retries, force, dry_run, max_cost, no_cache, cache_path,
         reasoning_effort, thinking_budget, api_key, rpm, no_probe) -> None:
    """Search JUDGE's blind spots: kinds of edit of the gold answers it misses more often
    than random edits, described by what the text holds (where the change lies, what it
    touches, the answer, how it was judged), found adaptively within --budget calls and
    confirmed on held-out items. Writes OUTPUT/hunt.json (every candidate), OUTPUT/hunt.md
    and OUTPUT/queue.jsonl (the confirmed findings' missed edits, for `fbi annotate`).
    Exit code 1 when calls failed, the run stopped before its end, or half of the
    judge's replies about edits could not be read.
    """
    from fbi.cli._run import (
        exit_for,
        model_client,
        model_settings,
        print_dry_run,
        print_totals,
        with_reasoning,
    )
    from fbi.cli.report import show_hunt
    from fbi.datasets import load_gold_items
    from fbi.hunt import Hunt, HuntConfig
    from fbi.judge import default_strategies

    config_settings = model_settings(judge, api_bases, concurrency=concurrency,
                                     timeout=timeout, retries=retries, max_cost=max_cost,
                                     rpm=rpm, no_probe=no_probe, model_args=with_reasoning(
                                         model_args, reasoning_effort, thinking_budget))
    perturber_settings = None if perturber is None else model_settings(
        perturber, perturber_api_base, concurrency=concurrency, timeout=timeout,
        retries=retries)
    describer_settings = None if describer is None else model_settings(
        describer, describer_api_base, concurrency=concurrency, timeout=timeout,
        retries=retries)
    config = HuntConfig(model=config_settings, budget=budget, perturber=perturber_settings,
                        perturber_edits=perturber_edits, describer=describer_settings,
                        describer_edits=describer_edits,
                        strategies=tuple(strategies) or default_strategies(
                            judge, "trajectory" if trajectory_spec else "answer"),
                        seed=seed,
                        operators=tuple(operators), label=label, prompts_dir=prompts_dir,
                        alpha=alpha, margin=margin, search=search)
    if trajectory_spec is None:
        items, rows = load_gold_items(dataset_spec)
    else:
        items, rows, dataset_spec = _trajectory_items(dataset_spec, trajectory_spec)
    progress = HuntProgress(budget)
    stage = Hunt(items, config, output, dataset_spec, force, observer=progress.status)
    console.print(f"Read {rows} rows from {escape(dataset_spec)}: {len(items)} gold "
                  f"{'trajectories' if trajectory_spec else 'answers'}, "
                  f"{len(stage.search_items)} to search and {len(stage.held_out)} held out; "
                  f"budget {budget} calls.")
    client = model_client(config_settings, no_cache, cache_path, api_key)
    if dry_run:
        print_dry_run(stage.dry_run(client), judge, str(output))
        console.print("The hunt's later rounds depend on the judge's replies: the figures "
                      "are its first round's, scaled to the budget.")
        return
    try:
        totals = stage.run(client, progress)
    finally:
        progress.close()
    print_totals(totals, "calls")
    if stage.result is not None:
        show_hunt(output, write=False)
        if stage.queued:
            print_command(f"Findings in {output / 'hunt.json'} and {output / 'hunt.md'}; "
                          f"{stage.queued} missed edits of the confirmed ones in "
                          f"{output / 'queue.jsonl'}. Vet them with:",
                          f"fbi annotate {output / 'queue.jsonl'}")
        else:  # (an empty queue is nothing to vet)
            console.print(f"Findings in {output / 'hunt.json'} and {output / 'hunt.md'}; no "
                          "confirmed blind spot, so no missed edit to vet.")
        if stage.result.mostly_unreadable:
            sys.exit(1)
    exit_for(totals)
