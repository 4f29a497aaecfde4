"""`fbi trajectories`: agents' trajectories read, checked and perturbed (fbi.trajectories,
fbi.perturb)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from fbi.cli._console import console
from fbi.cli._run import SEED, replace_option
from fbi.cli.perturb import split_names

#: ``--input sample``: the built-in gold trajectories.
SAMPLE = "sample"


def read_spec(spec: str):
    """The trajectories of a file, or the built-in sample for ``sample``."""
    from fbi.trajectories import read_trajectories, sample_trajectories

    return sample_trajectories() if spec == SAMPLE else read_trajectories(spec)


@click.group()
def trajectories() -> None:
    """Agents' trajectories: read and check them, plant errors in them."""


@trajectories.command()
@click.argument("spec", default=SAMPLE)
def validate(spec) -> None:
    """Read SPEC (a .jsonl or .json file in fbi's, OpenAI's, Anthropic's or τ-bench's
    layout, or `sample`) and say what it holds; exit 2 naming the record and step of
    the first broken trajectory."""
    found = read_spec(spec)
    by_domain = Counter(t.domain or "(none)" for t in found)
    console.print(f"{escape(spec)}: {len(found)} trajectories, "
                  f"{sum(len(t.steps) for t in found)} steps, "
                  f"{sum(len(s.calls) for t in found for s in t.steps)} tool calls; "
                  + ", ".join(f"{escape(d)} {n}" for d, n in sorted(by_domain.items())))


@trajectories.command()
@click.option("--input", "input_spec", default=SAMPLE, show_default=True,
              help="Gold trajectories: a file (fbi's, OpenAI's, Anthropic's or τ-bench's "
                   "layout; τ-bench's reward-1 runs only) or `sample`.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The vetting queue to write (.jsonl).")
@click.option("--categories", multiple=True, callback=split_names,
              help="trajectory/KIND or score-invariant/KIND (comma-separated or repeated). "
                   "Default: every rule.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@replace_option
def perturb(input_spec, output, categories, seed, replace) -> None:
    """Plant one error (or a score-invariant rewrite) in each gold trajectory, by rules,
    and write the candidates as a vetting queue (`fbi annotate`, `fbi evaluate
    --dataset`): each candidate's rationale names the step changed."""
    from fbi.datasets import write_dataset
    from fbi.errors import InputError
    from fbi.outputs import claim_file
    from fbi.perturb import trajectory_candidates, trajectory_categories
    from fbi.trajectories import gold_only

    known = trajectory_categories()
    unknown = [c for c in categories if c not in known]
    if unknown:
        from fbi.taxonomy import unknown_name_message

        raise InputError(unknown_name_message("trajectory category", unknown[0], known))
    claim_file(output, replace)
    gold = gold_only(read_spec(input_spec))
    made, declined = trajectory_candidates(gold, list(categories) or known, seed)
    if not made:
        raise InputError(f"{input_spec}: no rule could edit these trajectories "
                         f"({declined[0] if declined else 'none given'})")
    write_dataset(made, output)
    table = Table(title=f"{len(made)} candidates from {len(gold)} gold trajectories")
    for column in ("category", "made", "declined"):
        table.add_column(column, justify="left" if column == "category" else "right")
    made_by = Counter(i.id.rsplit(":", 1)[1] for i in made)  # (ids end ":CATEGORY")
    refused = Counter(line.split(" × ")[1].split(":")[0] for line in declined)
    for category in list(categories) or known:
        table.add_row(escape(category), str(made_by[category]), str(refused[category]))
    console.print(table)
    console.print(f"wrote {escape(str(output))}; vet it with `fbi annotate {escape(str(output))}"
                  " --annotator NAME`", soft_wrap=True)

