"""Issue 22, item 4: every byte fbi prints or writes that came from outside is escaped for
where it goes — a terminal, a Markdown table, a CSV cell (fbi/escaping.py)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt
from openai_server import ChatServer

from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.escaping import csv_cell, markdown_text, visible

ENV = {"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"}
#: An OSC 52 clipboard write, an OSC 0 title change, a screen clear, a C1 CSI.
TERMINAL_ATTACK = "\x1b]52;c;SGVsbG8=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m"
HOSTILE_LABEL = "=HYPERLINK(\"http://x\")|judge\n# Injected\n[click](javascript:alert(1))"


def test_the_escapers_by_hand():
    assert visible("a\x1bb\tc\nd\x9b\x7f") == "a\\x1bb\tc\nd\\x9b\\x7f"
    assert markdown_text("a|b\nc [x](y) `z` <b> 75.0 [30–95]") == \
        r"a\|b c [x]\(y) \`z\` &lt;b&gt; 75.0 [30–95]"
    assert [csv_cell(v) for v in ("=1+1", "+1", "-x", "@SUM(A1)", "\tx", "ok", -0.5, 3)] == \
        ["'=1+1", "'+1", "'-x", "'@SUM(A1)", "'\tx", "ok", -0.5, 3]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A run over a dataset whose texts carry terminal escapes, under a hostile label."""
    folder = tmp_path_factory.mktemp("hostile")
    instances = [i.model_copy(update={"perturbed_answer": i.perturbed_answer + TERMINAL_ATTACK,
                                      "instruction": i.instruction + TERMINAL_ATTACK})
                 for i in load_dataset("sample").instances if i.category == "entity"]
    dataset = write_dataset(instances, folder / "hostile.jsonl")
    run = folder / "run"
    with ChatServer() as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--dataset",
            str(dataset), "--output", str(run), "--strategy", "vanilla", "--strategy",
            "pairwise", "--label", HOSTILE_LABEL, "--no-cache"], env=ENV)
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(run)], env=ENV)
    assert report.exit_code == 0, report.output
    return dataset, run, instances


def assert_no_raw_controls(text: str) -> None:
    raw = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    assert not raw, raw


def test_show_and_dry_run_print_escapes_not_escape_sequences(hostile):
    dataset, run, instances = hostile
    call_id = f"{instances[0].id}|vanilla|perturbed"
    shown = CliRunner().invoke(main, ["show", str(run), call_id], env=ENV)
    assert shown.exit_code == 0, shown.output
    assert_no_raw_controls(shown.output)
    assert "\\x1b]52;c;SGVsbG8=\\x07" in shown.output
    dry = CliRunner().invoke(main, ["evaluate", "--judge", "openai/judge", "--api-base",
                                    "http://127.0.0.1:9/v1", "--dataset", str(dataset),
                                    "--output", str(run.parent / "dry"), "--dry-run",
                                    "--show-prompts"], env=ENV)
    assert dry.exit_code == 0, dry.output
    assert_no_raw_controls(dry.output)
    assert "\\x1b[2J" in dry.output


def test_datasets_validate_warns_about_control_characters(hostile):
    dataset, _, instances = hostile
    result = CliRunner().invoke(main, ["datasets", "validate", str(dataset)], env=ENV)
    assert result.exit_code == 0, result.output  # it loads: a warning, not a problem
    assert_no_raw_controls(result.output)
    assert result.output.count("hold control characters") == len(instances)  # 2 fields each
    assert "line 1" in result.output and "instruction, perturbed_answer" in result.output


def test_a_hostile_label_stays_in_its_markdown_cell(hostile):
    _, run, _ = hostile
    text = (run / "report.md").read_text()
    assert_no_raw_controls(text)
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "javascript:" not in re.findall(r'href="([^"]*)"', html).__str__()
    headings = re.findall(r"<h\d>(.*?)</h\d>", html)
    assert not any(h.strip() == "Injected" for h in headings)
    for table in re.findall(r"<table>.*?</table>", html, re.DOTALL):
        widths = {len(re.findall(r"<t[hd]", row)) for row in re.findall(r"<tr>.*?</tr>", table,
                                                                           re.DOTALL)}
        assert len(widths) == 1, widths  # every row as wide as the header
    assert "=HYPERLINK" in html  # the label is shown, as text


def test_a_label_starting_with_a_formula_is_text_in_the_csv(hostile):
    _, run, _ = hostile
    rows = list(csv.DictReader(io.StringIO((run / "report.csv").read_text())))
    assert rows and all(row["judge"].startswith("'=HYPERLINK") for row in rows)  # the label
    summary = json.loads((run / "summary.json").read_text())
    assert summary["runs"][0]["label"] == HOSTILE_LABEL  # the data itself is kept as given


def test_a_single_output_file_is_never_replaced_without_replace(tmp_path):
    """fbi never overwrites a file it did not write: `datasets convert OUT`, `robustness
    score --output FILE` and `perturb --output QUEUE` (with no run of fbi's beside it)
    refuse an existing file; --replace lets it go."""
    from fbi.cli import main

    theirs = tmp_path / "mine.jsonl"
    theirs.write_text("my own notes\n", encoding="utf-8")
    answers = tmp_path / "answers.csv"
    answers.write_text("question_id,variant,answer,gold\nq1,0,a,a\nq1,1,a,a\n")
    commands = [["datasets", "convert", "quick", str(theirs)],
                ["robustness", "score", str(answers), "--output", str(theirs)],
                ["perturb", "--engine", "rules", "--categories", "spelling", "--limit", "1",
                 "--output", str(theirs)]]
    for command in commands:
        refused = CliRunner().invoke(main, command, env=ENV)
        assert refused.exit_code == 2, (command, refused.output)
        assert "the file exists" in refused.output and "--replace" in refused.output
        assert theirs.read_text(encoding="utf-8") == "my own notes\n"
    for command in commands:
        replaced = CliRunner().invoke(main, [*command, "--replace"], env=ENV)
        assert replaced.exit_code == 0, (command, replaced.output)
        theirs.write_text("my own notes\n", encoding="utf-8")
