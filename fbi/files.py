"""Opening the files fbi reads or appends to: regular files only.

A path a user gives may name a FIFO, a device or a socket. Opening a FIFO for reading
blocks until some other process writes to it — a command that hangs with no message —
and ``/dev/zero`` or ``/dev/urandom`` never end. So every file fbi reads or appends to
is opened here: without blocking (``O_NONBLOCK``, which makes opening a FIFO return at
once), then checked with ``fstat`` *on the descriptor opened*, so the file checked is the
file read (no race between a check and the open), and refused unless it is a regular
file. Writes of whole files go through `fbi.outputs` (a temporary file renamed).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Any

from fbi.errors import InputError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a folder"))


class NotRegularFile(InputError):
    """A path fbi was to read or append to names something other than a regular file."""

    def __init__(self, path: str | Path, kind: str):
        self.path, self.kind = Path(path), kind
        super().__init__(f"{path}: {kind}, not a regular file; fbi reads and appends to "
                         "regular files only (a FIFO or a device would hang or never end). "
                         "Fix: give a regular file")


def kind_of(mode: int) -> str | None:
    """What a file of this ``st_mode`` is, when it is not a regular file (None: it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | Path, mode: str = "rb", encoding: str | None = None,
                 newline: str | None = None, buffering: int = -1,
                 follow_links: bool = True) -> IO[Any]:
    """``open(path, mode)`` for a regular file, NotRegularFile for anything else (see the
    module docstring). Modes: ``r``, ``rb``, ``a``, ``ab``, ``a+b``. OSError as ``open``
    raises it (FileNotFoundError for a missing file read). ``follow_links=False`` refuses a
    symbolic link (``O_NOFOLLOW``)."""
    flags = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    if mode.startswith("a"):
        flags |= (os.O_RDWR if "+" in mode else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    elif mode.startswith("r"):
        flags |= os.O_RDONLY
    else:
        raise ValueError(f"open_regular: mode {mode!r} (read or append only)")
    try:
        descriptor = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise NotRegularFile(path, "a FIFO (named pipe)") from None
        if error.errno == errno.ELOOP and not follow_links:
            raise NotRegularFile(path, "a symbolic link") from None
        raise
    try:
        kind = kind_of(os.fstat(descriptor).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        os.set_blocking(descriptor, True)
        return open(descriptor, mode, buffering=buffering, encoding=encoding,
                    newline=newline)
    except BaseException:
        os.close(descriptor)
        raise


def read_bytes(path: str | Path) -> bytes:
    """The whole of a regular file (see `open_regular`)."""
    with open_regular(path, "rb") as file:
        return file.read()


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The whole of a regular file as text (UnicodeDecodeError as ``Path.read_text``)."""
    return read_bytes(path).decode(encoding)


def check_regular(path: str | Path) -> None:
    """NotRegularFile unless ``path`` is a regular file (a missing one passes: the reader
    says so). For libraries that open a path themselves (pandas, pyarrow, sqlite):
    opening it here first cannot block, and what they open is checked the same way."""
    try:
        with open_regular(path, "rb"):
            pass
    except FileNotFoundError:
        return
