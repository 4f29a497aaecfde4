"""`fbi perturb`: make perturbation candidates for a vetting queue."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from fbi.cli._bundles import batch_bundle, bundle, cache_bundle, calls_bundle
from fbi.cli._console import console, print_command
from fbi.cli._run import (
    MAX_SAMPLES,
    SEED,
    FiniteFloat,
    api_base_option,
    cost_text,
    dry_run_option,
    replace_option,
)
from fbi.datasets import SAMPLE
from fbi.providers import LOCAL_JUDGE


def split_names(ctx, param, values: tuple[str, ...]) -> tuple[str, ...]:
    """Accept --categories a,b and --categories a --categories b alike."""
    return tuple(name.strip() for value in values for name in value.split(",") if name.strip())


@dataclass(frozen=True)
class LlmEngine:
    """The LLM engine: its model, server and temperature."""

    model: str = LOCAL_JUDGE
    api_base: str | None = None
    temperature: float = 0.7


engine_bundle = bundle(
    "llm", LlmEngine,
    click.option("--model", default=LOCAL_JUDGE, show_default=True,
                 help="The litellm model of the LLM engine."),
    api_base_option,
    click.option("--temperature", type=FiniteFloat(min=0, max=5), default=0.7,
                 show_default=True))


@click.command()
@click.option("--input", "input_spec", default=SAMPLE, show_default=True,
              help="Any dataset SPEC with instruction, gold answer and ability.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The vetting queue to write (.jsonl).")
@click.option("--categories", multiple=True, callback=split_names,
              help="Categories to make (comma-separated or repeated). Default: every "
                   "category of each item's ability, and score-invariant.")
@click.option("--engine", type=click.Choice(["auto", "rules", "llm"]), default="auto",
              show_default=True, help="auto: rules where a rule exists, the LLM elsewhere.")
@click.option("--n-per-item", type=click.IntRange(min=1, max=MAX_SAMPLES), default=1,
              show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@engine_bundle
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N gold answers.")
@calls_bundle
@click.option("--length-threshold", type=FiniteFloat(min=0), default=0.3,
              show_default=True, help="Flag a relative length change above this.")
@dry_run_option
@cache_bundle
@replace_option
@batch_bundle
def perturb(input_spec, output, categories, engine, llm, n_per_item, seed, limit, calls,
            length_threshold, dry_run, cache, replace, batch) -> None:
    """Make perturbation candidates, pre-screen them, and write a vetting queue."""
    from fbi.cli._run import RichProgress, print_dry_run
    from fbi.datasets import load_gold_items, source_name
    from fbi.perturb import PerturbConfig, Perturber

    asked = PerturbConfig(categories=categories, engine=engine)  # (its rules, checked first)
    if asked.manipulations:
        write_manipulations(input_spec, output, categories, seed, limit, replace)
        return
    items, rows = load_gold_items(input_spec)
    settings = calls.settings(llm.model, llm.api_base, temperature=llm.temperature)
    config = PerturbConfig(categories=categories, engine=engine, model=settings,
                           n_per_item=n_per_item, seed=seed,
                           length_threshold=length_threshold, limit=limit)
    perturber = Perturber(items, config, output, source=source_name(input_spec))
    if not (perturber.spec_path.exists() or perturber.calls_path.exists()) and not dry_run:
        from fbi.outputs import claim_file

        claim_file(output, replace)  # no run of fbi's beside it: the queue may be theirs
    console.print(f"Read {rows} rows from {input_spec}: {len(items)} distinct gold answers"
                  + (f", the first {len(perturber.items)} used" if limit else "") + "; "
                  f"{len(perturber.rule_jobs)} rule candidates, {len(perturber.llm_jobs)} "
                  f"LLM calls planned" + (f" ({perturber.skipped} item × category pairs of "
                                          "another ability skipped)" if perturber.skipped else ""))
    client = calls.client(settings, cache)
    if dry_run:
        console.print(f"{len(perturber.rule_jobs)} rule candidates (no model call).")
        print_dry_run(perturber.dry_run(client), llm.model, str(perturber.calls_path))
        return
    perturber.run(client, RichProgress("perturbing") if perturber.llm_jobs else None,
                  batch.options(calls.concurrency))
    result = perturber.result
    assert result is not None  # (finish() sets it, interrupted or not)
    engines = {job.category: ("rules" if job in perturber.rule_jobs else "llm")
               for job in perturber.jobs}
    console.print(tally_table(result.tally, engines, f"Candidates written to {output}"))
    print_reasons(result.tally, engines)
    if result.llm is not None:
        llm = result.llm
        console.print(f"LLM engine: {llm.completed} calls this time ({llm.cached} cached), "
                      f"{llm.already_done} before; {llm.failed} failed, {llm.unparseable} "
                      f"replies held no usable candidate; "
                      f"{llm.prompt_tokens + llm.completion_tokens:,} tokens, "
                      f"{cost_text(llm)}.")
    print_command(f"{len(result.candidates)} candidates, all labelled unvetted; vet them "
                  "with:", f"fbi annotate {output} --annotator NAME")
    exit_for_llm(result, perturber.calls_path)


def exit_for_llm(result, calls_path: Path) -> None:
    """Exit 1 when the LLM engine's calls failed or gave no candidate (said, with the
    commonest reason); nothing when it made no call."""
    from fbi.cli._run import err_console, exit_for

    if result.llm is None:
        return
    exit_for(result.llm)
    unusable = sum(t.failed for t in result.tally.values())
    if unusable:
        reasons = Counter(r for t in result.tally.values() for r in t.reasons.elements())
        reason = reasons.most_common(1)[0][0] if reasons else "no reply"
        err_console.print(f"[yellow]{unusable} LLM calls gave no candidate (the "
                          f"commonest reason: {escape(reason)}; see {calls_path}).[/]")
        sys.exit(1)


def write_manipulations(input_spec: str, output: Path, categories: tuple[str, ...], seed: int,
                        limit: int | None, replace: bool) -> None:
    """The queue of a manipulation run: the input's instances (the twins) and each kind of
    manipulation of each (`fbi.perturb._manipulate`)."""
    from fbi.datasets import load_dataset, write_dataset
    from fbi.errors import InputError
    from fbi.outputs import claim_file
    from fbi.perturb import manipulated_queue, manipulation_kinds, manipulations

    kinds = manipulation_kinds(categories)
    twins = list(load_dataset(input_spec).instances)[:limit]
    queue, unusable = manipulated_queue(twins, kinds, seed)
    by_kind = Counter(i.category for i in queue[len(twins) - unusable:])
    inside = [k for k in kinds if manipulations()[1][k].where == "tool-result"]
    if not by_kind:
        raise InputError(f"{input_spec}: no manipulation could be made — " + (
            f"{'/'.join(inside)}: the text goes into a tool result of an agent's "
            "trajectory, and no instance is one with a tool result; " if inside else "") +
            "the others need instances with a planted error in an answer. Fix: give "
            "--input a queue of perturbed answers (fbi perturb) or of trajectories (fbi "
            "trajectories perturb)")
    claim_file(output, replace)
    write_dataset(queue, output)
    made = sum(by_kind.values())
    table = Table(title=f"Manipulations written to {output}", box=None)
    table.add_column("category", no_wrap=True)
    table.add_column("candidates", justify="right")
    for kind in kinds:
        count = by_kind[f"manipulation/{kind}"]
        table.add_row(f"manipulation/{kind}", str(count) + (
            "" if count else " (needs a tool result)" if kind in inside
            else " (answers only)"))
    console.print(table)
    console.print(f"{len(twins) - unusable} twins (the instances as given, labels kept; "
                  f"{unusable} score-invariant or extra left out) and {made} manipulated "
                  f"candidates (texts version {manipulations()[0]}), labelled unvetted. Vet "
                  f"them with: fbi annotate label {output} --annotator NAME --category "
                  "'manipulation/*'. Judge the queue or the exported set: `fbi report` "
                  "pairs each manipulation with its twin.")


def tally_table(tally: dict, engines: dict[str, str], title: str) -> Table:
    """Per category: the engine, candidates generated, flagged, declined and failed. Names are
    never cut (80 columns hold them: the reasons are printed below, not in a column)."""
    from rich import box

    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("category", no_wrap=True)
    table.add_column("engine", no_wrap=True)
    for column in ("generated", "flagged", "declined", "failed"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, counts in sorted(tally.items()):
        table.add_row(name, engines.get(name, ""), str(counts.generated),
                      str(counts.flagged), str(counts.declined), str(counts.failed))
    return table


def print_reasons(tally: dict, engines: dict[str, str]) -> None:
    """Why candidates were declined or failed, once per reason: the categories the rules
    make none of (they need the LLM engine) on one line, then each other category's
    main reason."""
    from rich.markup import escape

    needs_llm = sorted(name for name, counts in tally.items()
                       if engines.get(name) == "rules" and not counts.generated
                       and counts.reasons and all("LLM engine" in reason
                                                  for reason in counts.reasons))
    if needs_llm:
        console.print(f"The rules make none of {len(needs_llm)} categories, which need "
                      f"judgement (--engine auto or llm makes them): {', '.join(needs_llm)}.",
                      soft_wrap=False)
    others = [(name, counts) for name, counts in sorted(tally.items())
              if counts.reasons and name not in needs_llm]
    for name, counts in others:
        reason, _ = counts.reasons.most_common(1)[0]
        console.print(f"{name}: {counts.declined + counts.failed} declined or failed, "
                      f"mostly: {escape(reason)}", soft_wrap=False)
