"""Issue 14, item 2: every table fbi prints fits 80 columns with no name or number cut
('…'), strategies in the paper's order, the LF/F/IF/R/SI legend under rate tables."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer, qa_script

from fbi.cli import main
from fbi.taxonomy import ABILITY_LEGEND, PAPER_STRATEGIES


def at_80(tmp_path, *args: str) -> str:
    result = CliRunner().invoke(main, list(args), terminal_width=80, env={
        "COLUMNS": "80", "OPENAI_API_KEY": "sk-test",
        "FBI_CACHE": str(tmp_path / "cache.sqlite")})
    assert result.exit_code == 0, result.output
    return result.output


def fits(output: str) -> None:
    """No cut text and no line past 80 columns — but a printed command, on a line of its
    own, is never broken (the terminal wraps it; a copy pastes as one command)."""
    assert "…" not in output, output
    too_wide = [line for line in output.splitlines() if len(line) > 80
                and not line.startswith("  fbi ")]
    assert not too_wide, too_wide


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wide")
    with ChatServer() as server:
        output = at_80(folder, "evaluate", "--judge", "openai/judge", "--api-base",
                       server.url, "--strategy", "all", "--limit", "1", "--output",
                       str(folder / "run"))
    return folder, output


@pytest.mark.slow
def test_evaluate_prints_eleven_strategies_in_the_papers_order(judged):
    _, output = judged
    fits(output)
    names = ["Vanilla*", "Vanilla", "Rubric", "Axis", "Axis+Rubric", "Pairwise*", "Pairwise",
             "Rules (pairwise)", "Axis (pairwise)", "Axis+Rules (pairwise)", "Reference"]
    rows = [line.split("  ")[0].strip() for line in output.splitlines()
            if line.strip().split("  ")[0].strip() in names]
    assert rows == names and len(names) == len(PAPER_STRATEGIES)
    assert " ".join(ABILITY_LEGEND.split()[:4]) in " ".join(output.split())


def test_the_report_tables_fit(judged, tmp_path):
    folder, _ = judged
    output = at_80(tmp_path, "report", str(folder / "run"), "--output", str(tmp_path / "r"))
    fits(output)
    assert "strategy" in output and "[" in output  # rates with their intervals
    assert " ".join(ABILITY_LEGEND.split()[:4]) in " ".join(output.split())


def test_the_robustness_tables_fit(tmp_path):
    with ChatServer(script=qa_script) as server:
        output = at_80(tmp_path, "robustness", "run", "--model", "openai/qa", "--api-base",
                       server.url, "--suite", "all", "--limit", "4", "--output",
                       str(tmp_path / "robust"))
    fits(output)
    assert "Natural noise by kind" in output and "0.…" not in output
    assert f"  fbi report {tmp_path / 'robust'}\n" in output  # one line, whole


def test_a_title_is_never_wrapped_over_a_narrow_table():
    """Issue 51: the robustness "Answer order" title wrapped into its 23-character
    table."""
    import io

    from rich.console import Console

    from fbi.cli._run import fitting_tables

    title = "Answer order: accuracy, test-retest and % drop"
    drawn = Console(width=80, file=io.StringIO(), record=True)
    for table in fitting_tables(title, ["suite", "acc"], [["mmlu", "0.5"]], 80):
        drawn.print(table)
    assert any(title in line for line in drawn.export_text().splitlines())


@pytest.mark.parametrize("command", [("strategies",), ("categories",),
                                     ("datasets", "show", "sample")])
def test_the_catalogues_fit(tmp_path, command):
    fits(at_80(tmp_path, *command))


def test_perturb_names_every_category_whole_at_80_columns(tmp_path):
    """Issue 26: 13 category names were cut ('incorrect-…') and the reasons column made
    about 100 lines; the reasons now follow the table, one line each."""
    from fbi.taxonomy import category_names

    output = at_80(tmp_path, "perturb", "--engine", "rules", "--output",
                   str(tmp_path / "queue.jsonl"))
    fits(output)
    lines = output.splitlines()
    header = next(n for n, line in enumerate(lines) if line.split()[:2] == ["category",
                                                                            "engine"])
    rows = set()
    for line in lines[header + 2:]:  # past the header's rule
        if not line.strip():
            break
        rows.add(line.split()[0])
    assert rows == set(category_names()), rows  # the 22 and score-invariant, each whole
    assert len(output.splitlines()) < 60


# Issue 26, item 5: every command, not only the tables above.


@pytest.fixture(scope="module")
def two_judges(judged):
    """The judged run (labelled, its model long) and a second judge over the same
    instances, reported together with a named comparison: the verdict opens the output."""
    folder, _ = judged
    with ChatServer() as server:
        at_80(folder, "evaluate", "--judge", "openai/a-judge-with-a-rather-long-model-name",
              "--label", "second-judge", "--api-base", server.url, "--strategy", "all",
              "--limit", "1", "--output", str(folder / "second"))
    return folder


@pytest.mark.slow
def test_a_two_judge_report_with_its_verdict_fits(two_judges, tmp_path):
    ids = [json.loads(line)["id"] for line in
           (two_judges / "run" / "instances.jsonl").read_text().splitlines()]
    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,annotator,verdict,score\n" + "".join(
        f"{i},{who},{'ab'[(n + k) % 2]},{n % 9 + 1}\n" for n, i in enumerate(ids)
        for k, who in enumerate(("ann", "a-second-annotator"))))
    output = at_80(tmp_path, "report", str(two_judges / "run"), str(two_judges / "second"),
                   "--output", str(tmp_path / "r"), "--compare",
                   "second-judge:vanilla,second-judge:rubric", "--human", str(labels))
    fits(output)
    assert "Judges against people: scores" in output and "the ceiling" in output
    flat = " ".join(output.split())
    assert "No significant difference between openai/judge and second-judge" in flat
    assert "second-judge under Vanilla and second-judge under Rubric" in flat


def test_show_fits(judged, tmp_path):
    folder, _ = judged
    first = (folder / "run" / "judgments.jsonl").read_text().splitlines()[0]
    call_id = json.loads(first)["call_id"]
    fits(at_80(tmp_path, "show", str(folder / "run"), call_id))


@pytest.mark.slow
def test_the_data_commands_fit(judged, tmp_path):
    folder, _ = judged
    for command in (("cache", "info"), ("datasets", "validate", "sample"),
                    ("datasets", "convert", "sample", str(tmp_path / "sample.csv")),
                    ("evaluate", "--judge", "openai/judge", "--strategy", "all",
                     "--dry-run", "--show-prompts", "--output", str(tmp_path / "dry"))):
        fits(at_80(folder, *command))


def test_vetting_and_publishing_fit(tmp_path):
    from fbi import load_dataset, write_dataset
    from fbi.vet import AnnotatorLog, load_queue

    queue = tmp_path / "queue.jsonl"
    write_dataset([i for i in load_dataset("sample") if i.category in (
        "entity", "incorrect-instruction-following", "score-invariant")], queue)
    ids = [i.id for i in load_queue(queue)]
    for annotator, flip in (("ann", None), ("a-second-annotator-name", ids[1])):
        log = AnnotatorLog(queue, annotator)
        for instance_id in ids:
            log.record(instance_id, "label", label="invalid" if instance_id == flip
                       else "valid")
    fits(at_80(tmp_path, "annotate", "agreement", str(queue)))
    fits(at_80(tmp_path, "annotate", "export", str(queue), "--output",
               str(tmp_path / "vetted.jsonl")))
    fits(at_80(tmp_path, "publish", str(tmp_path / "vetted.jsonl"), "--repo-id", "org/x",
               "--dry-run", "--queue", str(queue), "--output", str(tmp_path / "hub")))


def test_robustness_score_fits(tmp_path):
    with ChatServer(script=qa_script) as server:
        at_80(tmp_path, "robustness", "run", "--model", "openai/qa", "--api-base",
              server.url, "--suite", "all", "--limit", "4", "--output",
              str(tmp_path / "robust"))
    output = at_80(tmp_path, "robustness", "score", str(tmp_path / "robust" / "answers.jsonl"))
    fits(output)
    assert "MultiQ&A" in output


def test_a_printed_command_is_never_broken_across_lines(tmp_path):
    """Issue 51: the closing hint's command is one line however narrow the terminal (a
    terminal wraps it; a copy pastes as one command), never `fbi` ↵ `report …`."""
    output_dir = tmp_path / ("a-run-folder-with-a-long-name-" * 3)
    with ChatServer() as server:
        output = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--limit", "1",
            "--category", "entity", "--output", str(output_dir)], terminal_width=80, env={
                "COLUMNS": "80", "OPENAI_API_KEY": "sk-test",
                "FBI_CACHE": str(tmp_path / "cache.sqlite")}).output
    assert f"  fbi report {output_dir}\n" in output
