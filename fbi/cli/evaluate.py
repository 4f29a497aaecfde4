"""`fbi evaluate`: run a judge over a dataset with the FBI strategies."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fbi.errors import UnknownName
from fbi.llm import LOCAL_JUDGE
from fbi.sources import SAMPLE

console = Console(highlight=False)


def parse_score_range(ctx, param, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    match = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", value)
    if not match or int(match.group(1)) >= int(match.group(2)):
        raise click.BadParameter(f"'{value}' is not a range like 1-10 (low below high)")
    return int(match.group(1)), int(match.group(2))


def default_output(judge: str, dataset: str) -> Path:
    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(text).name or text).strip("-") or "run"
    return Path("fbi-runs") / f"{slug(judge)}__{slug(dataset)}"


class RichProgress:
    """The runner's Progress protocol drawn as a rich progress bar."""

    def __init__(self) -> None:
        self._bar = Progress(
            TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(),
            TextColumn("cached {task.fields[cached]} · failed {task.fields[failed]} · "
                       "unparseable {task.fields[unparseable]} · {task.fields[tokens]} tokens · "
                       "${task.fields[cost]:.4f}"),
            TimeElapsedColumn(), console=console, transient=False,
        )
        self._task = None
        self._fields = {"cached": 0, "failed": 0, "unparseable": 0, "tokens": 0, "cost": 0.0}

    def start(self, total: int, already_done: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("judging", total=total, completed=already_done,
                                        **self._fields)

    def advance(self, record) -> None:
        fields = self._fields
        fields["cached"] += bool(record.cached)
        fields["failed"] += record.status == "error"
        fields["unparseable"] += record.status == "unparseable"
        fields["tokens"] += record.prompt_tokens + record.completion_tokens
        fields["cost"] += record.cost or 0.0
        self._bar.update(self._task, advance=1, **fields)

    def finish(self) -> None:
        self._bar.stop()


@click.command()
@click.option("--judge", default=LOCAL_JUDGE, show_default=True,
              help="Any litellm model string, e.g. gpt-4-turbo or openai/NAME with --api-base.")
@click.option("--dataset", "dataset_spec", default=SAMPLE, show_default=True,
              help="sample, a .jsonl/.csv/.parquet file, an FBI TSV folder, hf:ORG/NAME.")
@click.option("--strategy", "strategies", multiple=True,
              help="Strategy name or 'all' (repeatable). Default: vanilla.")
@click.option("--ability", "abilities", multiple=True, help="Only these abilities.")
@click.option("--category", "categories", multiple=True, help="Only these categories.")
@click.option("--include-extra", is_flag=True,
              help="Also judge the release's extra categories (formatting, superficial).")
@click.option("--limit", type=click.IntRange(min=1), help="At most N instances per category.")
@click.option("--score-range", callback=parse_score_range,
              help="Score range A-B for every scored strategy (default: each strategy's own).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True,
              help="Seconds per call.")
@click.option("--retries", type=click.IntRange(min=0), default=6, show_default=True,
              help="Retries on 429, 5xx and time-outs (exponential backoff with jitter).")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--max-tokens", type=click.IntRange(min=1),
              help="Reply token limit (default 400 for the embedded judge, 1024 otherwise).")
@click.option("--repair", type=click.IntRange(min=0), default=0, show_default=True,
              help="Ask again up to N times for just the verdict when a reply is unreadable.")
@click.option("--api-base", help="Base URL of an OpenAI-compatible or other provider API.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="A folder of extra or overriding strategy templates (NAME.jinja).")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Run folder (default fbi-runs/JUDGE__DATASET). Re-running resumes it.")
@click.option("--dry-run", is_flag=True, help="Print calls, tokens and cost; call nothing.")
@click.option("--max-cost", type=click.FloatRange(min=0), help="Stop before spending more (USD).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the response cache.")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Response cache file (default $FBI_CACHE or ~/.cache/fbi/responses.sqlite).")
def evaluate(judge, dataset_spec, strategies, abilities, categories, include_extra, limit,
             score_range, concurrency, timeout, retries, temperature, max_tokens, repair,
             api_base, prompts_dir, output, dry_run, max_cost, no_cache, cache_path) -> None:
    """Run a judge over the dataset with the FBI strategies and record every judgment."""
    from fbi.cache import ResponseCache
    from fbi.evaluate import DEFAULT_STRATEGIES, Evaluation, EvaluationConfig, read_judgments
    from fbi.llm import ModelClient, RetryPolicy
    from fbi.sources import load_dataset

    dataset = load_dataset(dataset_spec)
    chosen = dataset.select(abilities, categories, include_extra, limit)
    left_out = len(dataset) - len(chosen)
    console.print(f"Read {dataset.rows_read} rows from {dataset_spec}; judging {len(chosen)} "
                  f"instances" + (f" ({left_out} left out by the filters)" if left_out else ""))
    config = EvaluationConfig(
        judge=judge, strategies=tuple(strategies) or DEFAULT_STRATEGIES, score_range=score_range,
        temperature=temperature, max_tokens=max_tokens, api_base=api_base,
        concurrency=concurrency, timeout_s=timeout, repair=repair, max_cost=max_cost,
        prompts_dir=prompts_dir)
    output = output or default_output(judge, dataset_spec)
    evaluation = Evaluation(chosen, config, output)
    cache = None if no_cache else ResponseCache(cache_path)

    if dry_run:
        estimate = evaluation.dry_run(cache)
        cost = estimate["cost_usd"]
        console.print(
            f"{estimate['calls']} calls planned: {estimate['done']} already in {output}, "
            f"{estimate['cached']} in the cache, [bold]{estimate['to_call']} to make[/].\n"
            f"Estimated {estimate['prompt_tokens']:,} prompt + "
            f"{estimate['completion_tokens']:,} reply tokens, cost "
            + (f"${cost:.4f}" if cost is not None else "unknown (no price data for "
               f"{judge})") + ".")
        return

    client = ModelClient(cache=cache, timeout_s=timeout, retry=RetryPolicy(max_retries=retries))
    totals = evaluation.run(client, RichProgress())
    console.print(
        f"{totals.completed} calls this time ({totals.cached} from the cache, "
        f"{client.calls_made} requests to the model), {totals.already_done} done before; "
        f"{totals.unparseable} unparseable, {totals.failed} failed; "
        f"{totals.prompt_tokens + totals.completion_tokens:,} tokens, ${totals.cost:.4f}.")
    for error in totals.errors:
        console.print(f"[red]failed:[/] {error}", soft_wrap=True)
    console.print(headline_table(read_judgments(output), evaluation.registry))
    console.print(f"Judgments in {output / 'judgments.jsonl'}; the full report: "
                  f"fbi report {output}")
    if totals.failed:
        console.print("[yellow]Some calls failed; run the same command again to retry them.[/]")
        sys.exit(1)


def headline_table(judgments, registry) -> Table:
    """Strategies × LF/F/IF/R (% undetected) and SI (% retained), as in paper Table 3."""
    from fbi.outcomes import headline, instance_outcomes

    rows = headline(instance_outcomes(judgments))
    judges = sorted({judge for judge, _ in rows})
    table = Table(title=f"{', '.join(judges)}: % undetected errors (lower is better), "
                        "SI = % score-invariant retained (higher is better); n in brackets")
    columns = ("LF", "F", "IF", "R", "SI")
    if len(judges) > 1:
        table.add_column("judge")
    table.add_column("strategy")
    for column in (*columns, "unparseable"):
        table.add_column(column, justify="right")
    for (judge, strategy), rates in sorted(rows.items()):
        try:
            name = registry.get(strategy).meta.display_name
        except UnknownName:  # a strategy from a template folder not given this time
            name = strategy
        cells = ["–" if rates.get(c) is None or rates[c].rate is None
                 else f"{100 * rates[c].rate:.1f} ({rates[c].parseable})" for c in columns]
        unparseable = str(sum(r.unparseable for r in rates.values()))
        table.add_row(*([judge] if len(judges) > 1 else []), name, *cells, unparseable)
    return table
