"""The labels file `fbi label` writes: a CSV that ``--human`` reads as it is, one row a
person's verdict, each row on disk before the next item is shown.

Columns (version 1): ``instance_id``, ``verdict`` (``a``: the gold answer is better,
``b``: the perturbed one, ``tie``), ``annotator``, ``shown_first`` (``gold`` or
``perturbed``: which answer the person saw as Answer 1), ``plan`` and ``seed`` (the
order it was shown in: `_sampling`), ``labelled_at`` (UTC) and ``label_version``.

A file that exists is continued only when it is one of these (its header, its plan and
seed): fbi never writes into a file it did not write, and labels of two orders mixed
would be a sample of neither.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from fbi.errors import InputError
from fbi.outputs import write_atomically

#: The file's columns, in order.
COLUMNS = ("instance_id", "verdict", "annotator", "shown_first", "plan", "seed",
           "labelled_at", "label_version")
LABEL_VERSION = "1"


@dataclass(frozen=True)
class LabelRow:
    """One person's verdict on one instance."""

    instance_id: str
    """The instance labelled."""
    verdict: str
    """``a`` (the gold answer is better), ``b`` (the perturbed one) or ``tie``."""
    annotator: str
    """Who labelled it."""
    shown_first: str
    """``gold`` or ``perturbed``: the answer shown as Answer 1."""
    plan: str
    """The order it was shown in (``stratified`` or ``uniform``)."""
    seed: str
    """That order's seed."""
    labelled_at: str
    """When (UTC, ISO 8601)."""
    label_version: str = LABEL_VERSION
    """The row's version."""

    def line(self) -> str:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow([getattr(self, c) for c in COLUMNS])
        return out.getvalue()


class LabelFile:
    """The labels of ``path`` under one plan; new rows appended and fsynced."""

    def __init__(self, path: str | Path, plan: str, seed: int):
        self.path, self.plan, self.seed = Path(path), plan, str(seed)
        self.rows: list[LabelRow] = []
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"--output {self.path}: cannot be read ({error}). Fix: give "
                             "a labels file `fbi label` wrote, or a new path") from None
        if not text.strip():
            raise InputError(f"--output {self.path}: an empty file fbi did not write. Fix: "
                             "give a new path (fbi never writes over a file it did not "
                             "write)")
        reader = csv.reader(io.StringIO(text))
        header = next(reader)
        if tuple(header) != COLUMNS:
            raise InputError(f"--output {self.path}: not a labels file `fbi label` wrote "
                             f"(its columns are {', '.join(header)[:120]}). Fix: give a new "
                             "path; fbi never writes over a file it did not write")
        for number, values in enumerate(reader, 2):
            if not values:
                continue
            if len(values) != len(COLUMNS):
                raise InputError(f"{self.path}, line {number}: {len(values)} columns where "
                                 f"{len(COLUMNS)} belong. Fix: restore the file, or delete "
                                 "that line (its item is shown again)")
            row = LabelRow(*values)
            if (row.plan, row.seed) != (self.plan, self.seed):
                raise InputError(
                    f"{self.path}, line {number}: labelled in the order of --plan "
                    f"{row.plan} --seed {row.seed}, not --plan {self.plan} --seed "
                    f"{self.seed}: labels of two orders mixed are a sample of neither. "
                    f"Fix: give --plan {row.plan} --seed {row.seed}, or a new --output")
            self.rows.append(row)

    def labelled_by(self, annotator: str) -> dict[str, LabelRow]:
        """This person's labels by instance."""
        return {r.instance_id: r for r in self.rows if r.annotator == annotator}

    def add(self, instance_id: str, verdict: str, annotator: str, shown_first: str
            ) -> LabelRow:
        """Append one label, on disk when this returns (OSError when it could not be)."""
        row = LabelRow(instance_id, verdict, annotator, shown_first, self.plan, self.seed,
                       datetime.now(timezone.utc).isoformat(timespec="seconds"))
        new = not self.path.exists()
        data = ((",".join(COLUMNS) + "\n") if new else "") + row.line()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8", newline="") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        self.rows.append(row)
        return row

    def undo(self, annotator: str) -> LabelRow | None:
        """Remove this person's latest label (the file is rewritten whole, atomically)."""
        mine = [n for n, r in enumerate(self.rows) if r.annotator == annotator]
        if not mine:
            return None
        removed = self.rows[mine[-1]]
        kept = self.rows[:mine[-1]] + self.rows[mine[-1] + 1:]
        write_atomically(self.path, ",".join(COLUMNS) + "\n" + "".join(r.line() for r in kept))
        self.rows = kept
        return removed
