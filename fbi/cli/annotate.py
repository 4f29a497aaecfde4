"""`fbi annotate`: the vetting TUI, agreement, adjudication and export."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from fbi.cli._agreement import print_agreement
from fbi.cli._console import console, print_command
from fbi.files import read_text


class AnnotateGroup(click.Group):
    """`fbi annotate QUEUE --annotator NAME` runs the TUI; named subcommands do the rest."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["label", *args]
        return super().parse_args(ctx, args)


@click.group(cls=AnnotateGroup)
def annotate() -> None:
    """Vet a queue: `fbi annotate QUEUE --annotator NAME` opens the labelling tool.

    \b
    Also: fbi annotate agreement QUEUE
          fbi annotate adjudicate QUEUE --adjudicator NAME
          fbi annotate export QUEUE --output FILE
    """


@annotate.command("label")
@click.argument("queue", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--annotator", required=True, help="Your name; your labels go to your own log.")
@click.option("--guidelines", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A Markdown file shown with g (default: the built-in guidelines).")
@click.option("--only", type=click.Choice(["unlabelled", "flagged"]),
              help="Only items you have not labelled, or items with pre-screen flags.")
@click.option("--category", "categories", multiple=True,
              help="Only these categories (repeatable; manipulation/* for every kind).")
def label(queue, annotator, guidelines, only, categories) -> None:
    """Open the labelling tool on QUEUE."""
    from fbi.annotate.app import VettingApp, default_guidelines
    from fbi.taxonomy import categories_named
    from fbi.vet import AnnotatorLog, load_queue

    items = load_queue(queue)
    log = AnnotatorLog(queue, annotator)
    wanted = {name for c in categories for name in categories_named(c)}
    state = log.state
    items = [i for i in items if (not wanted or i.category in wanted)
             and (only != "flagged" or i.flags)
             and (only != "unlabelled" or not (i.id in state and state[i.id].label))]
    text = read_text(guidelines) if guidelines else default_guidelines()
    VettingApp(items, log, text).run()
    done = sum(1 for i in items if i.id in log.state and log.state[i.id].label)
    console.print(f"{done} of {len(items)} items labelled by {annotator}; saved in {log.path}")


@annotate.command()
@click.argument("queue", type=click.Path(dir_okay=False, exists=True, path_type=Path))
def agreement(queue) -> None:
    """Agreement between annotators: overall and per category."""
    from fbi.metrics import agreement_report
    from fbi.vet import labels_table, resolve

    resolutions = resolve(queue)
    report = agreement_report(labels_table(resolutions),
                              {r.instance.id: r.instance.category for r in resolutions})
    if not report.pairs and report.overall.items == 0:
        console.print("No item has labels from two annotators yet.")
        return
    print_agreement(report, f"Agreement on {queue}")


@annotate.command()
@click.argument("queue", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--adjudicator", required=True)
@click.option("--include-not-sure", is_flag=True, default=True, show_default=True,
              help="Also settle items labelled 'not sure' by every annotator.")
def adjudicate(queue, adjudicator, include_not_sure) -> None:
    """Settle disagreements one by one: see each label, choose the final one."""
    from fbi.logs import append_durably
    from fbi.records import VettingLabel
    from fbi.taxonomy import get_category
    from fbi.vet import LABEL_KEYS, Adjudication, adjudications_path, resolve

    todo = [r for r in resolve(queue) if r.how == "disagreement" or (
        include_not_sure and r.final is VettingLabel.NOT_SURE and r.how != "adjudicated")]
    if not todo:
        console.print("Nothing to adjudicate: every labelled item is settled.")
        return
    path = adjudications_path(queue)
    keys = {key: label for key, (label, _) in LABEL_KEYS.items()}  # as in the vetting TUI
    for number, r in enumerate(todo, start=1):
        console.rule(f"{number} of {len(todo)} · {r.instance.id} · "
                     f"{get_category(r.instance.category).display_name}")
        console.print(f"[b]Instruction[/b]\n{escape(r.instance.question)}\n")
        console.print(f"[b]Gold[/b]\n{escape(r.instance.gold_answer)}\n")
        answer = r.edited_answer or r.instance.perturbed_answer
        console.print(f"[b]Perturbed[/b]\n{escape(answer)}\n")
        console.print(f"[b]Rationale[/b] {escape(r.instance.rationale or '(none)')}")
        for name, given in sorted(r.labels.items()):
            console.print(f"  {escape(name)}: [b]{given}[/b]")
            if name in r.notes:
                console.print(f"    note: {escape(r.notes[name])}")
            if name in r.edits:
                console.print(f"    edited the perturbed answer to:\n{escape(r.edits[name])}")
        choice = click.prompt(
            " ".join(f"{k}={v}" for k, v in keys.items()) + "  Enter=skip  q=quit",
            type=click.Choice([*keys, "", "q"]), default="", show_choices=False,
            show_default=False)
        if choice == "q":
            break
        if choice == "":
            continue
        append_durably(path, Adjudication(instance_id=r.instance.id, adjudicator=adjudicator,
                                          final_label=keys[choice], labels_seen=r.labels))
        console.print(f"recorded: {keys[choice]}")
    console.print(f"Adjudications are in {path}")


@annotate.command()
@click.argument("queue", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The vetted dataset (.jsonl or .parquet).")
def export(queue, output) -> None:
    """Write the vetted dataset: final labels, edits applied, rejected items counted."""
    from fbi.datasets import write_dataset
    from fbi.vet import resolve, vetted_instances

    resolutions = resolve(queue)
    kept, tally = vetted_instances(resolutions)
    write_dataset(kept, output)
    table = Table(title=f"{len(kept)} of {len(resolutions)} instances kept in {output}")
    table.add_column("kept by category")
    table.add_column("n", justify="right")
    for category, n in sorted(tally.kept.items()):
        table.add_row(category, str(n))
    table.add_section()
    for reason, n in sorted(tally.dropped.items()):
        table.add_row(f"dropped: {reason}", str(n))
    console.print(table)
    console.print(f"{tally.edited} kept instance{'s carry' if tally.edited != 1 else ' carries'}"
                  " an annotator's edit.")
    unsettled = tally.dropped["disagreement"] + tally.dropped["not-sure"]
    if unsettled:
        are = "items are" if unsettled != 1 else "item is"
        print_command(f"{unsettled} {are} unsettled; to decide them:",
                      f"fbi annotate adjudicate {queue} --adjudicator NAME", "yellow")
