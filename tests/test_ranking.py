"""Issue 24, item 4: ranking stability — Kendall's τ-b between two judges' (or two
strategies') rankings of the categories by undetected rate, with a bootstrap interval
over instances. Expected values from scipy and a brute-force bootstrap written here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from scipy.stats import kendalltau

from fbi.cli import main
from fbi.metrics import InstanceOutcome, kendall_tau_b, ranking_stability
from fbi.taxonomy import get_category

CATEGORIES = ["entity", "grammar", "spelling", "do-less", "incorrect-fact", "calculations"]


def test_tau_b_matches_scipy_with_ties_and_in_batches():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, size=(50, 9)) / 3
    y = rng.integers(0, 4, size=(50, 9)) / 3
    ours = kendall_tau_b(x, y)
    for row, (a, b) in enumerate(zip(x, y, strict=True)):
        expected = kendalltau(a, b).statistic  # τ-b, scipy's default
        assert (np.isnan(ours[row]) and np.isnan(expected)) or ours[row] == pytest.approx(
            expected)
    assert np.isnan(kendall_tau_b(np.ones(4), np.arange(4.0)))  # a constant ranking


def outcomes(judge: str, strategy: str, misses: dict[str, list[bool]]):
    return [InstanceOutcome(f"{category}-{n}", judge, strategy, "single",
                            get_category(category).ability, category,
                            "undetected" if missed else "detected")
            for category, flags in misses.items() for n, missed in enumerate(flags)]


def misses(rng, rates: list[float], n: int = 40) -> dict[str, list[bool]]:
    return {c: list(rng.random(n) < rate) for c, rate in zip(CATEGORIES, rates, strict=True)}


@pytest.mark.slow
def test_tau_and_interval_against_scipy_and_a_brute_force_bootstrap():
    rng = np.random.default_rng(7)
    a = misses(rng, [0.1, 0.3, 0.5, 0.6, 0.8, 0.9])
    b = misses(rng, [0.2, 0.1, 0.6, 0.4, 0.9, 0.7])
    (row,) = ranking_stability(outcomes("judge-a", "vanilla", a) +
                               outcomes("judge-b", "vanilla", b), resamples=4000)
    assert (row.kind, row.judge_a, row.judge_b, row.categories,
            row.instances) == ("judges", "judge-a", "judge-b", 6, 240)
    rate_a = [np.mean(a[c]) for c in sorted(CATEGORIES)]
    rate_b = [np.mean(b[c]) for c in sorted(CATEGORIES)]
    assert row.tau == pytest.approx(kendalltau(rate_a, rate_b).statistic)
    # the paired bootstrap done the slow way: draw each category's instances (the same
    # for both judges) with replacement, rank, scipy's τ-b; percentile interval
    draws = []
    for _ in range(4000):
        picked = {c: rng.integers(0, 40, 40) for c in CATEGORIES}
        x = [np.mean(np.array(a[c])[picked[c]]) for c in sorted(CATEGORIES)]
        y = [np.mean(np.array(b[c])[picked[c]]) for c in sorted(CATEGORIES)]
        draws.append(kendalltau(x, y).statistic)
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    assert row.ci_low == pytest.approx(low, abs=0.07)
    assert row.ci_high == pytest.approx(high, abs=0.07)
    assert row.ci_low <= row.tau <= row.ci_high


def test_pairs_of_judges_and_of_strategies_and_what_cannot_be_ranked():
    rng = np.random.default_rng(2)
    rows = ranking_stability(
        outcomes("j1", "vanilla", misses(rng, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))
        + outcomes("j1", "rubric", misses(rng, [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]))
        + outcomes("j2", "vanilla", {"entity": [True, False]}))  # one category only
    kinds = {(r.kind, r.judge_a, r.strategy_a, r.judge_b, r.strategy_b)
             for r in rows}
    assert kinds == {("judges", "j1", "vanilla", "j2", "vanilla"),
                     ("strategies", "j1", "vanilla", "j1", "rubric")}  # the paper's order
    one_category = next(r for r in rows if r.kind == "judges")
    assert one_category.categories == 1 and one_category.tau is None
    reversed_ = next(r for r in rows if r.kind == "strategies")
    assert reversed_.tau < 0  # the strategies find opposite categories hard
    assert reversed_.ci_low is not None and reversed_.fewest_per_category == 40
    assert ranking_stability(outcomes("j", "vanilla", {"entity": [True]})) == []


@pytest.mark.slow
def test_the_report_shows_it_in_markdown_and_html(tmp_path):
    """Through the CLI: two judges over the loopback server, one that misses spelling
    errors only, one that misses everything but spelling errors."""
    from fbi import load_dataset

    instances = [i for i in load_dataset("sample").instances if not i.is_score_invariant]
    spelling = {i.perturbed_answer for i in instances if i.category == "spelling"}
    others = {i.perturbed_answer for i in instances} - spelling

    def misses_only(missed):
        def judge(request):
            answer = request["messages"][-1]["content"].split("<answer>\n", 1)[1].split(
                "\n</answer>", 1)[0]
            return '{"score": 10}' if answer in missed else '{"score": 1}' \
                if answer in spelling | others else '{"score": 9}'
        return judge

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    for name, missed in (("a", spelling), ("b", others)):
        with ChatServer(script=misses_only(missed)) as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", f"openai/{name}", "--api-base", server.url,
                "--strategy", "vanilla_star", "--output", str(tmp_path / name)], env=env)
            assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                       "--output", str(tmp_path / "out")])
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (row,) = summary["ranking_stability"]
    categories = sorted({i.category for i in instances})
    rate_a = [1.0 if c == "spelling" else 0.0 for c in categories]
    assert row["tau"] == pytest.approx(kendalltau(rate_a, [1 - r for r in rate_a]).statistic)
    assert row["tau"] == pytest.approx(-1.0)
    # a few instances per category: τ, but no interval that would look surer than it is
    assert row["fewest_per_category"] < 5 and row["ci_low"] is None
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## Ranking stability: which errors are hardest" in markdown
    assert "| judges | openai/a | openai/b | Vanilla* |" in markdown
    assert "(no interval: " in markdown
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="ranking"' in html and "Kendall" in html
