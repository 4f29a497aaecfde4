"""What every model-calling command shares: the progress bar and the exit codes.

Exit codes mean the same in every stage: 0 all done; 1 some calls failed or a budget
stop (with the count printed); 2 bad input or configuration (raised as errors, see
``fbi.cli``); 130 interrupted, with everything finished saved.
"""

from __future__ import annotations

import math
import re
import signal
import sys
from pathlib import Path

import click
from rich import box
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from fbi.cli._console import console, err_console
from fbi.providers import batch_providers
from fbi.runs import DryRun, RunTotals


class RichProgress:
    """The harness's Progress protocol drawn as a rich progress bar with an ETA. Counts
    appear once they are not zero, so the line fits 80 columns in the usual case."""

    def __init__(self, description: str = "judging") -> None:
        self._bar = Progress(
            TextColumn(f"[bold]{escape(description)}"), BarColumn(bar_width=16),
            MofNCompleteColumn(), TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self._task = None
        self._fields = {"cached": 0, "failed": 0, "unparseable": 0, "cost": 0.0}

    def start(self, total: int, already_done: int) -> None:
        self._bar.start()
        self._task = self._bar.add_task("run", total=total, completed=already_done,
                                        counts=self._counts())

    def advance(self, record) -> None:
        fields = self._fields
        fields["cached"] += bool(record.cached)
        fields["failed"] += record.status == "error"
        fields["unparseable"] += record.status == "unparseable"
        fields["cost"] += record.cost or 0.0
        self._bar.update(self._task, advance=1, counts=self._counts())

    def _counts(self) -> str:
        fields = self._fields
        shown = [f"{fields[name]} {name}" for name in ("cached", "failed", "unparseable")
                 if fields[name]]
        if fields["cost"]:
            shown.append(f"${fields['cost']:.4f}")
        return " · ".join(shown)

    def finish(self) -> None:
        self._bar.stop()


def print_dry_run(estimate: DryRun, model: str, where: str) -> None:
    cost = estimate.cost_usd
    console.print(
        f"{estimate.calls} calls planned: {estimate.done} already in {where}, "
        f"{estimate.cached} in the cache, [bold]{estimate.to_call} to make[/].\n"
        f"Estimated {estimate.prompt_tokens:,} prompt + {estimate.completion_tokens:,} reply "
        "tokens, cost " + (f"${cost:.4f}" if cost is not None
                           else f"unknown (no price data for {escape(model)})") + ".")
    if estimate.sampled:
        margin = estimate.prompt_tokens_margin
        share = f" ({100 * margin / estimate.prompt_tokens:.1f}%)" if estimate.prompt_tokens \
            else ""
        console.print(
            f"[yellow]Estimated from a seeded random sample[/]: {estimate.sampled:,} prompts "
            "rendered, the same instances under every strategy; every count but the "
            f"calls planned is scaled from it. Prompt tokens ±{margin:,}{share} "
            "(95% interval).", soft_wrap=True)
    if estimate.missing:  # a dry run calls nothing: what the real run needs is a note
        console.print(f"[yellow]before the real run:[/] {escape(estimate.missing)}",
                      soft_wrap=True)


def cost_text(totals: RunTotals) -> str:
    """The calls' cost as said: a sum of known prices, with the calls of unknown price
    named — never an unknown price shown as $0."""
    made = totals.completed - totals.cached - totals.failed
    if totals.unpriced and totals.unpriced >= made:
        return "cost unknown (no price data for the model)"
    known = f"${totals.cost:.4f}"
    return known + (f" + {totals.unpriced} call(s) of unknown price" if totals.unpriced
                    else "")


def print_totals(totals: RunTotals, noun: str = "calls") -> None:
    if totals.submitted:  # a batch submission: say what went out, not "0 calls"
        console.print(f"Submitted {totals.submitted} requests in provider batches this time.")
    requests = f"{totals.requests - totals.submitted} requests to the model" + (
        f", {totals.submitted} submitted in batches" if totals.submitted else "")
    console.print(
        f"{totals.completed} {noun} this time ({totals.cached} from the cache, "
        f"{requests}), {totals.already_done} done before; "
        f"{totals.unparseable} unparseable, {totals.failed} failed; "
        f"{totals.prompt_tokens + totals.completion_tokens:,} tokens" + (
            f" ({totals.reasoning_tokens:,} reasoning)" if totals.reasoning_tokens else "")
        + f", {cost_text(totals)}.")
    for error in totals.errors:
        console.print(f"[red]failed:[/] {escape(error)}", soft_wrap=True)


def exit_for(totals: RunTotals, rerun_hint: str = "run the same command again") -> None:
    """Exit 130 when interrupted, 1 when calls failed or the budget stopped the run;
    return when all is done."""
    if totals.interrupted:
        left = totals.total - totals.already_done - totals.completed
        how = "terminated (SIGTERM)" if totals.interrupted_by == signal.SIGTERM \
            else "interrupted"
        err_console.print(f"[yellow]{how}: {totals.already_done + totals.completed} of "
                          f"{totals.total} calls are saved, {left} left; {rerun_hint} to "
                          "resume.[/]", soft_wrap=True)
        sys.exit(128 + (totals.interrupted_by or signal.SIGINT))
    if totals.stopped_by:
        done = totals.already_done + totals.completed
        err_console.print(f"[bold red]error:[/] stopped: {escape(totals.stopped_by)}. {done} of "
                          f"{totals.total} calls are recorded ({totals.failed} of them failed "
                          f"and are tried again); {rerun_hint} to resume.", soft_wrap=True)
        sys.exit(1)
    if totals.stopped_by_budget:
        done = totals.already_done + totals.completed
        budget = f" ${totals.budget:g}" if totals.budget is not None else ""
        err_console.print(f"[yellow]stopped before passing --max-cost{budget}: "
                          f"{done} of {totals.total} calls are done. {rerun_hint.capitalize()}"
                          " with a higher --max-cost to continue.[/]", soft_wrap=True)
        sys.exit(1)
    if totals.in_batches:
        console.print(f"{totals.in_batches} calls are in provider batches; {rerun_hint} to "
                      "collect them (add --wait to poll until they are back), `fbi batch "
                      "status RUN` to see them, `fbi batch cancel RUN` to cancel.",
                      soft_wrap=True)
        return
    if totals.failed:
        err_console.print(f"[yellow]{totals.failed} calls failed; {rerun_hint} to retry "
                          "them.[/]")
        sys.exit(1)


def model_access_options(command):
    """--api-key, --rpm and --no-probe: how every command that calls a model reaches it."""
    options = [
        click.option("--api-key", envvar="FBI_API_KEY", show_envvar=True,
                     help="The provider's API key for this run; never written anywhere. "
                          "Default: the provider's own variable (e.g. OPENAI_API_KEY); a "
                          "server given by --api-base needs none."),
        click.option("--rpm", type=FiniteFloat(min=0, min_open=True),
                     help="At most N requests a minute, beside --concurrency."),
        click.option("--no-probe", is_flag=True,
                     help="Skip the one tiny call that checks model, key and server before "
                          "the run."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def reasoning_options(command):
    """--reasoning-effort and --thinking-budget: how hard a reasoning judge thinks."""
    options = [
        click.option("--reasoning-effort",
                     type=click.Choice(["minimal", "low", "medium", "high"]),
                     help="A reasoning model's effort (sent as reasoning_effort: OpenAI's "
                          "o-series and gpt-5, and what litellm maps it to for Anthropic "
                          "and Gemini). Its thinking is recorded apart from the reply and "
                          "never read for a verdict."),
        click.option("--thinking-budget", type=click.IntRange(min=1, max=1_000_000),
                     help="Tokens a model may think before it answers (sent as thinking: "
                          "{type: enabled, budget_tokens: N}, Anthropic's and Gemini's "
                          "through litellm). Leave room for the reply in --max-tokens."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def with_reasoning(model_args: tuple[tuple[str, object], ...], effort: str | None,
                   budget: int | None) -> tuple[tuple[str, object], ...]:
    """``model_args`` with --reasoning-effort and --thinking-budget as the parameters they
    send (recorded in run.json and the cache key as any --model-arg is); a --model-arg
    of the same name is a usage error, not a silent choice between the two."""
    args = dict(model_args)
    for name, value, option in (
            ("reasoning_effort", effort, "--reasoning-effort"),
            ("thinking", None if budget is None else
             {"type": "enabled", "budget_tokens": budget}, "--thinking-budget")):
        if value is None:
            continue
        if name in args and args[name] != value:
            raise click.UsageError(f"{option} and --model-arg {name}=... both set "
                                   f"{name}: give one")
        args[name] = value
    return tuple(sorted(args.items()))


def model_settings(model: str, api_bases: tuple[str, ...] | str | None = (), *,
                   concurrency: int = 8, timeout: float = 120.0, retries: int = 6,
                   max_cost: float | None = None, rpm: float | None = None,
                   no_probe: bool = False, temperature: float | None = None,
                   max_tokens: int | None = None, seed: int | None = None,
                   model_args: tuple[tuple[str, object], ...] = ()):
    """The ModelSettings of a command's model options (one --api-base, or several: a
    pool whose first names it)."""
    from fbi.settings import ModelSettings

    bases = (api_bases,) if isinstance(api_bases, str) else tuple(api_bases or ())
    return ModelSettings(
        model=model, api_base=bases[0] if bases else None,
        api_pool=bases if len(bases) > 1 else (), temperature=temperature,
        max_tokens=max_tokens, seed=seed, model_args=model_args, concurrency=concurrency,
        timeout_s=timeout, retries=retries, max_cost=max_cost, rpm=rpm,
        probe=not no_probe)


def model_client(settings, no_cache: bool, cache_path, api_key: str | None):
    """The ModelClient of a command: its settings, the response cache unless --no-cache,
    and --api-key (held in memory only)."""
    from fbi.cache import ResponseCache

    return settings.client(None if no_cache else ResponseCache(cache_path), api_key=api_key)


def batch_options(command):
    """--batch, --wait, --poll and --batch-fallback: provider batch APIs for the calls."""
    options = [
        click.option("--batch", is_flag=True,
                     help="Send the calls through the provider's batch API "
                          f"({batch_providers()}): about half the price, answers "
                          "within 24 h. Run the same command again to collect, or add "
                          "--wait."),
        click.option("--wait", is_flag=True,
                     help="With --batch: poll until every batch is back."),
        click.option("--poll", type=FiniteFloat(min=0.01, max=86_400), default=30.0,
                     show_default=True, help="With --batch --wait: seconds between polls."),
        click.option("--batch-fallback", type=click.Choice(["batch", "live"]),
                     default="batch", show_default=True,
                     help="A request that failed in 3 batches: record it as failed for the "
                          "next run (batch) or make it live."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def batch_of(batch: bool, wait: bool, poll: float, fallback: str, concurrency: int):
    """The BatchOptions of a command's batch options, or None without --batch."""
    from fbi.runs import BatchOptions

    if not batch:
        if wait:
            raise click.UsageError("--wait goes with --batch")
        return None
    return BatchOptions(wait=wait, poll_s=poll, fallback=fallback,  # type: ignore[arg-type]
                        concurrency=concurrency)


def print_blocks(blocks, draw=None) -> None:
    """fbi.report's terminal blocks: sentences (in red when they say something failed) and
    tables, drawn by ``draw`` (title, header, rows) or `rate_table`."""
    for block in blocks:
        if block.title or block.header:
            if draw is not None:
                console.print(draw(block.title, block.header, block.rows))
                continue
            for table in fitting_tables(block.title, block.header, block.rows,
                                        console.width):
                console.print(table)
        elif block.alert:  # (wrapped at the terminal's width, as every sentence is)
            console.print(f"[red]{escape(block.text)}[/]")
        else:
            console.print(escape(block.text))


_NUMBER_CELL = re.compile(r"^[\d.,%\-–\[\]() ]*$|^n/a$")


def rate_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """A table that fits 80 columns without cutting a name or a number: light rules, no
    padding at the edges, names (text columns) never wrapped and left-aligned, numbers
    right-aligned and folded onto a second line when they must; the LF/F/IF/R/SI legend
    beneath when it uses them."""
    from fbi.taxonomy import ability_legend

    legend = ability_legend({column.split(" ")[0] for column in header})
    # at least as wide as its title, which would otherwise wrap over a narrow table's
    # width ("Answer order" in a column of 23 characters)
    table = Table(title=title, caption=legend or None,
                  box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False,
                  min_width=len(title) or None)
    for number, column in enumerate(header):
        text = not all(_NUMBER_CELL.match(str(row[number])) for row in rows)
        words = [w for cell in (column, *(str(row[number]) for row in rows))
                 for w in cell.split()]
        # a name is never broken; a description of several words wraps between them
        described = text and any(" " in str(row[number]).strip() for row in rows)
        table.add_column(column, justify="left" if text else "right",
                         no_wrap=text and not described, overflow="fold",
                         min_width=max(map(len, words), default=1))
    for row in rows:
        table.add_row(*row)
    return table


def fitting_tables(title: str, header: list[str], rows: list[list[str]], width: int
                   ) -> list[Table]:
    """`rate_table`, or when even its narrowest form is wider than ``width``, several:
    its leading text columns (the row's names) in each, the other columns spread over
    them in order, each table as wide as fits — every number shown whole, none cropped."""
    import io

    from rich.console import Console

    def fits(columns: list[int]) -> bool:
        """Whether the table of these columns shows every word of every cell at
        ``width`` (rich crops a column it cannot fit, silently)."""
        cells = [[header[c] for c in columns]] + [[row[c] for c in columns] for row in rows]
        drawn = Console(width=width, file=io.StringIO(), record=True, color_system=None)
        drawn.print(rate_table(title, cells[0], cells[1:]))
        words = set(drawn.export_text().split())
        return all(word in words for line in cells for cell in line
                   for word in str(cell).split())

    every = list(range(len(header)))
    if fits(every):
        return [rate_table(title, header, rows)]
    keys = []
    for column in every[:2]:  # the names: the leading columns that hold text
        if all(_NUMBER_CELL.match(str(row[column])) for row in rows):
            break
        keys.append(column)
    groups: list[list[int]] = []
    for column in every[len(keys):]:
        if groups and fits(keys + groups[-1] + [column]):
            groups[-1].append(column)
        else:
            groups.append([column])
    return [rate_table(title if n == 0 else f"{title} (continued)" if title else "",
                       [header[c] for c in keys + group],
                       [[row[c] for c in keys + group] for row in rows])
            for n, group in enumerate(groups)]


#: --force: write into an --output folder that holds files fbi did not write.
force_option = click.option(
    "--force", is_flag=True,
    help="Write into an --output folder that holds files fbi did not write: beside them, "
         "never over them (without it such a folder is refused).")
replace_option = click.option(
    "--replace", is_flag=True,
    help="Replace the output file if it exists (without it an existing file is refused).")


class FiniteFloat(click.FloatRange):
    """A float option that must be a finite number in its range: click's FloatRange
    lets ``nan`` (every comparison is false) and ``inf`` through."""

    name = "finite float"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


#: Bounds of the integer options (a mistyped 10000000000 fails with a message, not later
#: with a traceback or a machine out of memory).
MAX_CONCURRENCY = 1024
MAX_RETRIES = 100
MAX_SAMPLES = 100
def parse_model_args(ctx, param, values: tuple[str, ...]) -> tuple[tuple[str, object], ...]:
    """KEY=VALUE pairs, VALUE as JSON where it parses (0.9, true, {"a": 1}), sorted; a
    NaN or infinity, or a parameter fbi sets itself, is refused before any call."""
    from fbi.errors import InputError
    from fbi.settings import RESERVED_MODEL_ARGS, parse_model_arg

    parsed: dict[str, object] = {}
    for item in values:
        try:
            key, value = parse_model_arg(item)
        except InputError as error:
            raise click.BadParameter(str(error).removeprefix("--model-arg ")) from None
        if key in RESERVED_MODEL_ARGS:
            raise click.BadParameter(f"{key!r} is set by its own option or by fbi; "
                                     f"--{key.replace('_', '-')} if there is one")
        parsed[key] = value
    return tuple(sorted(parsed.items()))


SEED = click.IntRange(min=-(2 ** 63), max=2 ** 63 - 1)

# The options every command that calls a model shares, declared once.
concurrency_option = click.option(
    "--concurrency", type=click.IntRange(min=1, max=MAX_CONCURRENCY), default=8,
    show_default=True, help="Calls in flight at once.")
timeout_option = click.option(
    "--timeout", type=FiniteFloat(min=1, max=86_400), default=120.0, show_default=True,
    help="Seconds per call.")
retries_option = click.option(
    "--retries", type=click.IntRange(min=0, max=MAX_RETRIES), default=6, show_default=True,
    help="Retries on 429, 5xx and time-outs (exponential backoff with jitter).")
max_cost_option = click.option(
    "--max-cost", type=FiniteFloat(min=0), help="Stop before spending more (USD).")
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Print calls, tokens and cost; call nothing.")
api_base_option = click.option(
    "--api-base", help="The model's server (an OpenAI-compatible URL: vLLM, TGI, ...).")


def cache_options(command):
    """--no-cache and --cache, as every model-calling command takes them."""
    command = click.option(
        "--cache", "cache_path", type=click.Path(dir_okay=False, path_type=Path),
        help="Response cache file (default $FBI_CACHE or ~/.cache/fbi/responses.sqlite).")(
        command)
    return click.option("--no-cache", is_flag=True,
                        help="Neither read nor write the response cache.")(command)
