"""`fbi strategies` and `fbi categories`: what a run can be asked for, by name."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from fbi.cli._console import console


@click.command()
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also list the strategies of this template folder.")
def strategies(prompts_dir) -> None:
    """The evaluation strategies: name (for --strategy), the paper's name, paradigm,
    scale, template version and where the template comes from."""
    from fbi.judge import StrategyRegistry
    from fbi.taxonomy import strategy_order
    registry = StrategyRegistry(prompts_dir)
    names = strategy_order(registry.names())
    custom = any(registry.get(n).origin != "built-in" for n in names)
    # Fits 80 columns without folding a name: a light box, the version as "v".
    notes = ["v: template version"]
    table = Table(title="Strategies (fbi evaluate --strategy NAME, or all)",
                  box=box.SIMPLE_HEAD, show_edge=False)
    for column in ("name", "paper", "paradigm", "scale", "v", *(["origin"] if custom else [])):
        table.add_column(column, no_wrap=column != "origin", overflow="fold")
    for name in names:
        strategy = registry.get(name)
        meta = strategy.meta
        if meta.paradigm == "pairwise":
            scale = "A/B/tie/both bad"
        elif meta.reward:
            scale = "a reward"
        else:
            low, high = meta.score_range  # type: ignore[misc]
            scale = f"{low}–{high}"
            if meta.axis_score_ranges:
                scale += "*" * len(notes)
                notes.append("*" * len(notes) + f" {name}: " + ", ".join(
                    f"{axis} {a}–{b}" for axis, (a, b) in meta.axis_score_ranges.items()))
        table.add_row(name, meta.display_name, meta.paradigm, scale, strategy.version,
                      *([strategy.origin] if custom else []))
    table.caption = "; ".join(notes)
    console.print(table)


@click.command()
def categories() -> None:
    """The perturbation categories: id (for --category), ability, the paper's name and
    what the planted error is."""
    from fbi.taxonomy import CATEGORIES

    table = Table(title="Categories (fbi evaluate --category ID)", box=box.SIMPLE_HEAD,
                  show_edge=False)
    # the id with what the error is beneath it: at 80 columns a fourth column of
    # descriptions would be a few letters wide
    table.add_column("id: what the error is", min_width=max(len(c.name) for c in CATEGORIES))
    table.add_column("ability", no_wrap=True)
    table.add_column("paper", no_wrap=True)
    for category in CATEGORIES:
        ability = category.ability.short if category.ability else "any"
        paper = category.display_name + (" †" if category.extra else "")
        table.add_row(f"[bold]{category.name}[/]\n{escape(category.description)}", ability,
                      paper)
    table.caption = ("LF long-form, F factual, IF instruction following, R reasoning; "
                     "† outside the paper's 22: the release's extras, and fbi's "
                     "manipulations (text added to a perturbed answer to sway the judge)")
    console.print(table)
