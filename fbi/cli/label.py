"""`fbi label`: people's verdicts on a run's instances, for `--human` (fbi.trust)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._agreement import print_agreement
from fbi.cli._console import console
from fbi.errors import InputError


@click.command()
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The labels file (CSV, read by --human as it is); the same command "
                   "continues it.")
@click.option("--annotator", required=True, help="Your name, kept with each label.")
@click.option("--plan", type=click.Choice(["stratified", "uniform"]), default="stratified",
              show_default=True,
              help="The order items are shown in: stratified by category and the judge's "
                   "confidence (or verdict), or uniform; either way any prefix is a sample "
                   "`fbi trust` may use without weights.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds the order and which answer is shown first.")
@click.option("--agreement", is_flag=True,
              help="Only print the annotators' agreement on the items several labelled.")
def label(run_dirs, output, annotator, plan, seed, agreement) -> None:
    """Label the instances of RUN_DIR… (judge runs of one dataset) one key at a time: the
    question and the two answers in a seeded order, never the judge's verdict. Every
    label is saved as it is given; quit at any time and run the same command to go on.
    Several annotators label the same order into one file; --agreement compares them."""
    from fbi.runs import load_run
    from fbi.trust import LabelFile, label_plan

    labels = LabelFile(output, plan, seed)  # (a file fbi cannot use is said first)
    runs = [load_run(folder, full=False) for folder in run_dirs]
    instances = {i: inst for run in runs for i, inst in run.instances.items()}
    unknown = sorted({r.instance_id for r in labels.rows} - set(instances))
    if unknown:
        raise InputError(f"--output {output}: labels instance {unknown[0]!r}, which no run "
                         f"given holds ({len(unknown)} such). Fix: give the runs these "
                         "labels were made on, or a new --output")
    if agreement:
        _agreement(labels, instances, output)
        return
    from fbi.annotate.labelling import LabelItem, LabellingApp, gold_first

    order = label_plan(runs, plan, seed)
    console.print(f"order: {order.rule}", soft_wrap=True)
    items = [LabelItem(instances[i], gold_first(i, seed)) for i in order.order]
    app = LabellingApp(items, labels, annotator)
    app.run()
    done = len(labels.labelled_by(annotator))
    console.print(f"{escape(annotator)}: {app.added} labels this time, {done} of "
                  f"{len(items)} in all, saved in {escape(str(output))}", soft_wrap=True)
    if len({r.annotator for r in labels.rows}) > 1:
        _agreement(labels, instances, output)


def _agreement(labels, instances, output) -> None:
    from fbi.metrics import agreement_report

    table: dict[str, dict[str, str]] = {}
    for row in labels.rows:
        table.setdefault(row.annotator, {})[row.instance_id] = row.verdict
    report = agreement_report(table, {i: inst.category for i, inst in instances.items()})
    if not report.pairs and report.overall.items == 0:
        console.print("No item has labels from two annotators yet.")
        return
    print_agreement(report, f"Agreement on {output}")
