"""`fbi batch status|cancel RUN`: the provider batches of a run started with --batch."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.table import Table

from fbi.cli._console import console

RUN_DIR = click.argument("run_dir", type=click.Path(file_okay=False, exists=True,
                                                    path_type=Path))
API_KEY = click.option("--api-key", envvar="FBI_API_KEY", show_envvar=True,
                       help="The provider's API key (default: its own variable).")


def _models(run_dir: Path) -> dict[str, str]:
    """Each model a run spec in the folder names, as fbi prints a judge (with its label)."""
    from fbi.runs import read_spec

    specs = [read_spec(path) for path in [run_dir / "run.json",
                                          *sorted(run_dir.glob("*.run.json"))]]
    return {spec.model: spec.judge_name for spec in specs if spec is not None}


def _batches(run_dir: Path, api_key: str | None):
    """(runner, batch record) for every batch recorded in the folder's *.batches.jsonl."""
    from fbi.errors import InputError
    from fbi.providers import ModelClient
    from fbi.runs import BatchOptions, BatchRunner, read_batches

    found = []
    client = ModelClient(api_key=api_key)
    for path in sorted(run_dir.glob("*.batches.jsonl")):
        for record in read_batches(path).values():
            runner = BatchRunner(path, client, record.model, record.api_base, BatchOptions())
            found.append((path.name, runner, record))
    if not found:
        raise InputError(f"{run_dir}: no batches here. Fix: pass the folder of a run started "
                         "with --batch (for perturb, the queue's folder)")
    return found


@click.group()
def batch() -> None:
    """Provider batches of a run started with `fbi evaluate --batch`."""


@batch.command()
@RUN_DIR
@API_KEY
def status(run_dir, api_key) -> None:
    """Each batch: its state at the provider now, and its request counts."""
    found = _batches(run_dir, api_key)
    names = _models(run_dir)
    models = sorted({names.get(record.model, record.model) for _, _, record in found})
    table = Table(title=f"Batches of {', '.join(models)} in {run_dir}", box=box.SIMPLE_HEAD)
    for column in ("log", "batch", "state", "requests", "done", "failed", "collected"):
        table.add_column(column, justify="left" if column in ("log", "batch", "state")
                         else "right", overflow="fold")
    for log, runner, record in found:
        done = failed = "–"
        state = record.status
        if not record.collected:
            live = runner.retrieve(record.batch_id)
            state = live.status
            if live.completed is not None:
                done, failed = str(live.completed), str(live.failed)
        else:
            failed = str(len(record.failed_ids))
            done = str(len(record.custom_ids) - len(record.failed_ids))
        if record.bad_lines:
            failed += f" ({record.bad_lines} unreadable)"
        table.add_row(log.removesuffix(".batches.jsonl"),
                      record.batch_id + (" (adopted)" if record.adopted else ""), state,
                      str(len(record.custom_ids)), done, failed,
                      "yes" if record.collected else "no")
    console.print(table)


@batch.command()
@RUN_DIR
@API_KEY
def cancel(run_dir, api_key) -> None:
    """Cancel every batch not yet back; the next run collects what they finished and
    submits the rest again."""
    open_batches = [(runner, record) for _, runner, record in _batches(run_dir, api_key)
                    if not record.collected]
    for runner, record in open_batches:
        console.print(f"{record.batch_id}: {runner.cancel(record.batch_id).status}")
    if not open_batches:
        console.print("no batch is open")
