"""`fbi trajectories`: agents' trajectories read, checked and perturbed (fbi.trajectories,
fbi.perturb)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from fbi.cli._bundles import cache_bundle, calls_bundle
from fbi.cli._console import console
from fbi.cli._run import (
    SEED,
    FiniteFloat,
    api_base_option,
    dry_run_option,
    replace_option,
)
from fbi.cli.perturb import exit_for_llm, split_names

#: ``--input sample``: the built-in gold trajectories.
SAMPLE = "sample"
#: A rendering longer than this (characters) is said to be long for a judge's context.
LONG_RENDERING = 100_000


def read_spec(spec: str, tools: Path | None = None):
    """The trajectories of a file, or the built-in sample for ``sample``, with a
    ``--tools`` file's corrections."""
    from fbi.trajectories import ToolOverrides, read_trajectories, sample_trajectories

    found = sample_trajectories() if spec == SAMPLE else read_trajectories(spec)
    return ToolOverrides.read(tools).apply(found, str(tools)) if tools else found


tools_option = click.option(
    "--tools", "tools", type=click.Path(dir_okay=False, path_type=Path),
    help="A YAML file correcting what fbi knows of the tools: `version: 1` and `tools: "
         "{NAME: {side_effects: true, asks_user: false}}` (docs/how-to/agents.md).")


def _tools_table(found) -> Table:
    """Every tool: whether it changes the world and where that was learnt, whether it
    asks the user."""
    table = Table(title="tools")
    for column in ("tool", "side effects", "known by", "asks the user", "trajectories"):
        table.add_column(column, justify="right" if column == "trajectories" else "left")
    seen: dict[str, list] = {}
    for trajectory in found:
        for tool in trajectory.tools:
            seen.setdefault(tool.name, []).append(tool)
    for name, tools in sorted(seen.items()):
        def said(values: set) -> str:
            return "mixed" if len(values) > 1 else str(next(iter(values)))
        effects = {("unknown" if t.known_by == "unknown" else "yes" if t.side_effects
                    else "no") for t in tools}
        table.add_row(escape(name), said(effects), said({t.known_by for t in tools}),
                      said({"yes" if t.asks_user else "no" for t in tools}), str(len(tools)))
    return table


@click.group()
def trajectories() -> None:
    """Agents' trajectories: read and check them, plant errors in them."""


@trajectories.command()
@click.argument("spec", default=SAMPLE)
@tools_option
def validate(spec, tools) -> None:
    """Read SPEC (a .jsonl or .json file in fbi's, OpenAI's, Anthropic's or τ-bench's
    layout, OpenTelemetry or OpenInference spans, or `sample`) and say what it holds —
    the tools, which change the world and how fbi knows; exit 2 naming the record (the
    trace and span) and step of the first broken trajectory."""
    from fbi.trajectories import confirmations

    found = read_spec(spec, tools)
    by_domain = Counter(t.domain or "(none)" for t in found)
    console.print(f"{escape(spec)}: {len(found)} trajectories, "
                  f"{sum(len(t.steps) for t in found)} steps, "
                  f"{sum(len(s.calls) for t in found for s in t.steps)} tool calls, "
                  f"{sum(len(confirmations(t)) for t in found)} confirmations asked of the "
                  "user; " + ", ".join(f"{escape(d)} {n}" for d, n in sorted(
                      by_domain.items())), soft_wrap=True)
    if any(t.tools for t in found):
        console.print(_tools_table(found))
    unknown = sorted({t.name for x in found for t in x.tools if t.known_by == "unknown"})
    if unknown:
        console.print(f"side effects unknown for {', '.join(map(escape, unknown))} "
                      "(counted as none): declare them with --tools FILE", soft_wrap=True)


@trajectories.command()
@click.option("--input", "input_spec", default=SAMPLE, show_default=True,
              help="Gold trajectories: a file (fbi's, OpenAI's, Anthropic's or τ-bench's "
                   "layout — τ-bench's reward-1 runs only —, or a trace export) or "
                   "`sample`.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The vetting queue to write (.jsonl).")
@click.option("--categories", multiple=True, callback=split_names,
              help="trajectory/KIND or score-invariant/KIND (comma-separated or repeated). "
                   "Default: every rule.")
@click.option("--engine", type=click.Choice(["rules", "auto", "llm"]), default="rules",
              show_default=True,
              help="rules: fbi's rules only; auto: the LLM (--model) where a rule finds "
                   "nothing to change; llm: the LLM for every candidate.")
@click.option("--model", help="The LLM perturber (any litellm model string); needed by "
                               "--engine auto and llm.")
@click.option("--temperature", type=FiniteFloat(min=0, max=5), default=0.7, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@tools_option
@click.option("--window-tokens", type=click.IntRange(min=100), default=None,
              help="Cut each rendering the judge reads to about this many tokens (4 "
                   "characters each) around the changed step, every step keeping its "
                   "number; the rationale says which steps are shown. Default: whole.")
@api_base_option
@calls_bundle
@dry_run_option
@cache_bundle
@replace_option
def perturb(input_spec, output, categories, engine, model, temperature, seed, tools,
            window_tokens, api_base, calls, dry_run, cache, replace) -> None:
    """Plant one error (or a score-invariant rewrite) in each gold trajectory — by rules,
    and by an LLM where asked — and write the candidates as a vetting queue (`fbi
    annotate`, `fbi evaluate --dataset`): each candidate's rationale names the step
    changed, and the pre-screen checks it."""
    from fbi.cli._run import RichProgress, print_dry_run
    from fbi.errors import InputError
    from fbi.outputs import claim_file
    from fbi.perturb import PerturbConfig, TrajectoryPerturber, trajectory_categories
    from fbi.trajectories import gold_only

    if engine != "rules" and not model:
        raise InputError(f"--engine {engine} asks an LLM perturber. Fix: give --model "
                         "(and --api-base for a server of your own)")
    gold = gold_only(read_spec(input_spec, tools))
    settings = calls.settings(model, api_base, temperature=temperature) if model else None
    config = PerturbConfig(categories=categories, engine=engine, seed=seed,
                           **({"model": settings} if settings else {}))
    perturber = TrajectoryPerturber(gold, config, output, source=input_spec,
                                    window=4 * window_tokens if window_tokens else None)
    if not (perturber.spec_path.exists() or perturber.calls_path.exists()) and not dry_run:
        claim_file(output, replace)  # no run of fbi's beside it: the queue may be theirs
    console.print(f"{len(gold)} gold trajectories: {len(perturber.rule_jobs)} rule "
                  f"candidates, {len(perturber.llm_jobs)} LLM calls planned.")
    client = calls.client(settings, cache) if settings else None
    if dry_run:
        if client is not None:
            print_dry_run(perturber.dry_run(client), model, str(perturber.calls_path))
        return
    perturber.run(client, RichProgress("perturbing") if perturber.llm_jobs else None)
    result = perturber.result
    assert result is not None  # (finish() sets it, interrupted or not)
    if not result.candidates:
        reasons = [r for t in result.tally.values() for r in t.reasons]
        raise InputError(f"{input_spec}: no candidate could be made of these trajectories "
                         f"({reasons[0] if reasons else 'none given'})")
    table = Table(title=f"{len(result.candidates)} candidates from {len(gold)} gold "
                        "trajectories")
    columns = ("category", "made", "declined") + (("failed",) if result.llm else ())
    for column in columns:
        table.add_column(column, justify="left" if column == "category" else "right")
    for category in list(categories) or trajectory_categories():
        counts = result.tally.get(category)
        row = (counts.generated, counts.declined, counts.failed) if counts else (0, 0, 0)
        table.add_row(escape(category), *(str(n) for n in row[:len(columns) - 1]))
    console.print(table)
    _print_declines(result.tally, len(gold))
    long = sum(len(c.perturbed_answer) > LONG_RENDERING for c in result.candidates)
    if long and not window_tokens:
        console.print(f"{long} candidates are longer than {LONG_RENDERING // 4:,} tokens "
                      "(4 characters each): --window-tokens cuts them around the changed "
                      "step for a judge's context", soft_wrap=True)
    console.print(f"wrote {escape(str(output))}; vet it with `fbi annotate {escape(str(output))}"
                  " --annotator NAME`", soft_wrap=True)
    exit_for_llm(result, perturber.calls_path)


def _print_declines(tally: dict, trajectories: int) -> None:
    """Why each rule declined (its commonest reasons); a category that declined on every
    trajectory is a warning: the file lacks what it needs."""
    for category, counts in sorted(tally.items()):
        if not counts.reasons:
            continue
        common = counts.reasons.most_common(2)
        why = "; ".join(f"{escape(reason)} ({n}×)" for reason, n in common)
        if counts.generated == 0 and counts.declined >= trajectories:
            console.print(f"[yellow]warning:[/] {escape(category)} declined on every "
                          f"trajectory: {why}", soft_wrap=True)
        else:
            console.print(f"{escape(category)} declined {counts.declined}: {why}",
                          soft_wrap=True)
