"""docs/contributing.md's built-in path, worked (issue 64): a new stage of fbi's own with
its command is four files — the stage's package (its face and its module), the command,
and pyproject.toml — plus the architecture page's layer table. The test makes exactly
those changes in a copy of the checkout, then the copy's layer test passes and its new
command runs a stage against the stand-in judge, found as any built-in is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fbi.standin import StandIn, chat_completion

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples"

pytestmark = pytest.mark.slow


def checkout_copy(target: Path) -> Path:
    """The checkout's tracked files (git's list), copied."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def add_the_stage(copy: Path) -> list[str]:
    """The built-in path's steps, as docs/contributing.md lists them; the files touched."""
    package = copy / "fbi" / "audit"
    package.mkdir()
    shutil.copy(EXAMPLE / "builtin" / "face.py", package / "__init__.py")
    shutil.copy(EXAMPLE / "gold_audit.py", package / "_stage.py")
    shutil.copy(EXAMPLE / "builtin" / "command.py", copy / "fbi" / "cli" / "audit.py")
    lines = (EXAMPLE / "builtin" / "pyproject-lines.toml").read_text(encoding="utf-8")
    project = (copy / "pyproject.toml").read_text(encoding="utf-8")
    stages = re.search(r"^stages = .*$", lines, re.M).group(0)
    project = re.sub(r"^stages = .*$", stages, project, count=1, flags=re.M)
    project = project.replace('    "fbi.report",\n', '    "fbi.report", "fbi.audit",\n', 1)
    for group, entry in re.findall(r'^(\[project\.entry-points\."[\w.]+"\])\n(.+)$', lines,
                                   re.M):
        project = project.replace(group + "\n", f"{group}\n{entry}\n", 1)
    (copy / "pyproject.toml").write_text(project, encoding="utf-8")
    page = copy / "docs" / "concepts" / "architecture.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("`robustness/`, `report/` |",
                                 "`robustness/`, `report/`, `audit/` |", 1), encoding="utf-8")
    return ["fbi/audit/__init__.py", "fbi/audit/_stage.py", "fbi/cli/audit.py",
            "pyproject.toml", "docs/concepts/architecture.md"]


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_a_built_in_stage_with_its_command_is_four_files(tmp_path):
    copy = checkout_copy(tmp_path / "checkout")
    before = contents(copy)
    touched = add_the_stage(copy)
    after = contents(copy)
    changed = sorted(name for name in after.keys() | before.keys()
                     if before.get(name) != after.get(name))
    assert changed == sorted(touched)  # nothing else was edited
    code = [name for name in changed if not name.startswith("docs/")]
    assert len(code) <= 4, code

    env = {**os.environ, "PYTHONPATH": str(copy), "COLUMNS": "200"}
    layout = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "tests/test_layout.py"], cwd=copy, env=env,
                            capture_output=True, text=True)
    assert layout.returncode == 0, layout.stdout[-3000:]

    def audit(request):
        return chat_completion('{"correct": true}', request)

    with StandIn(answer=audit) as server:
        ran = subprocess.run(
            [sys.executable, "-m", "fbi", "gold-audit", "--judge", "openai/auditor",
             "--api-base", server.url, "--no-cache", "--output", str(tmp_path / "audit")],
            cwd=copy, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(line) for line in
               (tmp_path / "audit" / "audit.jsonl").read_text().splitlines()]
    assert len(records) == 23 and all(r["correct"] is True for r in records)  # quick's 23
    spec = json.loads((tmp_path / "audit" / "run.json").read_text())
    assert spec["kind"] == "gold-audit"
    listed = subprocess.run([sys.executable, "-m", "fbi", "--help"], cwd=copy, env=env,
                            capture_output=True, text=True).stdout
    assert "gold-audit" in listed
