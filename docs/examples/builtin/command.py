"""`fbi gold-audit`: ask a model whether each gold answer of a dataset is correct (the
command of docs/contributing.md's built-in example: a thin click function over the stage,
its shared options one bundle each)."""

from __future__ import annotations

from pathlib import Path

import click

from fbi.cli._bundles import cache_bundle, calls_bundle
from fbi.cli._run import RichProgress, api_base_option, exit_for, print_totals


@click.command("gold-audit")
@click.option("--judge", required=True, help="The model that audits the gold answers.")
@click.option("--dataset", "dataset_spec", default="quick", show_default=True,
              help="The dataset whose gold answers are audited.")
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The run folder; the same command resumes it.")
@api_base_option
@calls_bundle
@cache_bundle
def gold_audit(judge, dataset_spec, output, api_base, calls, cache) -> None:
    """Ask JUDGE whether each gold answer of the dataset is correct."""
    from fbi.audit import GoldAuditStage

    from fbi.datasets import load_dataset

    settings = calls.settings(judge, api_base)
    stage = GoldAuditStage(load_dataset(dataset_spec), settings, output)
    totals = stage.run(calls.client(settings, cache), RichProgress("auditing"))
    print_totals(totals)
    exit_for(totals)
