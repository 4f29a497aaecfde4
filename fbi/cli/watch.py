"""`fbi watch`: a drift alarm over a deployed judge (fbi.watch)."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._bundles import calls_bundle
from fbi.cli._console import console
from fbi.cli._run import (
    FiniteFloat,
    RichProgress,
    exit_for,
    fitting_tables,
    force_option,
)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
#: The longest wait between steps: a year. Past it no schedule means anything, and the
#: operating system's timers overflow (a step would run, then the wait die).
LONGEST_EVERY_S = 366 * 86_400
#: The shortest: a second (a step takes longer than that anyway).
SHORTEST_EVERY_S = 1


def parse_every(ctx, param, value: str | None) -> float | None:
    """``--every 90s | 10m | 1h | 1d`` in seconds, between a second and a year."""
    if value is None:
        return None
    match = re.fullmatch(r"\s*([0-9]{1,12}(?:\.[0-9]{1,6})?)\s*([smhd])\s*", value)
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else 0.0
    if not SHORTEST_EVERY_S <= seconds <= LONGEST_EVERY_S:
        raise click.BadParameter(f"{value!r}: give a duration from 1s to 366d, such as 90s, "
                                 "10m, 1h or 1d")
    return seconds


@click.command()
@click.argument("suite")
@click.option("--judge", required=True, help="The judge to watch (a model string).")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The watch's folder: its calls, and watch.jsonl (one line a step). The "
                   "same command continues the watch.")
@click.option("--strategy", "strategies", multiple=True,
              help="Strategies to ask (repeatable). Default: the judge kind's (vanilla).")
@click.option("--canary", "per_category", type=click.IntRange(min=1), default=10,
              show_default=True, help="Canary instances per category of SUITE; a step "
                                      "asks each category this many judgments.")
@click.option("--alpha", type=FiniteFloat(min=0, max=1, min_open=True, max_open=True),
              default=0.01, show_default=True,
              help="The chance of a false alarm over the watch's whole life, however long "
                   "it runs.")
@click.option("--every", callback=parse_every,
              help="Ask a step every DURATION (90s, 10m, 1h, 1d) until the alarm or Ctrl-C. "
                   "Without it, one step per invocation (for cron).")
@click.option("--steps", type=click.IntRange(min=1),
              help="At most this many steps in this invocation.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds the canary and each step's draws.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="A folder of strategies of your own (as `fbi evaluate --prompts`).")
@click.option("--api-base", "api_bases", multiple=True,
              help="Base URL of the judge's server (repeat it for a pool).")
@calls_bundle
@force_option
def watch(suite, judge, output, strategies, per_category, alpha, every, steps, seed,
          prompts_dir, api_bases, calls, force) -> None:
    """Ask JUDGE a canary set of SUITE and add the step to OUTPUT/watch.jsonl; exit 1 when
    the alarm is raised (the judge's failure rate on some category changed, with a
    chance of a false alarm at most --alpha over unlimited steps), 0 when not, 2 on bad
    input. Never answered from the response cache."""
    from fbi.datasets import load_dataset
    from fbi.watch import WatchConfig, watch

    settings = calls.settings(judge, api_bases)
    config = WatchConfig(settings, tuple(strategies), per_category, alpha, seed, prompts_dir)
    canary_suite = load_dataset(suite)
    client = calls.client(settings)  # never the response cache
    done = 0
    while True:
        totals, step = watch(canary_suite, output, config, client=client, force=force,
                             progress=RichProgress("asking the canary"))
        exit_for(totals, "run the same watch command again")
        if step is None:  # (exit_for has said why and exited; a guard, never a pass)
            sys.exit(1)
        _print(step)
        done += 1
        if step.alarm:
            console.print(f"wrote {output / 'watch.jsonl'}")
            sys.exit(1)
        if (steps is not None and done >= steps) or (every is None and steps is None):
            return
        if every is not None:
            console.print(f"next step in {every:g} s (Ctrl-C ends the watch; the same "
                          "command continues it)")
            time.sleep(every)


def _print(step) -> None:
    line = (f"step {step.step}: E = {step.e_value:.3g} (the alarm sounds at "
            f"{1 / step.alpha:g}), {step.calls} calls")
    if not step.alarm:
        console.print(f"[green]{escape(line)} — no change seen[/]")
        return
    console.print(f"[bold red]{escape(line)} — ALARM (first raised at step "
                  f"{step.first_alarm})[/]")
    header = ["strategy", "category", "E", "since step", "failures before",
              "failures since"]
    rows = [[escape(stream.strategy), escape(stream.category), f"{stream.e_value:.3g}",
             str(stream.change_step or "–"), _share(stream.rate_before),
             _share(stream.rate_after)]
            for stream in sorted(step.streams, key=lambda s: -s.e_value)[:10]]
    for table in fitting_tables("Where the judge changed", header, rows, console.width):
        console.print(table)


def _share(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.0f}%"
