"""Where a run folder is validated: its spec, the same-run guard, and the one-writer lock.

Every stage that calls a model keeps its state in a run folder (or, for ``perturb``,
beside its queue): a typed [`RunSpec`][fbi.run_spec.RunSpec] and one or more append-only
logs. [`RunFolder.open`][fbi.runs.RunFolder.open] is the only way to write there. It

* refuses a folder fbi did not write (`fbi.outputs.claim_folder`: a non-empty
  folder without fbi's marker or run spec) unless ``force``, before writing anything;
* takes an OS lock held for the whole run, so a second process on the same folder is
  refused at once with the holder's pid (two writers would double the cost and could
  lose records);
* refuses a folder whose spec has another identity (another model, api_base, prompt
  version, sampling parameter, dataset or selection), naming each field that differs and
  how to start a new folder;
* writes the spec atomically, keeping the first ``created_at``.

Reading a run (``--dry-run``, ``fbi report``) never takes the lock and never writes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fbi.errors import InputError, validation_summary
from fbi.files import open_regular, read_bytes
from fbi.outputs import claim_folder, mark_written, write_atomically
from fbi.run_spec import RunSpec, identity_of

LOCK_NAME = ".fbi.lock"


class RunBusy(InputError):
    """Another process is writing to this run folder."""


def now() -> str:
    """The current UTC time as ISO 8601 to the second, as every record stamps it."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def read_spec(path: str | Path) -> RunSpec | None:
    """The spec at ``path``; None when there is no file; InputError when it is invalid."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        return RunSpec.model_validate_json(read_bytes(path))
    except (ValidationError, ValueError) as error:
        reason = "empty" if path.stat().st_size == 0 else validation_summary(error, limit=1)
        raise InputError(f"{path}: not a readable run spec ({reason}). Fix: restore it, or "
                         "start a new run in another folder (--output)") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None


def identity_differences(old: RunSpec, new: RunSpec) -> list[str]:
    """Each identity field that differs, as 'field: old → new'."""
    differences = []

    def compare(name: str, a: Any, b: Any) -> None:
        if a != b:
            differences.append(f"{name}: {_short(a)} → {_short(b)}")

    compare("kind", old.kind, new.kind)
    compare("model", old.model, new.model)
    compare("api_base", old.api_base, new.api_base)
    compare("dataset", old.dataset.fingerprint, new.dataset.fingerprint)
    for prefix, a_part, b_part in (("selection ", old.selection, new.selection),
                                   ("", old.parameters, new.parameters)):
        a, b = identity_of(a_part), identity_of(b_part)
        for key in sorted(set(a) | set(b)):
            compare(f"{prefix}{key}", a.get(key), b.get(key))
    for name in sorted(set(old.prompts) & set(new.prompts)):  # new prompts may join a run
        a, b = old.prompts[name], new.prompts[name]
        compare(f"{name} version", a.version, b.version)
        compare(f"{name} template_sha", a.template_sha, b.template_sha)
        compare(f"{name} score_range", a.score_range, b.score_range)
    return differences


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class RunFolder:
    """A run's spec file and lock; use ``with RunFolder.open(...) as run:``."""

    def __init__(self, spec_path: Path, lock_path: Path):
        self.spec_path = spec_path
        self.lock_path = lock_path
        self.created_at: str | None = None
        self._lock_file = None

    @classmethod
    def open(cls, spec: RunSpec, spec_path: str | Path,
             lock_path: str | Path | None = None, own_folder: bool = True,
             force: bool = False, writes: tuple[str, ...] = ()) -> RunFolder:
        """Lock the folder, check the existing spec against ``spec``, write ``spec``.
        ``own_folder``: the spec's folder is the run's (not a user's folder it sits in,
        as a perturbation queue's spec does), so it must be fbi's (see ``force``);
        ``writes`` names the other files the run writes there."""
        spec_path = Path(spec_path)
        theirs = None
        if own_folder:
            read_spec(spec_path)  # an unreadable spec is named first
            theirs = claim_folder(spec_path.parent, (spec_path.name, *writes), force,
                                  owned=(spec_path.name, *writes))
        folder = cls(spec_path, Path(lock_path) if lock_path else spec_path.parent / LOCK_NAME)
        try:
            spec_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputError(f"{spec_path.parent}: cannot create the run folder "
                             f"({error.strerror}). Fix: choose another --output") from None
        folder._lock()
        try:
            folder.created_at = cls.check(spec, spec_path, own_folder=False)
            folder.write(spec)
            if theirs is not None:  # the run's files are fbi's, listed before they exist
                mark_written(spec_path.parent, [spec_path], theirs,
                             names=(spec_path.name, *writes))
        except BaseException:
            folder.close()
            raise
        return folder

    @staticmethod
    def check(spec: RunSpec, spec_path: str | Path, own_folder: bool = True,
              force: bool = False, writes: tuple[str, ...] = ()) -> str | None:
        """Refuse a folder fbi did not write, or whose spec is unreadable or has another
        identity; returns the existing run's ``created_at`` (None for a new folder).
        Reads only (--dry-run)."""
        previous = read_spec(spec_path)  # an unreadable spec is named first
        if own_folder:
            claim_folder(Path(spec_path).parent, (Path(spec_path).name, *writes), force,
                         owned=(Path(spec_path).name, *writes))
        if previous is None:
            return None
        differences = identity_differences(previous, spec)
        if differences:
            # (named by its spec: a perturb queue's sits in a folder of the user's)
            where = Path(spec_path).parent if Path(spec_path).name == "run.json" \
                else Path(spec_path)
            raise InputError(
                f"{where} holds another run ({'; '.join(differences)}). Fix: pass a new "
                "--output for this run, or the same options as before to resume it")
        return previous.created_at

    def write(self, spec: RunSpec) -> None:
        spec = spec.model_copy(update={"created_at": self.created_at or spec.created_at,
                                       "updated_at": now()})
        self.created_at = spec.created_at
        try:
            # (unset fields left out: a run.json holds what was asked, as ever)
            write_atomically(self.spec_path,
                             spec.model_dump_json(indent=2, exclude_none=True) + "\n")
        except OSError as error:
            raise InputError(f"{self.spec_path}: cannot be written ({error.strerror}). Fix: "
                             "free some space or choose a writable --output") from None

    def _lock(self) -> None:
        import fcntl

        try:
            self._lock_file = open_regular(self.lock_path, "a+")  # (closed by close())
        except OSError as error:
            raise InputError(f"{self.lock_path}: cannot be created ({error.strerror}). Fix: "
                             "choose a writable --output") from None
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.seek(0)
            holder = self._lock_file.read().strip() or "unknown"
            self._lock_file.close()
            self._lock_file = None
            raise RunBusy(f"{self.lock_path.parent} is in use by another fbi process (pid "
                          f"{holder}). Fix: wait for it to finish, or stop it, then run "
                          "again; a folder has one writer at a time") from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(str(os.getpid()))
        self._lock_file.flush()

    def close(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing releases the flock
            self._lock_file = None

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
