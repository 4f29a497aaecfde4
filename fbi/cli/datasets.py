"""`fbi datasets show|validate|convert`."""

from __future__ import annotations

import sys
from collections import Counter

import click
from rich.markup import escape
from rich.table import Table

from fbi.cli._console import console
from fbi.cli._run import replace_option
from fbi.datasets import SAMPLE, load_dataset, validate_dataset, write_dataset
from fbi.taxonomy import CATEGORIES, SCORE_INVARIANT, Ability, get_category


@click.group()
def datasets() -> None:
    """Inspect, check and convert datasets (SPEC: sample, a file, a folder or hf:ORG/NAME)."""


@datasets.command()
@click.argument("spec", default=SAMPLE)
def show(spec: str) -> None:
    """Counts per ability and category of SPEC."""
    dataset = load_dataset(spec)
    console.print(counts_table(dataset.instances, title=f"{spec}"))
    console.print(f"Read {dataset.rows_read} rows from {len(dataset.files)} file(s); "
                  f"loaded {len(dataset)} instances.")


def counts_table(instances, title: str) -> Table:
    """A rich table of instances per ability and category, in the paper's order."""
    by_category = Counter(i.category for i in instances)
    by_si_ability = Counter(i.ability for i in instances if i.category == SCORE_INVARIANT)
    table = Table(title=title)
    table.add_column("ability")
    table.add_column("category (id)")
    table.add_column("instances", justify="right")
    main_total, main_categories = 0, 0
    for ability in Ability:
        for category in CATEGORIES:  # (a preference set's subsets follow below)
            if category.ability is ability and by_category[category.name]:
                name = f"{category.display_name} ({category.name})"
                table.add_row(ability.value, name, str(by_category[category.name]))
                if not category.extra:
                    main_total += by_category[category.name]
                    main_categories += 1
    if by_category[SCORE_INVARIANT]:
        for ability in Ability:
            if by_si_ability[ability]:
                table.add_row(SCORE_INVARIANT, f"on {ability.value} prompts",
                              str(by_si_ability[ability]))
        main_total += by_category[SCORE_INVARIANT]
    pairs = sorted((name, n) for name, n in by_category.items()
                   if get_category(name).family == "preference")
    for name, n in pairs:  # a preference set: its subsets, beside the taxonomy
        table.add_row(Ability.PREFERENCE.value, name, str(n))
    table.add_section()
    if main_total or not pairs:
        held = ["the 22 categories" if main_categories == 22 else
                f"{main_categories} of the 22 categories"] if main_categories else []
        held += ["score-invariant"] if by_category[SCORE_INVARIANT] else []
        table.add_row("", f"[bold]total ({' + '.join(held) or 'nothing of the 22'})[/]",
                      f"[bold]{main_total}")
    if pairs:
        table.add_row("", "[bold]preference pairs[/]", f"[bold]{sum(n for _, n in pairs)}")
    extra = len(instances) - main_total - sum(n for _, n in pairs)
    if extra:
        table.add_row("", "extra categories (not among the 22)", str(extra))
    return table


@datasets.command()
@click.argument("spec", default=SAMPLE)
def validate(spec: str) -> None:
    """List every problem in SPEC, with file and line or row. Exit code 2 if any."""
    result = validate_dataset(spec)
    for problem in result.problems:
        console.print(escape(str(problem)), soft_wrap=True)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(str(warning))}", soft_wrap=True)
    summary = (f"Read {result.rows_read} rows from {len(result.files)} file(s): "
               f"{len(result.instances)} valid, {len(result.problems)} problem(s)"
               + (f", {len(result.warnings)} warning(s)." if result.warnings else "."))
    if result.problems:
        console.print(f"[red]{summary}[/]")
        sys.exit(2)
    console.print(f"[green]{summary}[/]")


@datasets.command()
@click.argument("spec")
@click.argument("out", type=click.Path(dir_okay=False))
@replace_option
def convert(spec: str, out: str, replace: bool) -> None:
    """Convert SPEC to OUT (.jsonl, .csv, .tsv or .parquet, chosen by the suffix)."""
    from fbi.outputs import claim_file

    claim_file(out, replace, "OUT")
    dataset = load_dataset(spec)
    path = write_dataset(dataset.instances, out)
    console.print(f"Read {dataset.rows_read} rows; wrote {len(dataset)} instances to {path}.")
