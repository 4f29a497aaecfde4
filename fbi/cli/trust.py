"""`fbi trust`: when a judge can be trusted without a person (fbi.trust)."""

from __future__ import annotations

from pathlib import Path

import click

from fbi.cli._console import console
from fbi.cli._run import force_option, print_blocks


@click.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(file_okay=False, exists=True,
                                                      path_type=Path))
@click.option("--human", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              required=True, help="Human labels of some of the instances (as `fbi report "
                                  "--human`: instance_id, verdict a|b|tie, annotator).")
@click.option("--human-authors", is_flag=True,
              help="With MT-Bench's human judgments: count the paper's authors (judge "
                   "author_*) as people too; FastChat's compute_agreement counts only the "
                   "experts.")
@click.option("--target", type=float, default=0.8, show_default=True,
              help="The agreement with people to guarantee, in (0, 1).")
@click.option("--delta", type=float, default=0.1, show_default=True,
              help="The guarantee holds with probability at least 1 − delta.")
@click.option("--confidence", type=click.Choice(["auto", "samples", "logprob", "jury"]),
              default="auto", show_default=True,
              help="The judge's confidence: agreement of its --samples askings, the "
                   "probability of its verdict (--logprobs), or several judges' agreement "
                   "(jury: give their runs). auto: jury for several runs, else samples, "
                   "else logprob.")
@click.option("--judge", "cascade", multiple=True,
              type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Repeatable: the runs of a cascade, cheapest judge first; each item "
                   "goes to the next judge when the one before is below its threshold.")
@click.option("--test-share", type=float, default=0.5, show_default=True,
              help="Share of the labelled instances held out to check the threshold.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds the calibration / test split.")
@click.option("--min-items", type=int, default=30, show_default=True,
              help="Thresholds with fewer calibration items at or above them are not tried.")
@click.option("--width", type=float, default=0.1, show_default=True,
              help="The labelling planner's target interval width.")
@click.option("--grid", type=click.Choice(["auto", "multistart", "coarse", "distinct",
                                           "authors"]),
              default="auto", show_default=True,
              help="The thresholds the fixed sequence tries: multistart (one every "
                   "--min-items items, from several starts at δ split among them), coarse "
                   "(the same, one start), every distinct confidence, or the Trust-or-"
                   "Escalate authors' 5,000 evenly spaced points. auto: multistart for a "
                   "continuous confidence, else distinct.")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Write trust.json into this folder.")
@force_option
def trust(run_dirs, human, human_authors, target, delta, confidence, cascade, test_share,
          seed, min_items, width, grid, output, force) -> None:
    """From judge runs and human labels to a decision: the confidence threshold above
    which the judge agrees with people at ≥ TARGET with probability ≥ 1 − DELTA
    (fixed-sequence testing with exact binomial bounds, "Trust or Escalate"), the share of items
    it then judges alone, cascades of judges, the judge's estimates corrected by the
    labels (PPI++, plug-in), and how many more labels would settle it. Reads stored runs
    only: no model call."""
    from fbi.report import trust_blocks, write_trust
    from fbi.trust import HumanSource, TrustSettings
    from fbi.trust import trust as run_trust

    settings = TrustSettings(target, delta, confidence, test_share, seed, min_items, width,
                             grid)
    report = run_trust(run_dirs, HumanSource(human, human_authors), settings=settings,
                       cascade=cascade)
    print_blocks(trust_blocks(report))
    if output is not None:
        console.print(f"wrote {write_trust(report, output, force)}")
