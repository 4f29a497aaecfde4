"""`fbi batch status|cancel RUN`: the provider batches of a run started with --batch."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

console = Console(highlight=False)

RUN_DIR = click.argument("run_dir", type=click.Path(file_okay=False, exists=True,
                                                    path_type=Path))
API_KEY = click.option("--api-key", envvar="FBI_API_KEY", show_envvar=True,
                       help="The provider's API key (default: its own variable).")


def _runner(run_dir: Path, api_key: str | None):
    from fbi.errors import InputError
    from fbi.llm import ModelClient
    from fbi.runs import BatchOptions, BatchRunner, read_batches, read_spec

    spec = read_spec(run_dir / "run.json")
    batches = read_batches(run_dir)
    if spec is None or not batches:
        raise InputError(f"{run_dir}: no batches here. Fix: pass a run folder written by "
                         "`fbi evaluate --batch`")
    runner = BatchRunner(run_dir, ModelClient(api_key=api_key), spec.model, spec.api_base,
                         BatchOptions())
    return runner, batches


@click.group()
def batch() -> None:
    """Provider batches of a run started with `fbi evaluate --batch`."""


@batch.command()
@RUN_DIR
@API_KEY
def status(run_dir, api_key) -> None:
    """Each batch: its state at the provider now, and its request counts."""
    runner, batches = _runner(run_dir, api_key)
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("batch", "state", "requests", "done", "failed", "collected"):
        table.add_column(column, justify="left" if column in ("batch", "state") else "right",
                         overflow="fold")
    for record in batches.values():
        done = failed = "–"
        state = record.status
        if not record.collected:
            live = runner.retrieve(record.batch_id)
            state = live.status
            counts = getattr(live, "request_counts", None)
            if counts is not None:
                done, failed = str(counts.completed), str(counts.failed)
        else:
            failed = str(len(record.failed_ids))
            done = str(len(record.custom_ids) - len(record.failed_ids))
        table.add_row(record.batch_id, state, str(len(record.custom_ids)), done, failed,
                      "yes" if record.collected else "no")
    console.print(table)


@batch.command()
@RUN_DIR
@API_KEY
def cancel(run_dir, api_key) -> None:
    """Cancel every batch not yet back; the next run collects what they finished and
    submits the rest again."""
    runner, batches = _runner(run_dir, api_key)
    open_batches = [b for b in batches.values() if not b.collected]
    for record in open_batches:
        state = runner.cancel(record.batch_id)
        console.print(f"{record.batch_id}: {state.status}")
    if not open_batches:
        console.print("no batch is open")
