"""`fbi export`: runs in other tools' formats — Inspect eval logs (fbi.interop), Label
Studio tasks (fbi.trust)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from fbi.cli._console import console
from fbi.cli._run import force_option


@click.group()
def export() -> None:
    """Runs in other tools' formats."""


@export.command("inspect")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write the logs into (one per run, named after its label).")
@force_option
@click.option("--format", "log_format", type=click.Choice(["eval", "json"]), default="eval",
              show_default=True, help="Inspect's log format.")
@click.option("--prompts", "prompts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="The template folder of a custom strategy, if it has moved.")
@click.option("--system-prompt", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The system prompt file the run was given, if any.")
def inspect_(run_dirs, output, force, log_format, prompts_dir, system_prompt) -> None:
    """Write judge runs as Inspect eval logs, so `inspect view` and `read_eval_log` show
    each judgment as a sample: its messages (re-rendered and checked against the
    recorded hash), the judge's reply and usage, the outcome as the score, the FBI
    category and strategy as metadata. Needs the inspect extra."""
    from fbi.cli.evaluate import read_system_prompt
    from fbi.interop import export_inspect

    written = export_inspect(run_dirs, output, force, prompts_dir,
                             read_system_prompt(system_prompt), log_format)
    for path in written:
        console.print(f"wrote {escape(str(path))}", highlight=False)
    console.print(f"open them with: inspect view --log-dir {escape(str(output))}",
                  highlight=False)


@export.command("label-studio")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The folder to write tasks.json and label_config.xml into.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds which slot (A or B) holds the gold answer, per instance.")
@force_option
def label_studio(run_dirs, output, seed, force) -> None:
    """Write the runs' instances as Label Studio tasks (question, answers A and B, never
    the judge's verdict) and the labeling config to import with them; Label Studio's JSON
    export of the labelled tasks is read by `fbi trust --human` and `fbi report --human`
    as it is."""
    import json
    import secrets

    from fbi.outputs import claim_folder, mark_written, write_atomically
    from fbi.runs import load_run
    from fbi.trust import LABEL_CONFIG, MAPPING_FILE, label_studio_tasks, task_mapping

    instances = {}
    for folder in run_dirs:
        instances.update(load_run(folder, full=False).instances)
    files = ["tasks.json", "label_config.xml", MAPPING_FILE]
    theirs = claim_folder(output, files, force)
    output.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(16)
    tasks = label_studio_tasks(instances.values(), seed, key)
    write_atomically(output / files[0], json.dumps(tasks, ensure_ascii=False, indent=1) + "\n")
    write_atomically(output / files[1], LABEL_CONFIG)
    write_atomically(output / files[2], json.dumps(
        task_mapping(instances.values(), seed, key), indent=1) + "\n")
    mark_written(output, [output / name for name in files], theirs)
    console.print(f"wrote {len(tasks)} blind tasks to {escape(str(output / files[0]))} (import "
                  f"it with the labeling config {escape(str(output / files[1]))}); which "
                  f"instance each is stays in {escape(str(output / files[2]))}, fbi's own "
                  "file: keep it, never import it", highlight=False)
