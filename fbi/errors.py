"""The exception tree. Every error fbi raises on purpose derives from [`FbiError`][fbi.FbiError].

::

    FbiError
    ├── InputError            bad user input; the CLI prints it and exits with code 2
    │   ├── DatasetError      a dataset that cannot be read, with every problem found
    │   └── UnknownName       a name not in a registry (category, strategy, ...), with a hint
    ├── ConfigError           the environment or installation is not as needed (exit code 2)
    │   ├── MissingKey        no API key for the model's provider (a dry run only notes it)
    │   └── MissingExtra      an optional dependency is not installed; says what to install
    ├── StorageError          a file could not be written midway (full or read-only disk)
    └── ModelError            a model call failed for good (after retries)
        └── ModelUnavailable  calls in a row found the model unreachable (circuit breaker)

A --max-cost budget is no error: the run stops before the call that could pass it, saves
what is done, and says so in its totals (``RunTotals.stopped_by``).

Only the CLI turns these into messages and exit codes; the library raises them.
"""

from __future__ import annotations

from dataclasses import dataclass


class FbiError(Exception):
    """Root of every error fbi raises on purpose."""


class FbiWarning(UserWarning):
    """Something a user should know that does not stop the work (the CLI prints it as
    one ``warning:`` line)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as the first Ctrl-C: finished work is saved, the command exits 143."""


class InputError(FbiError):
    """The user's input is wrong; the message names where and how to fix it."""


class UnknownName(InputError, ValueError):
    """A name that no registry knows; the message lists valid names and a did-you-mean."""


@dataclass(frozen=True)
class Problem:
    """One problem found in a dataset: where it is, what is wrong, and how to fix it."""

    file: str
    """The file the problem is in."""
    location: str
    """Where in the file: ``line 12``, ``row 3``, or empty for the whole file."""
    message: str
    """What is wrong."""
    fix: str = ""
    """What to do about it (empty when the message says it)."""

    def __str__(self) -> str:
        where = f"{self.file}, {self.location}" if self.location else self.file
        fix = f" Fix: {self.fix}" if self.fix else ""
        end = "" if self.message.endswith((".", "?", "!")) else "."
        return f"{where}: {self.message}{end}{fix}"


class DatasetError(InputError):
    """A dataset could not be loaded. ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem], rows_read: int | None = None):
        self.problems = problems
        self.rows_read = rows_read
        first = str(problems[0]) if problems else "dataset could not be read"
        more = f" (and {len(problems) - 1} more problems; run `fbi datasets validate`)" \
            if len(problems) > 1 else ""
        super().__init__(first + more)


class ConfigError(FbiError):
    """The installation or environment is not as fbi needs it."""


class MissingKey(ConfigError):
    """No API key for a model's provider: a run cannot start; a dry run says so and goes
    on (it calls nothing)."""


class MissingExtra(ConfigError):
    """An optional dependency is missing."""

    def __init__(self, package: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the package '{package}', which is not installed. "
            f"Install it with: pip install 'fbi[{extra}]'"
        )


class StorageError(FbiError):
    """A run stopped because a file could not be written (a full or read-only disk);
    everything written before is intact and the run resumes from it."""


class ModelError(FbiError):
    """A model call failed for good."""


class ModelUnavailable(ModelError):
    """Calls in a row found the model unreachable (refused, unknown host, bad key, no such
    model): the run stops rather than fail every call; finished work is saved."""


def validation_summary(error: Exception, limit: int = 3) -> str:
    """A validation error in one line a person can act on — ``field: message`` for the
    first ``limit`` problems, without pydantic's URLs and input dumps."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error).splitlines()[0][:200] if str(error) else type(error).__name__
    found = errors()
    parts = []
    for item in found[:limit]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "value"
        message = "missing" if item.get("type") == "missing" else item.get("msg", "invalid")
        parts.append(f"{where}: {message}")
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(parts) + more
