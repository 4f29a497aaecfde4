"""The one JSONL policy for every log fbi writes and reads back.

Writing: one record per line of UTF-8 JSON, flushed after every line so a killed process
loses at most the line being written. JSON escapes ``\\n`` inside strings, so ``\\n``
ends a record and nothing else does.

Reading: bytes split on ``\\n`` only — never on U+2028, U+0085, ``\\r`` or the other
characters Python's ``str.splitlines`` treats as line breaks, which texts may hold. A
last line without its newline that does not parse is a *torn tail* (the writer was
killed mid-line): it is dropped when reading and truncated away before the next append,
so a new record is never glued onto it. Any other line that does not validate is
reported with its line number, never skipped silently. When a call id appears more than
once (a failed call tried again), the last record wins.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from fbi.errors import InputError, StorageError, validation_summary
from fbi.files import open_regular
from fbi.outputs import atomic_file

Record = TypeVar("Record", bound=BaseModel)


def dumps(record: BaseModel) -> bytes:
    """One line of a log: the record as UTF-8 JSON, without the newline."""
    return record.model_dump_json().encode("utf-8")


@dataclass
class BadLine:
    number: int  # 1-based
    error: str


@dataclass
class LogContents(Generic[Record]):
    """What a log file holds: valid records in file order, and what was wrong with it."""

    path: Path
    records: list[Record] = field(default_factory=list)  # empty when read with keep=False
    lines: list[int] = field(default_factory=list)  # each kept record's line number
    bad_lines: list[BadLine] = field(default_factory=list)
    torn_tail: bool = False
    valid_bytes: int = 0  # length of the file up to the end of its last complete line
    # call_id → (status, cost) of its last record: what a run needs to resume, kept even
    # when the records themselves are not
    outcomes: dict[str, tuple[str, float]] = field(default_factory=dict)

    def latest(self) -> dict[str, Record]:
        """call_id → the last record written for it."""
        return {record.call_id: record for record in self.records}  # type: ignore[attr-defined]

    def problem(self) -> str | None:
        """A message naming the first bad line and the fix, or None when there is none."""
        if not self.bad_lines:
            return None
        first = self.bad_lines[0]
        more = f" (and {len(self.bad_lines) - 1} more lines)" if len(self.bad_lines) > 1 else ""
        return (f"{self.path}, line {first.number}: not a valid record ({first.error}){more}. "
                "Fix: delete that line; its call is made again on the next run")


def read_log(path: str | Path, model: type[Record], keep: bool = True,
             visit: Callable[[Record], None] | None = None,
             visit_at: Callable[[Record, int], None] | None = None,
             start: int = 0) -> LogContents[Record]:
    """Read a log under the policy above. A missing file reads as empty.

    ``keep=False`` reads in constant memory per record: each is validated, summarised in
    ``outcomes``, shown to ``visit``, and dropped (a run of 50,000 calls resumes without
    holding 50,000 records). ``visit_at`` is shown each record with the byte offset its
    line starts at, so a reader can seek back to one record (`fbi view`). ``start``: read
    from that byte offset (the end of a line read before) on; line numbers then count
    from it.
    """
    path = Path(path)
    contents: LogContents[Record] = LogContents(path)
    if not path.exists():
        return contents
    try:
        file = open_regular(path, "rb")  # (closed below; OSError is reported)
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror}). Fix: check the file's "
                         "permissions") from None

    def take(raw: bytes, start: int, number: int) -> None:
        record = model.model_validate_json(raw)
        call_id = getattr(record, "call_id", None)
        if call_id is not None:  # a call's log (batch logs are keyed otherwise)
            contents.outcomes[call_id] = (getattr(record, "status", "ok"),
                                          getattr(record, "cost", None) or 0.0)
        if keep:
            contents.records.append(record)
            contents.lines.append(number)
        if visit is not None:
            visit(record)
        if visit_at is not None:
            visit_at(record, start)

    with file:
        offset, number = start, 0
        file.seek(start)
        for raw in file:  # split on b"\n" only: a binary file's lines
            if not raw.endswith(b"\n"):  # the last line, without its newline
                if raw.strip():
                    try:  # a whole record that only lacks its newline is still a record
                        take(raw, offset, number + 1)
                        offset += len(raw)
                    except (ValidationError, ValueError):
                        contents.torn_tail = True
                break
            number += 1
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                take(raw[:-1], start, number)
            except (ValidationError, ValueError) as error:
                contents.bad_lines.append(BadLine(number, validation_summary(error, limit=1)))
    contents.valid_bytes = offset
    return contents


@dataclass
class LogState:
    """What an append log knows of its file: where its valid lines end and each call's
    status and cost. Handed to the next `AppendLog` of the same file (a stage that
    appends to one log phase after phase), it spares reading the file again."""

    valid_bytes: int
    outcomes: dict[str, tuple[str, float]]


class AppendLog(Generic[Record]):
    """A log opened for appending by the one process that holds its run's lock.

    Opening truncates a torn tail and adds a missing final newline, so the next record
    starts on a line of its own. It remembers each call's status and cost (what resuming
    needs); ``keep_records=False`` keeps no more than that, so its memory does not grow
    with the records' texts. ``visit`` sees every record read on opening, ``on_append``
    every record appended. ``known``: the state a previous `AppendLog` of this file left
    (`state`); only what lies past it is read.
    """

    def __init__(self, path: str | Path, model: type[Record], keep_records: bool = True,
                 visit: Callable[[Record], None] | None = None,
                 on_append: Callable[[Record], None] | None = None,
                 known: LogState | None = None):
        self.path = Path(path)
        self.model = model
        self.keep_records = keep_records
        self._on_append = on_append
        start = known.valid_bytes if known is not None and self.path.exists() and \
            self.path.stat().st_size >= known.valid_bytes else 0
        contents = read_log(self.path, model, keep=keep_records, visit=visit, start=start)
        if start:
            contents.outcomes = {**known.outcomes, **contents.outcomes}  # type: ignore[union-attr]
        problem = contents.problem()
        if problem:
            raise InputError(problem)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open()
        if self._end > contents.valid_bytes:
            self._file.truncate(contents.valid_bytes)
            self._end = contents.valid_bytes
        self.records: dict[str, Record] = contents.latest()
        self._outcomes = contents.outcomes
        self._finished = {call_id for call_id, (status, _) in self._outcomes.items()
                          if status != "error"}
        if contents.valid_bytes and self.path.stat().st_size and not contents.torn_tail \
                and not data_ends_with_newline(self.path):
            self._write(b"\n")

    def _open(self) -> None:
        # Unbuffered: a record is in the OS's hands when append returns (it survives the
        # process being killed), and a failed write leaves no bytes in a buffer.
        self._file = open_regular(self.path, "ab", buffering=0)  # (closed by close())
        # Where the next record starts, kept here rather than asked of the OS for every
        # record: the run's lock keeps every other writer out.
        self._end = os.fstat(self._file.fileno()).st_size

    def _write(self, data: bytes) -> None:
        """Write all of ``data`` or nothing: a failed write (a full disk) is cut back off,
        so the log never ends in a torn line that the next record would glue onto."""
        before = self._end
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
            self._end = before + len(data)
        except OSError as error:
            with contextlib.suppress(OSError):  # the reader drops a torn tail anyway
                self._file.truncate(before)
            raise StorageError(
                f"{self.path}: cannot be written ({error.strerror}); the "
                f"{len(self._outcomes)} records before are saved. Fix: free space on that "
                "disk (or make it writable) and run the same command again to resume") \
                from None

    @property
    def finished(self) -> set[str]:
        """Ids of the calls that need no new try (their last record is not ``error``)."""
        return self._finished

    @property
    def spent(self) -> float:
        """USD the log's calls cost, each call's last record counted."""
        return sum(cost for _, cost in self._outcomes.values())

    def append(self, record: Record) -> None:
        self._write(dumps(record) + b"\n")
        self._note(record)
        if self._on_append is not None:
            self._on_append(record)

    def state(self) -> LogState:
        """Where the file's valid lines end and each call's outcome (see `known`)."""
        return LogState(self._end, self._outcomes)

    def _note(self, record: Record) -> None:
        call_id = record.call_id  # type: ignore[attr-defined]
        status = getattr(record, "status", "ok")
        self._outcomes[call_id] = (status, getattr(record, "cost", None) or 0.0)
        if status == "error":
            self._finished.discard(call_id)
        else:
            self._finished.add(call_id)
        if self.keep_records:
            self.records[call_id] = record

    def rewrite(self, records: Iterable[Record]) -> None:
        """Replace the whole log atomically (e.g. after re-reading stored replies), one
        record at a time."""
        self._file.close()
        self.records, self._outcomes, self._finished = {}, {}, set()
        with atomic_file(self.path) as out:
            for record in records:
                out.write(dumps(record) + b"\n")
                self._note(record)
        self._open()

    def close(self) -> None:
        self._file.close()


def append_durably(path: str | Path, record: BaseModel) -> None:
    """Append one record and fsync it: when this returns, the record is on disk.

    For logs written one event at a time by people (the vetting TUI): a torn tail left by
    an earlier failed write (a full disk, a kill) is truncated first, so the new record
    never glues onto it, whatever its size. Costs the size of the last line, not the log.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = dumps(record) + b"\n"
    with open_regular(path, "a+b", buffering=0) as log:  # unbuffered: a failed write leaves nothing
        end = log.seek(0, os.SEEK_END)
        if end:
            start = _last_line_start(log, end)
            if start < end:  # the file does not end with a newline
                log.seek(start)
                try:
                    json.loads(log.read())
                    log.write(b"\n")  # a whole record that only lacked its newline
                except ValueError:
                    log.truncate(start)
                    log.seek(0, os.SEEK_END)
        before = log.seek(0, os.SEEK_END)
        try:
            view = memoryview(line)
            while view:
                view = view[log.write(view):]
            os.fsync(log.fileno())
        except OSError:
            os.ftruncate(log.fileno(), before)  # never half a record for the next to glue to
            raise


def _last_line_start(log: BinaryIO, end: int, block: int = 65536) -> int:
    """Where the file's last line starts (``end`` when it ends with a newline), read
    backwards a block at a time: a torn line of any length is found whole."""
    position = end
    while position > 0:
        read_from = max(0, position - block)
        log.seek(read_from)
        chunk = log.read(position - read_from)
        if position == end and chunk.endswith(b"\n"):
            return end
        newline = chunk.rfind(b"\n")
        if newline != -1:
            return read_from + newline + 1
        position = read_from
    return 0


def data_ends_with_newline(path: Path) -> bool:
    with open_regular(path, "rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"
