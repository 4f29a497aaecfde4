"""The labels file `fbi label` writes: a CSV that ``--human`` reads as it is, one row a
person's verdict, each row on disk before the next item is shown.

Columns: ``instance_id``, ``verdict`` (``a``: the gold answer is better, ``b``: the
perturbed one, ``tie``; or ``retracted``, see below), ``annotator``, ``shown_first``
(``gold`` or ``perturbed``: which answer the person saw as Answer 1), ``plan`` and
``seed`` (the order it was shown in: `_sampling`), ``labelled_at`` (UTC) and
``label_version`` (``1``, or ``2`` since retractions).

**Several annotators, one file.** Every annotator's process only ever appends, one row
at a time, holding an exclusive lock on the file (``flock``) while it reads what the
others appended since and writes its own row: no label is lost, however many label at
once. Taking a label back appends a *retraction* (verdict ``retracted``, version 2) of
that person's latest standing label — never a rewrite, so another person's labels given
meanwhile stay. The labels a file holds are its rows folded in order: a label stands
until its person retracts it.

**One reader** (`read_label_rows`) for `fbi label`, ``--agreement`` and ``--human``, so
a file is accepted or refused the same way everywhere: a header other than these
columns (a UTF-8 byte-order mark allowed), a verdict, side or version it never writes, a
person labelling an item again while the first label stands, a retraction of nothing,
rows of two orders (labels of two orders mixed are a sample of neither), a field past
`MAX_FIELD_CHARS` — each is one message naming the line.

A file that exists is continued only when it is one of these: fbi never writes into a
file it did not write.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from fbi.errors import InputError
from fbi.files import open_regular

#: The file's columns, in order.
COLUMNS = ("instance_id", "verdict", "annotator", "shown_first", "plan", "seed",
           "labelled_at", "label_version")
#: The version rows are written with (2: retractions exist).
LABEL_VERSION = "2"
#: The versions read.
READ_VERSIONS = ("1", "2")
#: A person's verdicts, and the row that takes one back.
VERDICTS = ("a", "b", "tie")
RETRACTED = "retracted"
#: The longest field read: an instance id or a name, never a text.
MAX_FIELD_CHARS = 10_000


@dataclass(frozen=True)
class LabelRow:
    """One person's verdict on one instance (or its retraction)."""

    instance_id: str
    """The instance labelled."""
    verdict: str
    """``a`` (the gold answer is better), ``b`` (the perturbed one), ``tie`` — or
    ``retracted``: this person takes back their standing label of the instance."""
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
    line: int = 0
    """Its line in the file (0: not yet written)."""

    def as_csv(self) -> str:
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerow([getattr(self, c) for c in COLUMNS])
        return out.getvalue()


def is_label_file(path: str | Path) -> bool:
    """Whether ``path`` starts with the labels file's header (a BOM allowed)."""
    try:
        with open_regular(path, "rb") as file:
            start = file.read(len(",".join(COLUMNS)) + 8)
    except OSError:
        return False
    return start.removeprefix(b"\xef\xbb\xbf").startswith(",".join(COLUMNS).encode())


def read_label_rows(path: str | Path, text: str | None = None) -> list[LabelRow]:
    """The labels standing in a labels file (see the module docstring): every row checked
    and folded in order; InputError naming the line for anything `fbi label` never
    writes. ``text``: the file's contents, already read."""
    path = Path(path)
    if text is None:
        try:
            with open_regular(path, "rb") as file:
                text = file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{path}: cannot be read ({error}). Fix: give a labels file "
                             "`fbi label` wrote") from None
    return _fold(path, _rows(path, text.removeprefix("\ufeff")))


def _rows(path: Path, text: str) -> Iterator[LabelRow]:
    if not text.strip():
        raise InputError(f"{path}: an empty file. Fix: give a labels file `fbi label` "
                         "wrote, or a new path (fbi never writes over a file it did not "
                         "write)")
    if not text.endswith("\n"):  # a torn last line: its writer was killed mid-row
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
        if tuple(header) != COLUMNS:
            raise InputError(f"{path}: not a labels file `fbi label` wrote (its header is "
                             f"{','.join(header)[:120]!r}, where fbi writes "
                             f"{','.join(COLUMNS)!r}). Fix: give a new path; fbi never "
                             "writes over a file it did not write")
        for values in reader:
            number = reader.line_num
            if not values:
                continue
            row = _row(path, number, values)
            yield row
    except csv.Error as error:
        raise InputError(f"{path}, line {reader.line_num}: not a row of a labels file "
                         f"({error}). Fix: restore the file, or delete that line") from None


def _row(path: Path, number: int, values: list[str]) -> LabelRow:
    where = f"{path}, line {number}"
    if len(values) != len(COLUMNS):
        raise InputError(f"{where}: {len(values)} columns where {len(COLUMNS)} belong. Fix: "
                         "restore the file, or delete that line (its item is shown again)")
    longest = max(values, key=len)
    if len(longest) > MAX_FIELD_CHARS:
        raise InputError(f"{where}: a field of {len(longest):,} characters (fbi writes ids "
                         f"and names, never past {MAX_FIELD_CHARS:,}). Fix: restore the file")
    row = LabelRow(*values, line=number)
    problems = [
        (row.label_version not in READ_VERSIONS,
         f"label_version {row.label_version!r} (this fbi reads {', '.join(READ_VERSIONS)})"),
        (row.verdict not in (*VERDICTS, RETRACTED) or
         (row.verdict == RETRACTED and row.label_version == "1"),
         f"verdict {row.verdict!r} (fbi label writes a, b, tie or retracted)"),
        (row.shown_first not in ("gold", "perturbed"),
         f"shown_first {row.shown_first!r} (gold or perturbed)"),
        (not row.instance_id.strip() or not row.annotator.strip(),
         "no instance_id or no annotator"),
        (any(ord(c) < 32 and c not in "\t" for v in values for c in v),
         "a control character"),
    ]
    for wrong, problem in problems:
        if wrong:
            raise InputError(f"{where}: {problem}. Fix: restore the file (fbi label writes "
                             "every row), or delete that line")
    return row


def _fold(path: Path, rows: Iterator[LabelRow]) -> list[LabelRow]:
    standing: dict[tuple[str, str], LabelRow] = {}
    order: tuple[str, str] | None = None
    for row in rows:
        if order is None:
            order = (row.plan, row.seed)
        elif (row.plan, row.seed) != order:
            raise InputError(
                f"{path}, line {row.line}: labelled in the order of --plan {row.plan} "
                f"--seed {row.seed}, where the file's first row has --plan {order[0]} --seed "
                f"{order[1]}: labels of two orders mixed are a sample of neither. Fix: keep "
                "one order per file")
        key = (row.annotator, row.instance_id)
        if row.verdict == RETRACTED:
            if standing.pop(key, None) is None:
                raise InputError(f"{path}, line {row.line}: {row.annotator!r} retracts a "
                                 f"label of {row.instance_id!r} they have not given. Fix: "
                                 "restore the file, or delete that line")
            continue
        if key in standing:
            raise InputError(
                f"{path}, line {row.line}: annotator {row.annotator!r} labels instance "
                f"{row.instance_id!r} again (first at line {standing[key].line}), which "
                "would count one person twice. Fix: keep one label per person and "
                "instance (delete one of the lines)")
        standing[key] = row
    return sorted(standing.values(), key=lambda r: r.line)


class LabelFile:
    """The standing labels of ``path`` under one plan; rows appended under the file's
    lock (see the module docstring)."""

    def __init__(self, path: str | Path, plan: str, seed: int):
        self.path, self.plan, self.seed = Path(path), plan, str(seed)
        self.rows: list[LabelRow] = []
        """The labels standing when the file was last read (in file order)."""
        try:
            self.path.lstat()
        except FileNotFoundError:
            return
        except OSError as error:
            raise InputError(f"--output {self.path}: cannot be read ({error.strerror}). "
                             "Fix: give a labels file `fbi label` wrote, or a new path") \
                from None
        self._take(read_label_rows(self.path, self._text_of(self.path)), "--output ")

    @staticmethod
    def _text_of(path: Path) -> str:
        try:
            with open_regular(path, "rb") as file:
                return file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"--output {path}: cannot be read ({error}). Fix: give a "
                             "labels file `fbi label` wrote, or a new path") from None

    def _take(self, rows: list[LabelRow], prefix: str = "") -> None:
        for row in rows[:1]:
            if (row.plan, row.seed) != (self.plan, self.seed):
                raise InputError(
                    f"{prefix}{self.path}, line {row.line}: labelled in the order of --plan "
                    f"{row.plan} --seed {row.seed}, not --plan {self.plan} --seed "
                    f"{self.seed}: labels of two orders mixed are a sample of neither. "
                    f"Fix: give --plan {row.plan} --seed {row.seed}, or a new --output")
        self.rows = rows

    def labelled_by(self, annotator: str) -> dict[str, LabelRow]:
        """This person's standing labels by instance."""
        return {r.instance_id: r for r in self.rows if r.annotator == annotator}

    def add(self, instance_id: str, verdict: str, annotator: str, shown_first: str
            ) -> LabelRow | None:
        """Append one label, on disk when this returns (OSError when it could not be).
        None when this person's label of the instance already stands (given meanwhile by
        another of their sessions): nothing is written."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict {verdict!r}: one of {', '.join(VERDICTS)}")
        with self._locked() as file:
            if instance_id in self.labelled_by(annotator):
                return None
            return self._append(file, LabelRow(instance_id, verdict, annotator,
                                               shown_first, self.plan, self.seed, _now()))

    def undo(self, annotator: str) -> LabelRow | None:
        """Take back this person's latest standing label: a retraction appended (the
        others' labels untouched). The label taken back, or None when there is none."""
        with self._locked() as file:
            mine = [r for r in self.rows if r.annotator == annotator]
            if not mine:
                return None
            latest = max(mine, key=lambda r: r.line)
            self._append(file, LabelRow(latest.instance_id, RETRACTED, annotator,
                                        latest.shown_first, self.plan, self.seed, _now()))
            return latest

    @contextlib.contextmanager
    def _locked(self) -> Iterator[IO[bytes]]:
        """The file opened for appending under an exclusive lock, its rows read afresh
        (what other annotators appended since), a torn last line cut off."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open_regular(self.path, "a+b", buffering=0) as file:
            _lock(file)
            file.seek(0)
            data = file.read()
            if data and not data.endswith(b"\n"):  # a row its writer never finished
                os.ftruncate(file.fileno(), data.rfind(b"\n") + 1)
                data = data[:data.rfind(b"\n") + 1]
            if data:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise InputError(f"--output {self.path}: not UTF-8 ({error}). Fix: "
                                     "give a labels file fbi label wrote") from None
                self._take(read_label_rows(self.path, text), "--output ")
            else:
                file.write((",".join(COLUMNS) + "\n").encode("utf-8"))
                self.rows = []
            self._lines = data.count(b"\n") or 1
            yield file

    def _append(self, file: IO[bytes], row: LabelRow) -> LabelRow:
        data = row.as_csv().encode("utf-8")
        before = os.fstat(file.fileno()).st_size
        try:
            file.write(data)
            os.fsync(file.fileno())
        except OSError:
            os.ftruncate(file.fileno(), before)  # never half a row for the next to glue to
            raise
        self._lines += 1
        written = LabelRow(*(getattr(row, c) for c in COLUMNS), line=self._lines)
        self.rows = _fold(self.path, iter([*self.rows, written]))
        return written


def _lock(file: IO[bytes]) -> None:
    try:
        import fcntl
    except ImportError:  # (not POSIX: one annotator at a time)
        return
    fcntl.flock(file.fileno(), fcntl.LOCK_EX)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
