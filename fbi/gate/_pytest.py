"""The gate as a pytest plugin: ``pytest --fbi-gate gate.yaml`` adds one test per file
given, which runs `fbi gate` as the file says and fails when the judge regressed (or the
suite could not be judged whole). Registered under pytest's ``pytest11`` entry point, so
installing fbi makes the option available; it imports nothing of fbi until asked.

A gate file (YAML)::

    version: 1
    suite: sample              # the dataset the baseline judged
    judge: openai/my-judge
    baseline: gate/baseline    # relative paths are the file's folder's
    output: gate-run
    api_base: http://localhost:8000/v1   # optional; a list is a pool
    max_regression: 0.05       # optional
    alpha: 0.05                # optional
    human: labels.csv          # optional: fail too when a certificate no longer holds
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: The keys of a gate file, and whether each is required.
KEYS = {"version": True, "suite": True, "judge": True, "baseline": True, "output": True,
        "api_base": False, "max_regression": False, "alpha": False, "human": False}


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
        from fbi.gate._gate import GateSettings, run_gate
        from fbi.settings import ModelSettings

        found = read_gate_file(self.path_of_gate)
        here = self.path_of_gate.resolve().parent
        bases = found.get("api_base") or ()
        bases = (bases,) if isinstance(bases, str) else tuple(bases)
        settings = ModelSettings(model=found["judge"], api_base=bases[0] if bases else None,
                                 api_pool=bases if len(bases) > 1 else ())
        checks = GateSettings(float(found.get("max_regression", 0.05)),
                              float(found.get("alpha", 0.05)))
        human = here / found["human"] if found.get("human") else None
        totals, result = run_gate(str(found["suite"]), here / found["baseline"], settings,
                                  here / found["output"], checks, settings.client(None),
                                  human=human)
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


def read_gate_file(path: Path) -> dict[str, Any]:
    """A gate file's settings; an InputError naming the file for anything else."""
    from fbi.errors import InputError
    from fbi.user_yaml import load_user_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the gate file ({error})") from None
    found = load_user_yaml(text, str(path))
    if not isinstance(found, dict):
        raise InputError(f"{path}: a gate file is a mapping of {', '.join(KEYS)}")
    unknown = sorted(set(found) - set(KEYS))
    missing = sorted(key for key, required in KEYS.items() if required and key not in found)
    if unknown or missing:
        raise InputError(f"{path}: " + "; ".join(
            [f"unknown keys {', '.join(unknown)}"] * bool(unknown) +
            [f"missing {', '.join(missing)}"] * bool(missing)) +
            f". Fix: give {', '.join(k for k, r in KEYS.items() if r)}")
    if found["version"] != 1:
        raise InputError(f"{path}: version {found['version']!r}; this fbi reads version 1")
    return found
