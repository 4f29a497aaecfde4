"""Issue 15, item 2: paired significance between two judges on the same instances,
checked against statsmodels."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from fbi.cli import main
from fbi.metrics import InstanceOutcome, holm, mcnemar_exact_p, paired_comparisons
from fbi.taxonomy import Ability


@pytest.mark.parametrize("b, c", [(0, 0), (0, 5), (3, 9), (10, 10), (1, 25), (40, 22)])
def test_exact_mcnemar_matches_statsmodels(b, c):
    table = [[5, b], [c, 7]]
    assert mcnemar_exact_p(b, c) == pytest.approx(mcnemar(table, exact=True).pvalue)


def test_holm_matches_statsmodels():
    rng = random.Random(3)
    pvalues = [rng.random() ** 3 for _ in range(27)]
    assert holm(pvalues) == pytest.approx(list(multipletests(pvalues, method="holm")[1]))


def outcomes(judge, misses: dict[str, list[bool]]):
    abilities = {"entity": Ability.FACTUAL, "grammar": Ability.LONG_FORM}
    return [InstanceOutcome(f"{category}-{n}", judge, "vanilla", "single",
                            abilities[category], category,
                            "undetected" if missed else "detected")
            for category, flags in misses.items() for n, missed in enumerate(flags)]


def test_each_group_is_tested_and_the_family_corrected():
    rng = random.Random(7)
    a = {"entity": [rng.random() < 0.8 for _ in range(40)],
         "grammar": [rng.random() < 0.5 for _ in range(30)]}
    b = {"entity": [rng.random() < 0.2 for _ in range(40)],
         "grammar": [rng.random() < 0.5 for _ in range(30)]}
    rows = paired_comparisons(outcomes("judge-a", a) + outcomes("judge-b", b))
    assert [(r.level, r.group) for r in rows] == [
        ("category", "entity"), ("category", "grammar"), ("ability", "F"), ("ability", "LF"),
        ("overall", "all")]
    for row in rows:
        if row.level == "category":
            pairs = list(zip(a[row.group], b[row.group], strict=True))
        elif row.level == "ability":
            category = "entity" if row.group == "F" else "grammar"
            pairs = list(zip(a[category], b[category], strict=True))
        else:
            pairs = [*zip(a["entity"], b["entity"], strict=True),
                     *zip(a["grammar"], b["grammar"], strict=True)]
        only_a = sum(x and not y for x, y in pairs)
        only_b = sum(y and not x for x, y in pairs)
        both = sum(x and y for x, y in pairs)
        neither = len(pairs) - only_a - only_b - both
        expected = mcnemar([[both, only_a], [only_b, neither]], exact=True).pvalue
        assert (row.missed_by_a_only, row.missed_by_b_only) == (only_a, only_b)
        assert row.p == pytest.approx(expected)
        assert row.rate_a == pytest.approx(sum(x for x, _ in pairs) / len(pairs))
    adjusted = multipletests([r.p for r in rows], method="holm")[1]
    assert [r.p_adjusted for r in rows] == pytest.approx(list(adjusted))
    entity = rows[0]
    assert entity.significant and not rows[1].significant


def careful_judge():
    """A loopback judge that never misses: 1 for every perturbed answer, 10 for the rest;
    in a pairwise prompt, the answer that is not perturbed."""
    from fbi import load_dataset

    perturbed = {i.perturbed_answer for i in load_dataset("sample").instances
                 if i.category != "score-invariant"}

    def careful(request):
        prompt = request["messages"][-1]["content"]
        if "<answer_a>" in prompt:
            first = prompt.split("<answer_a>\n", 1)[1].split("\n</answer_a>", 1)[0]
            return '{"verdict": "B"}' if first in perturbed else '{"verdict": "A"}'
        answer = prompt.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return '{"score": 1}' if answer in perturbed else '{"score": 10}'

    return careful


def careful_against_lenient(tmp_path, *evaluate_args: str) -> dict:
    """Run the careful judge and one that scores everything 5 (misses every error) over
    the loopback server, report both together (json and md), and return summary.json."""
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    for name, script in (("careful", careful_judge()), ("lenient", lambda r: '{"score": 5}')):
        with ChatServer(script=script, latency_s=0.01) as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", f"openai/{name}", "--api-base", server.url,
                "--dataset", "sample", *evaluate_args, "--output", str(tmp_path / name)], env=env)
            assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "careful"),
                                       str(tmp_path / "lenient"), "--output",
                                       str(tmp_path / "out"), "--format", "json",
                                       "--format", "md"])
    assert report.exit_code == 0, report.output
    return json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.slow
def test_the_report_marks_a_real_difference(tmp_path):
    """Two judges through the loopback server: one never misses, the other misses every
    error."""
    summary = careful_against_lenient(tmp_path, "--strategy", "vanilla_star")
    overall = [c for c in summary["comparisons"] if c["level"] == "overall"]
    assert len(overall) == 1
    (row,) = overall
    assert row["rate_a"] == 0.0 and row["rate_b"] == 1.0 and row["missed_by_b_only"] > 60
    expected = mcnemar([[0, row["missed_by_a_only"]], [row["missed_by_b_only"], 0]],
                       exact=True).pvalue
    assert row["p"] == pytest.approx(expected)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "differs from openai/careful" in markdown
    lenient = [line for line in markdown.splitlines() if "| Vanilla* | openai/lenient |" in line]
    # LF, F, IF and R all differ; the mark is one no strategy name holds (issue 26)
    assert lenient and lenient[0].count(" †") == 4 and "* |" not in lenient[0][12:]
    assert "† differs from openai/careful" in markdown


@pytest.mark.slow
def test_a_comparison_opens_with_its_verdict(tmp_path):
    """Issue 26: which judge misses fewer planted errors, said in a sentence with both
    rates, the Holm-adjusted exact McNemar p and Wilson intervals — in the terminal, the
    Markdown and the HTML, before any other table. Expected values from statsmodels."""
    from statsmodels.stats.proportion import proportion_confint

    from fbi import load_dataset

    careful = careful_judge()
    perturbed = sorted({i.perturbed_answer for i in load_dataset("sample").instances
                        if i.category != "score-invariant"})
    overlooked = set(perturbed[::3])  # the sloppy judge misses every third error

    def sloppy(request):
        answer = request["messages"][-1]["content"].split("<answer>\n", 1)[1].split(
            "\n</answer>", 1)[0]
        return '{"score": 10}' if answer in overlooked else careful(request)

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    for name, script in (("careful", careful), ("sloppy", sloppy)):
        with ChatServer(script=script, latency_s=0.0) as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", f"openai/{name}", "--api-base", server.url,
                "--dataset", "sample", "--strategy", "vanilla_star", "--output",
                str(tmp_path / name)], env=env)
            assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "careful"),
                                       str(tmp_path / "sloppy"), "--output",
                                       str(tmp_path / "out")], terminal_width=200)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    family = [c for c in summary["comparisons"]]
    (overall,) = [c for c in family if c["level"] == "overall"]
    n, missed = overall["n"], overall["missed_b"]
    assert overall["missed_a"] == 0 and missed == overall["missed_by_b_only"] > 5
    p = mcnemar([[0, 0], [missed, n - missed]], exact=True).pvalue
    p_holm = multipletests([c["p"] for c in family], method="holm")[1][family.index(overall)]
    sentence = (f"openai/careful misses fewer planted errors than openai/sloppy: 0.0% vs "
                f"{100 * missed / n:.1f}%, p = {p_holm:.2g} after Holm (under Vanilla*, "
                f"{n} instances both judged).")
    assert overall["p"] == pytest.approx(p)
    low, high = proportion_confint(missed, n, method="wilson")
    interval = f"{100 * missed / n:.1f} [{100 * low:.1f}–{100 * high:.1f}]"
    terminal = " ".join(report.output.split())
    assert sentence in terminal and "A openai/careful vs B openai/sloppy" in terminal
    assert terminal.index(sentence) < terminal.index("% undetected (")  # it opens
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert f"- {sentence}" in markdown and interval in markdown
    assert markdown.index("## Verdict") < markdown.index("strategies × abilities")
    html = (tmp_path / "out" / "report.html").read_text()
    assert sentence in html and html.index('id="verdict"') < html.index('id="judge-1"')
    marked = [line for line in markdown.splitlines()
              if line.startswith("| openai/careful | openai/sloppy |") and "†" in line]
    assert marked and all(line.split("|")[-2].strip().endswith("†") for line in marked)
    assert "† Holm-adjusted p &lt; 0.05" in markdown  # every marked cell has its legend


@pytest.mark.slow
def test_the_leaderboard_ranks_pairs_and_prices_them(tmp_path):
    """Issue 15, item 1, from stored judgments: a judge that never misses ranks above
    one that always does; time per 1,000 judgments is worked out here from the log."""
    board = careful_against_lenient(
        tmp_path, "--strategy", "vanilla_star", "--strategy", "pairwise_star", "--category",
        "entity", "--category", "grammar")["leaderboard"]
    # Issue 26: the two strategies that never miss share the first rank; the next
    # row's rank counts them both ("1, 1, 3").
    assert [(r["rank"], r["judge"]) for r in board][:2] == [(1, "openai/careful"),
                                                            (1, "openai/careful")]
    assert {r["rate"] for r in board[:2]} == {0.0}
    assert board[2]["rank"] == 3 and board[2]["rate"] > 0.0
    careful_vanilla = next(r for r in board if r["judge"] == "openai/careful"
                           and r["strategy"] == "vanilla_star")
    records = [json.loads(line) for line in
               (tmp_path / "careful" / "judgments.jsonl").read_text().splitlines()
               if json.loads(line)["strategy"] == "vanilla_star"]
    expected = 1000 * sum(r["latency_s"] for r in records if not r["cached"]) / len(records)
    assert careful_vanilla["seconds_per_1000"] == pytest.approx(expected)
    assert careful_vanilla["unparseable_share"] == 0.0
    assert careful_vanilla["cost_per_1000"] is None  # no price for a loopback model
    pairwise = next(r for r in board if r["strategy"] == "pairwise_star"
                    and r["judge"] == "openai/lenient")
    assert pairwise["unparseable_share"] == 1.0  # '{"score": 5}' is no pairwise verdict
    assert "## Leaderboard" in (tmp_path / "out" / "report.md").read_text()


def test_tied_rates_share_a_rank():
    """Issue 26: four strategies at 4/11 were ranked 1–4 alphabetically. Standard
    competition ranking, worked by hand: 0.2 → 1; 4/11 ×4 → 2; 0.5 → 6; no rate → none."""
    from fbi.metrics import GroupRate, leaderboard

    rates = [GroupRate(judge="j", strategy=name, paradigm="single", level="overall",
                       group="all", rate=rate, ci_low=None, ci_high=None, ci_method=None,
                       instances=11, judged=11, n=11, detected=0, undetected=0,
                       unparseable=0, missing=0, worst_case_rate=rate, paper_rate=rate)
             for name, rate in [("e", 0.5), ("a", 4 / 11), ("d", 8 / 22), ("b", 0.2),
                                ("c", (1 + 1 + 2) / 11), ("f", 12 / 33), ("g", None)]]
    board = leaderboard(rates, [], [])
    assert [(r.strategy, r.rank) for r in board] == [
        ("b", 1), ("a", 2), ("c", 2), ("d", 2), ("f", 2), ("e", 6), ("g", None)]


def test_named_sides_are_tested_like_two_judges():
    """Issue 26: one judge's two strategies, named by the user, make a pair of their own:
    the same paired test on the instances both judged, its own Holm family (statsmodels),
    and no row for a side that holds nothing readable."""
    rng = random.Random(11)
    vanilla = {"entity": [rng.random() < 0.7 for _ in range(40)],
               "grammar": [rng.random() < 0.4 for _ in range(30)]}
    rules = {"entity": [rng.random() < 0.2 for _ in range(40)],
             "grammar": [rng.random() < 0.4 for _ in range(30)]}
    as_rules = [InstanceOutcome(o.instance_id, o.judge, "rules", o.paradigm, o.ability,
                                o.category, o.outcome) for o in outcomes("j", rules)]
    rows = paired_comparisons(outcomes("j", vanilla) + as_rules,
                              named=[(("j", "vanilla"), ("j", "rules")),
                                     (("j", "vanilla"), ("elsewhere", "rules"))])
    assert {(r.judge_a, r.strategy, r.judge_b, r.strategy_b, r.named)
            for r in rows} == {("j", "vanilla", "j", "rules", True)}
    (overall,) = [r for r in rows if r.level == "overall"]
    pairs = [*zip(vanilla["entity"], rules["entity"], strict=True),
             *zip(vanilla["grammar"], rules["grammar"], strict=True)]
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    both = sum(x and y for x, y in pairs)
    assert overall.p == pytest.approx(mcnemar(
        [[both, only_a], [only_b, len(pairs) - only_a - only_b - both]], exact=True).pvalue)
    assert [r.p_adjusted for r in rows] == pytest.approx(
        list(multipletests([r.p for r in rows], method="holm")[1]))


@pytest.mark.slow
def test_report_compare_names_two_strategies_of_one_judge(tmp_path):
    """Issue 26: `fbi report RUN --compare vanilla,vanilla_star` on one judge that
    overlooks every third error only when it writes an explanation (Vanilla): the verdict
    says which side misses fewer, with the exact McNemar p (statsmodels); a side the run
    does not hold is one clear message with the sides it does."""
    careful = careful_judge()
    from fbi import load_dataset

    perturbed = sorted({i.perturbed_answer for i in load_dataset("sample").instances
                        if i.category != "score-invariant"})
    overlooked = set(perturbed[::3])

    def explains_and_overlooks(request):
        answer = request["messages"][-1]["content"].split("<answer>\n", 1)[1].split(
            "\n</answer>", 1)[0]
        explains = "explanation" in json.dumps(request.get("response_format"))
        if explains and answer in overlooked:
            return '{"explanation": "fine", "score": 10}'
        return careful(request)

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(script=explains_and_overlooks, latency_s=0.0) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            "sample", "--strategy", "vanilla", "--strategy", "vanilla_star", "--output",
            str(tmp_path / "run")], env=env)
        assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "out"), "--compare",
                                       "vanilla,openai/j:vanilla_star"], terminal_width=200)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (overall,) = [c for c in summary["comparisons"] if c["level"] == "overall"]
    assert (overall["strategy"], overall["strategy_b"], overall["named"]) == (
        "vanilla", "vanilla_star", True)
    n, missed = overall["n"], overall["missed_a"]
    assert overall["missed_b"] == 0 and missed == len(overlooked) and n == len(perturbed)
    assert overall["p"] == pytest.approx(
        mcnemar([[0, missed], [0, n - missed]], exact=True).pvalue)
    terminal = " ".join(report.output.split())
    assert (f"openai/j under Vanilla* misses fewer planted errors than openai/j under "
            f"Vanilla: 0.0% vs {100 * missed / n:.1f}%") in terminal
    assert "A openai/j under Vanilla vs B openai/j under Vanilla*" in terminal

    for bad, expected in (("vanilla,rules", "no run here holds 'rules'. The runs hold: "
                                            "openai/j:vanilla, openai/j:vanilla_star"),
                          ("vanilla", "expected two sides"),
                          ("vanilla,openai/j:vanilla", "names one run and strategy twice")):
        refused = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                            str(tmp_path / "out2"), "--compare", bad])
        assert refused.exit_code == 2 and expected in refused.output, refused.output
        assert "Traceback" not in refused.output
