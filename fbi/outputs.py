"""Which folders fbi writes into, and how it writes a whole file.

fbi never deletes or overwrites a file it did not write. Every folder it writes into as
an output (a run folder, a report's ``--output``, the folder ``publish`` uploads) carries
a marker, `MARKER`, listing the files fbi wrote there. `claim_folder` is the
check made before anything is written:

* a new or empty folder is fbi's to fill;
* a folder with the marker (or, written before the marker existed, a run spec fbi wrote)
  is fbi's: its own files may be replaced;
* any other non-empty folder is refused (exit 2) unless ``force``; with ``force`` fbi
  writes beside the files there, and still refuses to replace one of them — then and
  later: the marker remembers them (``theirs``).

Publishing uploads exactly the files the marker lists.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from fbi.errors import InputError
from fbi.files import read_bytes

#: The marker file: JSON ``{"written_by": "fbi", "files": [...], "theirs": [...]}``, the
#: paths (relative to the folder) fbi wrote, and those it found there under ``--force``.
MARKER = ".fbi-output.json"
#: Files of fbi's that a folder may hold before its marker: the one-writer lock.
FBI_FILES = frozenset({MARKER, ".fbi.lock"})
#: Run specs written before the marker existed: a folder holding one is fbi's.
RUN_SPECS = ("run.json", "queue.run.json", "explanation_checks.run.json")


def claim_folder(folder: str | Path, writes: Iterable[str] = (), force: bool = False,
                 option: str = "--output", owned: Iterable[str] = ()) -> list[str]:
    """Refuse to write into ``folder`` unless fbi wrote it (see the module docstring).
    ``writes`` are the paths (relative to it) fbi is about to write; in a folder with the
    marker, one that is there already must be a file the marker lists as fbi's — or one
    of ``owned``, the files of the run whose spec the folder holds (a run folder written
    before its files were listed) — never a file put there since. Reads only; returns
    the names of the files there that are not fbi's (for `mark_written`)."""
    writes = list(writes)
    folder = Path(folder)
    if not folder.exists():
        return []
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder. Fix: give a folder as {option}")
    if written_by_fbi(folder):
        marker = _marker(folder)
        theirs = marker.get("theirs", [])
        ours = set(marker.get("files", [])) | set(owned)
        # a file fbi is to write that is there but that the marker does not list as
        # fbi's (put there since, by hand or by another tool) is not fbi's to replace
        _refuse_clashes(folder, [name for name in writes if name in theirs or (
            (folder / MARKER).is_file() and name not in ours and name not in FBI_FILES
            and ((folder / name).is_file() or (folder / name).is_symlink()))], option)
        return theirs
    theirs = sorted(entry.name for entry in folder.iterdir() if entry.name not in FBI_FILES)
    if not theirs:
        return []
    if not force:
        shown = ", ".join(theirs[:5]) + (f" and {len(theirs) - 5} more" if len(theirs) > 5
                                         else "")
        raise InputError(
            f"{folder}: holds files fbi did not write ({shown}). Fix: choose a new or empty "
            f"{option}, or pass --force to write fbi's files beside them (fbi never "
            "replaces a file it did not write)")
    _refuse_clashes(folder, [name for name in writes if (folder / name).exists()], option)
    return theirs


def claim_file(path: str | Path, replace: bool = False, option: str = "--output") -> None:
    """Refuse to write the single file ``path`` (a converted dataset, a metrics file, a
    vetting queue) over an existing one unless ``replace`` (the command's ``--replace``):
    a lone file carries no marker, so fbi cannot tell its own from a user's."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: a folder. Fix: give a file name as {option}")
    if path.exists() and not replace:
        raise InputError(f"{path}: the file exists, and a lone file carries no mark of "
                         "who wrote it, so fbi does not replace it unasked. Fix: choose a "
                         f"new {option}, or pass --replace if it may go")


def _refuse_clashes(folder: Path, clashes: list[str], option: str) -> None:
    if clashes:
        raise InputError(f"{folder}: {', '.join(sorted(clashes))} are not fbi's, and fbi "
                         f"never replaces a file it did not write. Fix: move them away, or "
                         f"choose another {option}")


def written_by_fbi(folder: str | Path) -> bool:
    folder = Path(folder)
    return (folder / MARKER).is_file() or any(_is_run_spec(folder / name)
                                              for name in RUN_SPECS)


def _is_run_spec(path: Path) -> bool:
    try:
        data = json.loads(read_bytes(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"kind", "created_at"} <= data.keys()


def _marker(folder: Path) -> dict:
    try:
        marker = json.loads(read_bytes(folder / MARKER))
    except (OSError, ValueError):
        return {}
    if not isinstance(marker, dict):
        return {}
    return {key: [name for name in marker.get(key) or [] if _inside(name)]
            for key in ("files", "theirs")}


def _inside(name: object) -> bool:
    return isinstance(name, str) and bool(name) and not Path(name).is_absolute() \
        and ".." not in Path(name).parts


def files_written(folder: str | Path) -> list[str]:
    """The paths (relative to ``folder``) the marker lists as fbi's, that still exist."""
    folder = Path(folder)
    return [name for name in _marker(folder).get("files", []) if (folder / name).is_file()]


def mark_written(folder: str | Path, paths: Iterable[str | Path],
                 theirs: Iterable[str] = (), replace: bool = False,
                 names: Iterable[str] = ()) -> None:
    """Add ``paths`` (in ``folder``) to the folder's marker (``replace``: they are all
    of fbi's files now), and ``theirs`` (what `claim_folder` found there) to the
    files it must never replace; ``names`` are fbi's too, written or about to be (a run's
    logs, listed when its folder is claimed)."""
    folder = Path(folder)
    marker = _marker(folder)
    listed = set() if replace else set(marker.get("files", []))
    kept = {name for name in listed if (folder / name).is_file()} | {
        name for name in listed if name in set(names)}
    kept.update(name for name in names if _inside(name))
    kept.update(Path(p).resolve().relative_to(folder.resolve()).as_posix() for p in paths)
    foreign = sorted(set(marker.get("theirs", [])) | set(theirs))
    write_atomically(folder / MARKER, json.dumps(
        {"written_by": "fbi", "files": sorted(kept), "theirs": foreign}, indent=1) + "\n")


def write_atomically(path: str | Path, text: str | bytes) -> None:
    """Write a whole file so a reader sees the old or the new one, never half; the
    temporary file is removed if the write fails (a full disk leaves nothing behind)."""
    with atomic_file(path) as out:
        out.write(text.encode("utf-8") if isinstance(text, str) else text)


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write piece by piece that replaces ``path`` whole when the block
    ends (fsynced first), or is removed if the block fails."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        try:
            out = open(tmp, "wb")  # noqa: SIM115 (closed by the with below)
        except OSError as error:  # name the file the user asked for, not the temporary
            raise OSError(error.errno, error.strerror, str(path)) from None
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):  # (never there, or a read-only folder)
            tmp.unlink(missing_ok=True)
        raise
