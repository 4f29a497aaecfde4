"""`fbi publish`: write the Hub layout and a dataset card, then upload."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from fbi.cli._console import console
from fbi.cli._run import force_option

DRY_RUN_LICENSE = "cc-by-4.0"


@click.command()
@click.argument("dataset")
@click.option("--repo-id", required=True, help="ORG/NAME on the Hugging Face Hub.")
@click.option("--private", is_flag=True, help="Create the repo as private.")
@click.option("--create-pr", is_flag=True, help="Open a pull request instead of pushing.")
@click.option("--dry-run", is_flag=True, help="Write the folder only; upload nothing.")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write the folder (default: a temporary folder, or "
                   "./hub-NAME with --dry-run).")
@force_option
@click.option("--queue", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The vetting queue, for agreement figures in the card.")
@click.option("--license", "license_id",
              help="The licence the dataset is published under (a Hub identifier such as "
                   "cc-by-4.0): required to upload; a dry run assumes cc-by-4.0 and says so.")
def publish(dataset, repo_id, private, create_pr, dry_run, output, force, queue,
            license_id) -> None:
    """Publish DATASET (a vetted set, any SPEC) to the Hub as ORG/NAME."""
    from fbi.datasets import load_dataset
    from fbi.vet import upload, write_hub_folder

    if license_id is None:
        if not dry_run:
            raise click.UsageError("--license is required to upload: name the licence the "
                                   "dataset is published under, e.g. --license cc-by-4.0")
        license_id = DRY_RUN_LICENSE
        console.print(f"licence: {DRY_RUN_LICENSE} assumed for this dry run (the upload "
                      "needs --license)")
    loaded = load_dataset(dataset)
    agreement = vetting = None
    if queue is not None:
        from fbi.metrics import agreement_report
        from fbi.vet import labels_table, resolve

        resolutions = resolve(queue)
        agreement = agreement_report(labels_table(resolutions),
                                     {r.instance.id: r.instance.category for r in resolutions})
        vetting = {"candidates": len(resolutions)}
        for r in resolutions:  # how each was settled (or not): what the card may claim
            vetting[r.how] = vetting.get(r.how, 0) + 1
    if output is None:
        output = Path(f"hub-{repo_id.split('/')[-1]}") if dry_run else \
            Path(tempfile.mkdtemp(prefix="fbi-publish-"))
    files = write_hub_folder(loaded.instances, output, repo_id, license_id, agreement, vetting,
                             force)
    console.print(f"Wrote {len(files) - 1} Parquet files and the dataset card to {output} "
                  f"({len(loaded)} instances).")
    if dry_run:
        console.print("Dry run: nothing uploaded.")
        return
    url = upload(output, repo_id, private=private, create_pr=create_pr)
    console.print(f"Uploaded to {repo_id}: {url}")
