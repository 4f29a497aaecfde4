"""`fbi cache info|prune|clear`: the response cache, seen and trimmed."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich import box
from rich.table import Table

from fbi.cli._console import console
from fbi.cli._run import FiniteFloat

CACHE_OPTION = click.option(
    "--cache", "cache_path", type=click.Path(dir_okay=False, path_type=Path),
    help="Response cache file (default $FBI_CACHE or ~/.cache/fbi/responses.sqlite).")


def _open(cache_path: Path | None):
    from fbi.cache import ResponseCache, default_cache_path
    from fbi.errors import InputError

    path = cache_path or default_cache_path()
    if not path.exists():
        raise InputError(f"{path}: no response cache here yet. Fix: run a command that calls "
                         "a model first, or pass the right --cache FILE")
    return ResponseCache(path)


@click.group()
def cache() -> None:
    """The response cache every run shares: what it holds, and trimming it."""


@cache.command()
@CACHE_OPTION
def info(cache_path) -> None:
    """The cache file, its size, and its entries per model with their ages."""
    summary = _open(cache_path).info()
    size = summary["bytes"]
    console.print(f"{summary['path']}: {summary['rows']:,} responses, "
                  + (f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"),
                  soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD)
    for column, justify in (("model", "left"), ("responses", "right"), ("oldest", "right"),
                            ("newest", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for row in summary["models"]:
        table.add_row(row["model"], f"{row['rows']:,}", _age(row["oldest"]),
                      _age(row["newest"]))
    console.print(table)


@cache.command()
@CACHE_OPTION
@click.option("--older-than", "older_than_days", type=FiniteFloat(min=0),
              metavar="DAYS", help="Delete the responses stored more than DAYS ago.")
@click.option("--model", help="Delete the responses of this model (as `fbi cache info` "
                              "names it).")
def prune(cache_path, older_than_days, model) -> None:
    """Delete old responses, or one model's (both options: those matching both)."""
    if older_than_days is None and model is None:
        raise click.UsageError("give --older-than DAYS, --model MODEL or both")
    deleted = _open(cache_path).prune(older_than_days, model)
    console.print(f"deleted {deleted:,} responses")


@cache.command()
@CACHE_OPTION
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def clear(cache_path, yes) -> None:
    """Delete every response: the next runs call their models again."""
    store = _open(cache_path)
    if not yes:
        click.confirm(f"Delete all {len(store):,} responses in {store.path}?", abort=True)
    console.print(f"deleted {store.clear():,} responses")


def _age(stamp: float | None) -> str:
    if stamp is None:
        return "–"
    days = (time.time() - stamp) / 86400
    return f"{days:.1f} days ago" if days >= 1 else f"{days * 24:.1f} hours ago"
