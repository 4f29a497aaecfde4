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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from fbi.errors import InputError, StorageError, validation_summary

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
    records: list[Record] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    torn_tail: bool = False
    valid_bytes: int = 0  # length of the file up to the end of its last complete line

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


def read_log(path: str | Path, model: type[Record]) -> LogContents[Record]:
    """Read a log under the policy above. A missing file reads as empty."""
    path = Path(path)
    contents: LogContents[Record] = LogContents(path)
    if not path.exists():
        return contents
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror}). Fix: check the file's "
                         "permissions") from None
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    offset = 0
    for number, raw in enumerate(complete, start=1):
        offset += len(raw) + 1
        if not raw.strip():
            continue
        try:
            contents.records.append(model.model_validate_json(raw))
        except (ValidationError, ValueError) as error:
            contents.bad_lines.append(BadLine(number, validation_summary(error, limit=1)))
    contents.valid_bytes = offset
    if tail.strip():
        try:  # a whole record that only lacks its newline is still a record
            contents.records.append(model.model_validate_json(tail))
            contents.valid_bytes = len(data)
        except (ValidationError, ValueError):
            contents.torn_tail = True
    return contents


class AppendLog(Generic[Record]):
    """A log opened for appending by the one process that holds its run's lock.

    Opening truncates a torn tail and adds a missing final newline, so the next record
    starts on a line of its own.
    """

    def __init__(self, path: str | Path, model: type[Record]):
        self.path = Path(path)
        self.model = model
        contents = read_log(self.path, model)
        problem = contents.problem()
        if problem:
            raise InputError(problem)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self._open()
        if self._size() > contents.valid_bytes:
            self._file.truncate(contents.valid_bytes)
        self.records: dict[str, Record] = contents.latest()
        if contents.valid_bytes and self.path.stat().st_size and not contents.torn_tail \
                and not data_ends_with_newline(self.path):
            self._write(b"\n")

    def _open(self):
        # Unbuffered: a record is in the OS's hands when append returns (it survives the
        # process being killed), and a failed write leaves no bytes in a buffer.
        return open(self.path, "ab", buffering=0)  # closed by close()

    def _size(self) -> int:
        return os.fstat(self._file.fileno()).st_size

    def _write(self, data: bytes) -> None:
        """Write all of ``data`` or nothing: a failed write (a full disk) is cut back off,
        so the log never ends in a torn line that the next record would glue onto."""
        before = self._size()
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
        except OSError as error:
            with contextlib.suppress(OSError):  # the reader drops a torn tail anyway
                self._file.truncate(before)
            raise StorageError(
                f"{self.path}: cannot be written ({error.strerror}); the "
                f"{len(self.records)} records before are saved. Fix: free space on that disk "
                "(or make it writable) and run the same command again to resume") from None

    @property
    def finished(self) -> dict[str, Record]:
        """call_id → its record, for calls that need no new try (not ``error``)."""
        return {k: r for k, r in self.records.items()
                if getattr(r, "status", "ok") != "error"}

    def append(self, record: Record) -> None:
        self._write(dumps(record) + b"\n")
        self.records[record.call_id] = record  # type: ignore[attr-defined]

    def rewrite(self, records: list[Record]) -> None:
        """Replace the whole log atomically (e.g. after re-reading stored replies)."""
        self._file.close()
        write_atomically(self.path, b"".join(dumps(r) + b"\n" for r in records))
        self.records = {r.call_id: r for r in records}  # type: ignore[attr-defined]
        self._file = self._open()

    def close(self) -> None:
        self._file.close()


def append_durably(path: str | Path, record: BaseModel) -> None:
    """Append one record and fsync it: when this returns, the record is on disk.

    For logs written one event at a time by people (the vetting TUI): a torn tail left by
    an earlier failed write (a full disk, a kill) is truncated first, so the new record
    never glues onto it. Costs O(1) in the size of the log.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = dumps(record) + b"\n"
    with open(path, "a+b", buffering=0) as log:  # unbuffered: a failed write leaves nothing
        end = log.seek(0, os.SEEK_END)
        if end:
            log.seek(max(0, end - 65536))
            tail = log.read()
            if not tail.endswith(b"\n"):
                cut = tail.rfind(b"\n")
                torn = tail[cut + 1:]
                try:
                    json.loads(torn)
                    log.write(b"\n")  # a whole record that only lacked its newline
                except ValueError:
                    log.truncate(end - len(torn))
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


def data_ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"


def write_atomically(path: str | Path, text: str | bytes) -> None:
    """Write a whole file so a reader sees the old or the new one, never half; the
    temporary file is removed if the write fails (a full disk leaves nothing behind)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(text.encode("utf-8") if isinstance(text, str) else text)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
