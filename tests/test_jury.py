"""Issue 15, item 4: a jury of judges as a virtual judge, through every report table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi import load_dataset
from fbi.cli import main

SAMPLE = load_dataset("sample").instances
PERTURBED = {i.perturbed_answer for i in SAMPLE if i.category != "score-invariant"}
ENTITY = {i.perturbed_answer for i in SAMPLE if i.category == "entity"}


def judge_catching(caught: set[str]):
    """A scripted judge that detects exactly the perturbed answers in ``caught``."""
    def script(request):
        prompt = request["messages"][-1]["content"]
        if "<answer_a>" in prompt:
            first = prompt.split("<answer_a>\n", 1)[1].split("\n</answer_a>", 1)[0]
            second = prompt.split("<answer_b>\n", 1)[1].split("\n</answer_b>", 1)[0]
            if first in caught:
                return '{"verdict": "B"}'
            return '{"verdict": "A"}' if second in caught else '{"verdict": "tie"}'
        answer = prompt.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return '{"score": 1}' if answer in caught else '{"score": 10}'
    return script


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jury")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(folder / "c.sqlite")}
    judges = {"careful": PERTURBED, "partial": ENTITY, "lenient": set()}
    for name, caught in judges.items():
        with ChatServer(script=judge_catching(caught)) as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", f"openai/{name}", "--api-base", server.url,
                "--strategy", "vanilla_star", "--strategy", "pairwise_star",
                "--output", str(folder / name)], env=env)
            assert result.exit_code == 0, result.output
    return folder


def jury_rates(runs, mode: str) -> dict[tuple[str, str, str], float]:
    out = runs / f"report-{mode}"
    result = CliRunner().invoke(main, ["report", str(runs / "careful"), str(runs / "partial"),
                                       str(runs / "lenient"), "--jury", mode, "--output",
                                       str(out), "--format", "json", "--format", "md"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    label = f"jury:{mode}(openai/careful, openai/partial, openai/lenient)"
    return {(r["strategy"], r["level"], r["group"]): r["rate"] for r in summary["rates"]
            if r["judge"] == label}


@pytest.mark.slow
def test_majority_detects_what_two_of_three_members_detect(runs):
    rates = jury_rates(runs, "majority")
    # careful catches everything, partial only entity errors, lenient nothing
    assert rates[("vanilla_star", "category", "entity")] == 0.0
    assert rates[("vanilla_star", "category", "grammar")] == 1.0
    assert rates[("vanilla_star", "overall", "all")] == pytest.approx(21 / 22)
    assert rates[("pairwise_star", "category", "entity")] == 0.0
    assert rates[("pairwise_star", "category", "grammar")] == 1.0


def test_any_detects_what_one_member_detects(runs):
    rates = jury_rates(runs, "any")
    assert rates[("vanilla_star", "overall", "all")] == 0.0


def test_mean_compares_mean_scores(runs):
    rates = jury_rates(runs, "mean")
    # entity: gold 10,10,10 vs perturbed 1,1,10 → mean 4 < 10; grammar: 1,10,10 → 7 < 10
    assert rates[("vanilla_star", "overall", "all")] == 0.0


def test_the_jury_is_in_every_table_like_a_judge(runs):
    jury_rates(runs, "majority")  # (the report it reads; no other test's leftovers)
    out = runs / "report-majority"
    markdown = (out / "report.md").read_text()
    assert "jury:majority(openai/careful, openai/partial, openai/lenient)" in markdown
    summary = json.loads((out / "summary.json").read_text())
    assert any(row["judge"].startswith("jury:") for row in summary["leaderboard"])
    assert any(c["judge_a"].startswith("jury:") or c["judge_b"].startswith("jury:")
               for c in summary["comparisons"])


def test_a_jury_needs_two_runs(runs, tmp_path):
    result = CliRunner().invoke(main, ["report", str(runs / "careful"), "--jury", "majority",
                                       "--output", str(tmp_path)])
    assert result.exit_code == 2 and "at least two runs" in result.output
