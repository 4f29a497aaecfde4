from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT

from fbi.cli import main


def run_fbi(*args: str) -> subprocess.CompletedProcess:
    """The installed `fbi` command in a real subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "fbi", *args], capture_output=True,
                          text=True, cwd=OUTSIDE_CHECKOUT, env={**os.environ, "COLUMNS": "200"})


def test_version_and_help():
    result = run_fbi("--version")
    assert result.returncode == 0 and importlib.metadata.version("fbi") in result.stdout
    listed = run_fbi("--help").stdout
    from fbi.cli import COMMANDS

    assert all(f"  {name} " in listed for name in COMMANDS), listed


def test_a_mistyped_command_is_named_with_the_closest_one():
    result = run_fbi("evalute", "--judge", "x")
    assert result.returncode == 2
    assert "No such command 'evalute'. Did you mean 'evaluate'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_show_sample_counts_every_category():
    result = CliRunner().invoke(main, ["datasets", "show", "sample"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Wrong Formula" in result.output and "Score Invariant" not in result.output
    assert "on factual prompts" in result.output
    assert "Read 72 rows from 1 file(s); loaded 72 instances." in result.output


def test_quick_is_the_first_instance_of_each_category_of_the_sample():
    """The main job's dataset: hand-checked against sample.yaml's order."""
    from fbi.datasets import load_dataset
    from fbi.taxonomy import PERTURBATION_CATEGORIES

    sample = load_dataset("sample")
    quick = load_dataset("quick")
    first: dict[str, str] = {}
    for instance in sample:  # the file's order
        first.setdefault(instance.category, instance.id)
    assert [i.id for i in quick] == list(first.values())
    assert len(quick) == len(PERTURBATION_CATEGORIES) + 1 == 23  # the 22 and SI
    assert all(i.id.endswith("-1") for i in quick)
    by_id = {i.id: i for i in sample}
    assert all(i == by_id[i.id] for i in quick)
    shown = CliRunner().invoke(main, ["datasets", "show", "quick"], terminal_width=200)
    assert shown.exit_code == 0 and "loaded 23 instances" in shown.output, shown.output


def test_fbi_evaluate_judges_quick_unless_told_otherwise():
    result = CliRunner().invoke(main, ["evaluate", "--dry-run"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Read 23 rows from quick; judging 23 instances" in result.output
    assert "--dataset sample: all 72" in result.output
    whole = CliRunner().invoke(main, ["evaluate", "--dataset", "sample", "--dry-run"],
                               terminal_width=200)
    assert "judging 72 instances" in whole.output and "all 72" not in whole.output


def test_show_fbi_release(fbi_original):
    result = CliRunner().invoke(main, ["datasets", "show", str(fbi_original)],
                                terminal_width=200)
    assert result.exit_code == 0
    assert "2400" in result.output and "extra categories (not among the 22)" in result.output


@pytest.mark.parametrize("content, expected", [
    (b'{"category": "entty", "instruction": "q", "gold_answer": "a", "perturbed_answer": "b"}\n',
     "line 1: unknown category 'entty'. Did you mean 'entity'?"),
    (b'{"category": "entity", "instruction": "q", "gold_ans',
     "line 1: not valid JSON"),
    (b"", "the file is empty"),
    (b"\xff\xfe", "bytes that are not UTF-8"),
])
def test_bad_input_is_one_message_and_exit_code_2(tmp_path, content, expected):
    path = tmp_path / "in.jsonl"
    path.write_bytes(content)
    result = run_fbi("datasets", "show", str(path))
    assert result.returncode == 2
    assert expected in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_path_exit_code_2(tmp_path):
    result = run_fbi("datasets", "show", str(tmp_path / "missing.csv"))
    assert result.returncode == 2 and "no such file or directory" in result.stderr


def test_validate_lists_all_problems(tmp_path):
    path = tmp_path / "in.jsonl"
    rows = [{"id": "1", "category": "entity", "instruction": "q", "gold_answer": "a",
             "perturbed_answer": "b"}] * 3
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = run_fbi("datasets", "validate", str(path))
    assert result.returncode == 2
    assert "line 2: duplicate id '1'" in result.stdout
    assert "line 3: duplicate id '1'" in result.stdout
    assert "Read 3 rows from 1 file(s): 1 valid, 2 problem(s)." in result.stdout
    assert run_fbi("datasets", "validate", "sample").returncode == 0


def test_convert_round_trip(tmp_path):
    runner = CliRunner()
    out = tmp_path / "s.parquet"
    assert runner.invoke(main, ["datasets", "convert", "sample", str(out)]).exit_code == 0
    back = tmp_path / "s.jsonl"
    result = runner.invoke(main, ["datasets", "convert", str(out), str(back)])
    assert result.exit_code == 0 and "wrote 72 instances" in result.output
    assert len(back.read_text(encoding="utf-8").splitlines()) == 72


def test_convert_refuses_an_unknown_format_and_keeps_nothing(tmp_path):
    result = run_fbi("datasets", "convert", "sample", str(tmp_path / "out.xlsx"))
    assert result.returncode == 2
    assert "name the output .jsonl, .csv, .tsv or .parquet" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_only_fbi_lands_in_site_packages():
    """The wheel installs `fbi` alone: no top-level `prompts` or `annotate` modules."""
    files = importlib.metadata.files("fbi") or []
    tops = {f.parts[0] for f in files
            if not f.parts[0].startswith("..") and "__editable__" not in f.name}
    tops = {t for t in tops if not t.endswith((".dist-info", ".pth"))}
    assert tops <= {"fbi"}, tops
    from importlib import resources

    assert resources.files("fbi.data").joinpath("sample.yaml").is_file()


def test_every_module_of_the_source_tree_is_installed():
    """A package left out of pyproject's list would import from a checkout but not a wheel."""
    files = importlib.metadata.files("fbi") or []
    if any("__editable__" in f.name for f in files):
        pytest.skip("an editable install maps the source tree; only a wheel can be checked")
    from pathlib import Path

    installed = {f.as_posix() for f in files}
    root = Path(__file__).resolve().parents[1]
    for folder, package in (("fbi", "fbi"), ("prompts", "fbi/prompts"),
                            ("perturbations", "fbi/perturbations"),
                            ("annotate", "fbi/annotate")):
        for path in (root / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".jinja", ".md", ".tcss", ".yaml"):
                expected = f"{package}/{path.relative_to(root / folder).as_posix()}"
                assert expected in installed, f"{expected} is not in the wheel"


def test_strategies_and_categories_are_listed_by_the_names_the_options_take():
    from fbi.taxonomy import CATEGORIES, PAPER_STRATEGIES

    listed = CliRunner().invoke(main, ["strategies"], terminal_width=160)
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert max(len(line) for line in lines) <= 80  # fits a terminal, nothing folded
    rows = [line.split()[0] for line in lines if line.split() and
            line.split()[0] in PAPER_STRATEGIES]
    assert rows == list(PAPER_STRATEGIES)
    assert "0–2*" in listed.output and "* axis: hallucination 0–1" in listed.output
    assert "A/B/tie/both bad" in listed.output
    shown = CliRunner().invoke(main, ["categories"], terminal_width=200)
    assert shown.exit_code == 0
    for category in CATEGORIES:
        assert f" {category.name} " in shown.output
    helped = CliRunner().invoke(main, ["evaluate", "--help"], terminal_width=200)
    assert all(name in helped.output for name in PAPER_STRATEGIES)
    assert "fbi strategies" in helped.output and "fbi categories" in helped.output
    counts = CliRunner().invoke(main, ["datasets", "show"], terminal_width=160)
    assert "Entity (entity)" in counts.output and "Do Less (do-less)" in counts.output


def test_the_licence_pyproject_names_is_the_one_in_license():
    """Issue 26: pyproject said Apache-2.0 and no LICENSE file held its terms."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    text = (root / "LICENSE").read_text()
    assert project["license"] == "Apache-2.0"  # an SPDX expression
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
