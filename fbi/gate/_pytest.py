"""The gate as a pytest plugin: ``pytest --fbi-gate gate.yaml`` adds one test per file
given, which runs `fbi gate` as the file says and fails when the judge regressed (or the
suite could not be judged whole, or too much of it went without a verdict). Registered
under pytest's ``pytest11`` entry point, so installing fbi makes the option available; it
imports nothing of fbi until asked.

A gate file (YAML)::

    version: 1
    suite: sample              # the dataset the baseline judged
    judge: openai/my-judge
    baseline: gate/baseline    # relative paths are the file's folder's
    output: gate-run
    api_base: http://localhost:8000/v1   # optional; a list is a pool
    max_regression: 0.05       # optional
    alpha: 0.05                # optional
    max_left_out: 0.1          # optional: fail when more of the suite is left unjudged
    human: labels.csv          # optional: fail too when a certificate no longer holds
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: The keys of a gate file, and whether each is required.
KEYS = {"version": True, "suite": True, "judge": True, "baseline": True, "output": True,
        "api_base": False, "max_regression": False, "alpha": False, "max_left_out": False,
        "human": False}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fbi").addoption(
        "--fbi-gate", action="append", default=[], metavar="GATE.yaml",
        help="Run fbi's regression gate as this file says (repeatable); the test fails "
             "when the judge got worse than its baseline run.")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    for path in config.getoption("fbi_gate"):
        items.append(GateItem.from_parent(session, name=f"fbi-gate[{path}]",
                                          path_of_gate=Path(path)))


class GateFailed(Exception):
    """The gate said no: the sentence of gate.json, or why it could not judge."""


class GateItem(pytest.Item):
    """One gate file as a test."""

    def __init__(self, *, path_of_gate: Path, **kwargs: Any):
        super().__init__(**kwargs)
        self.path_of_gate = path_of_gate

    def runtest(self) -> None:
        from fbi.gate._gate import GateSettings, gate
        from fbi.settings import ModelSettings

        found = read_gate_file(self.path_of_gate)
        here = self.path_of_gate.resolve().parent
        bases = found.api_base
        bases = (bases,) if isinstance(bases, str) else tuple(bases or ())
        settings = ModelSettings(model=found.judge, api_base=bases[0] if bases else None,
                                 api_pool=bases if len(bases) > 1 else ())
        checks = GateSettings(found.max_regression, found.alpha, found.max_left_out)
        human = here / found.human if found.human else None
        totals, result = gate(found.suite, here / found.baseline, here / found.output,
                              settings, checks=checks, human=human)
        # (no response cache: a cached reply would hide the very change the gate looks for)
        if result is None:
            raise GateFailed(f"{self.path_of_gate}: the suite was not judged whole "
                             f"({totals.failed} calls failed); run the gate again")
        if not result.passed:
            raise GateFailed(result.sentence)

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, GateFailed):
            return str(excinfo.value)
        from fbi.errors import FbiError

        if isinstance(excinfo.value, FbiError):
            return f"{self.path_of_gate}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path_of_gate, 0, self.name


def read_gate_file(path: Path):
    """A gate file's settings (`GateFile`); an InputError naming the file and the key for
    anything else: an unknown or missing key, a value of the wrong type (a list, a
    number, null or a boolean where text, a path or a number belongs), a path too long."""
    from pydantic import ValidationError

    from fbi.errors import InputError
    from fbi.files import read_text
    from fbi.user_yaml import load_user_yaml

    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the gate file ({error})") from None
    found = load_user_yaml(text, str(path))
    if not isinstance(found, dict):
        raise InputError(f"{path}: a gate file is a mapping of {', '.join(KEYS)}")
    unknown = sorted(str(k) for k in set(found) - set(KEYS))
    missing = sorted(key for key, required in KEYS.items() if required and key not in found)
    if unknown or missing:
        raise InputError(f"{path}: " + "; ".join(
            [f"unknown keys {', '.join(unknown)}"] * bool(unknown) +
            [f"missing {', '.join(missing)}"] * bool(missing)) +
            f". Fix: give {', '.join(k for k, r in KEYS.items() if r)}")
    if type(found["version"]) is not int or found["version"] != 1:
        raise InputError(f"{path}: version {found['version']!r}; this fbi reads version 1 "
                         "(the number 1)")
    try:
        return gate_file_model().model_validate(found)
    except ValidationError as error:
        problem = error.errors()[0]
        key = ".".join(str(p) for p in problem["loc"])
        raise InputError(f"{path}: {key}: {problem['msg']} (given {problem['input']!r:.80}). "
                         "Fix: see docs/how-to/gate.md for each key's type") from None


def gate_file_model():
    """The typed settings of a gate file: built on first use, so that installing fbi adds
    nothing to a pytest run that gives no --fbi-gate."""
    from typing import Annotated, Literal

    from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

    #: A path in a gate file: text, not empty, no NUL, not past what a file system takes.
    GatePath = Annotated[StrictStr, Field(min_length=1, max_length=1024, pattern=r"^[^\x00]+$")]
    Share = Annotated[StrictFloat | StrictInt, Field(ge=0, lt=1, allow_inf_nan=False)]
    Level = Annotated[StrictFloat | StrictInt, Field(gt=0, lt=1, allow_inf_nan=False)]

    class GateFile(BaseModel):
        """A gate file, version 1 (the module docstring)."""

        model_config = ConfigDict(extra="forbid")

        version: Literal[1]
        suite: GatePath
        judge: Annotated[StrictStr, Field(min_length=1, max_length=1024)]
        baseline: GatePath
        output: GatePath
        api_base: GatePath | Annotated[list[GatePath], Field(min_length=1)] | None = None
        max_regression: Share = 0.05
        alpha: Level = 0.05
        max_left_out: Share = 0.10
        human: GatePath | None = None

    return GateFile
