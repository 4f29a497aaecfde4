"""Writing a report: read the runs, build the summary, render each format to a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError

from fbi.errors import InputError, validation_summary
from fbi.files import read_bytes
from fbi.findings import HuntResult
from fbi.outputs import claim_folder, mark_written, write_atomically
from fbi.report._html import render_html
from fbi.report._jury import jury_run
from fbi.report._markdown import (
    render_csv,
    render_markdown,
)
from fbi.report._robustness import load_robustness
from fbi.report._schema import Summary
from fbi.report._summary import (
    build_summary,
)
from fbi.runs import label_runs, load_run
from fbi.trust import HumanSource, TrustSettings

FORMATS = ("md", "html", "json", "csv")


FILE_NAMES = {"json": "summary.json", "md": "report.md", "csv": "report.csv",
              "html": "report.html"}


class WrittenReport(NamedTuple):
    """What [`fbi.report`][fbi.report.report] wrote."""

    summary: Summary
    """The report's content (``summary.json``)."""
    files: list[Path]
    """The files written, one a format."""


def report(run_folders: list[str | Path], output: str | Path | None = None,
           formats: tuple[str, ...] = FORMATS, convention: str = "fbi",
           jury: str | None = None, force: bool = False,
           compare: tuple[str, ...] = (),
           human: str | Path | HumanSource | None = None, trust: TrustSettings | None = None,
           hunts: tuple[HuntResult, ...] = ()) -> WrittenReport:
    """The blind-spot report of stored runs (what ``fbi report`` does; no model call):
    read the runs, build the summary and write the asked formats (``output`` defaults
    to the first run's folder); returns both. With
    ``jury``, a virtual judge made of the runs joins them (see ``fbi.report._jury``);
    ``compare`` names pairs of sides to test (``LABEL:STRATEGY,LABEL:STRATEGY``);
    ``human`` is a file of human labels to hold the judges against, and certify them
    at ``trust``'s target (with the confirmed findings of ``hunts`` as blind spots).
    An ``output`` folder holding files fbi did not write is refused unless ``force``
    (`fbi.outputs.claim_folder`), before anything is read."""
    output = Path(output) if output else Path(run_folders[0])
    theirs = claim_folder(output, [FILE_NAMES[fmt] for fmt in formats], force)
    robustness = [r for r in (load_robustness(f) for f in run_folders) if r is not None]
    robust_folders = {r.folder for r in robustness}
    runs = [load_run(folder, full=False) for folder in run_folders if str(Path(folder)) not in
            robust_folders]
    if jury is not None:
        runs = label_runs(runs)
        runs.append(jury_run(runs, jury))
    summary = build_summary(runs, robustness, convention, compare, human, trust, hunts)
    output.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        if fmt == "json":
            text = summary_json(summary)
        elif fmt == "md":
            text = render_markdown(summary)
        elif fmt == "csv":
            text = render_csv(summary)
        else:
            text = render_html(summary, runs)
        path = output / FILE_NAMES[fmt]
        write_atomically(path, text)
        written.append(path)
    mark_written(output, written, theirs)
    if "json" in formats:  # what a reader will get: it must match the schema it claims
        read_summary(output / FILE_NAMES["json"])
    return WrittenReport(summary, written)


def summary_json(summary: Summary) -> str:
    """``summary.json``'s text: the fields each row was given, as ``json`` writes them."""
    return json.dumps(summary.model_dump(exclude_unset=True), indent=2,
                      ensure_ascii=False) + "\n"


def read_summary(path: str | Path) -> Summary:
    """A ``summary.json`` read back through [`Summary`][fbi.report.Summary]: one message
    naming the file and the first field that does not match, for a file that is not one."""
    path = Path(path)
    try:
        return Summary.model_validate_json(read_bytes(path))
    except ValidationError as error:
        raise InputError(f"{path}: not a summary.json of this fbi "
                         f"({validation_summary(error)}). Fix: write it again with "
                         "`fbi report RUN_DIR…`") from None
