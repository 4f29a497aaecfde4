"""`fbi gate` (issue 53): the paired one-sided exact test worked by hand, and the gate end
to end against loopback judges whose behaviour is planted here — the same judge passes,
a judge that misses every error fails with exit 1, bad input is one message, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from planted_judges import PlantedJudge

from fbi import load_dataset
from fbi.cli import main
from fbi.gate import compare_outcomes
from fbi.metrics import InstanceOutcome

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
PLANTED = [i for i in INSTANCES if i.category != "score-invariant"]


def outcome(instance_id: str, category: str, missed: bool | None) -> InstanceOutcome:
    return InstanceOutcome(instance_id=instance_id, judge="j", strategy="vanilla",
                           paradigm="single", ability="factual", category=category,
                           outcome="unparseable" if missed is None else
                           "undetected" if missed else "detected")


def test_the_paired_one_sided_test_by_hand():
    """Ten instances of one category. Baseline misses i0; the candidate misses i0–i5:
    b = 5 newly missed, c = 0, p = P(Bin(5, ½) ≥ 5) = 1/32 = 0.03125 for the category and
    overall alike; Holm over the two rows gives 0.0625 to both. An eleventh instance the
    candidate could not read is left out of both rows, in no rate."""
    before = [outcome(f"i{k}", "entity", k == 0) for k in range(11)]
    after = [outcome(f"i{k}", "entity", k <= 5) for k in range(10)] + \
        [outcome("i10", "entity", None)]
    rows = compare_outcomes(before, after, max_regression=0.05, alpha=0.05)
    assert [(r.group, r.paired, r.left_out, r.newly_missed, r.newly_caught) for r in rows] \
        == [("entity", 10, 1, 5, 0), ("overall", 10, 1, 5, 0)]
    for row in rows:
        assert (row.baseline_rate, row.candidate_rate) == (0.1, 0.6)
        assert row.p_value == pytest.approx(1 / 32)
        assert row.p_holm == pytest.approx(2 / 32)
        assert not row.regressed  # 0.0625 > 0.05
    looser = compare_outcomes(before, after, max_regression=0.05, alpha=0.1)
    assert all(row.regressed for row in looser)
    # significant but small: a rise of 50 points is not more than 0.6
    assert not any(r.regressed for r in compare_outcomes(before, after, 0.6, 0.1))
    # discordance both ways: b = 5, c = 1 → P(Bin(6, ½) ≥ 5) = 7/64
    caught = [outcome("i0", "entity", False) if o.instance_id == "i0" else o for o in after]
    (row, _) = compare_outcomes(before, caught)
    assert (row.newly_missed, row.newly_caught) == (5, 1)
    assert row.p_value == pytest.approx(7 / 64)


def gates_failed(runs: int, rise: float, seed: int) -> float:
    """The share of gates that fail, of a 200-instance one-category suite whose
    instances each have their own chance of being missed (Beta, mean 0.2), run twice —
    the second time ``rise`` likelier on every instance."""
    import numpy as np

    rng = np.random.default_rng(seed)
    failed = 0
    for _ in range(runs):
        chance = rng.beta(1.1, 4.4, size=200)
        before = rng.uniform(size=200) < chance
        after = rng.uniform(size=200) < np.minimum(1, chance + rise)
        rows = compare_outcomes(
            [outcome(f"i{k}", "entity", bool(m)) for k, m in enumerate(before)],
            [outcome(f"i{k}", "entity", bool(m)) for k, m in enumerate(after)])
        failed += any(row.regressed for row in rows)
    return failed / runs


def test_false_failures_stay_under_alpha_and_a_regression_is_caught():
    """Monte Carlo, 400 gates each: an unchanged judge (a second run of the same chances)
    fails at most α = 0.05 of the time, within three standard errors; a regression of 15
    points is caught at least 80% of the time at 400 calls (RESULTS.md: 0.936)."""
    assert gates_failed(400, 0.0, 1) <= 0.05 + 3 * (0.05 * 0.95 / 400) ** 0.5
    assert gates_failed(400, 0.15, 2) >= 0.8


def scoring_judge(misses: bool) -> PlantedJudge:
    """Single-answer vanilla: the gold answer scored at the top and the perturbed one at
    the bottom — or, when ``misses``, both at the top (every planted error missed)."""
    return PlantedJudge(INSTANCES, lambda gold, edited: misses)


def run(args: list[str], script=None) -> tuple[int, str]:
    with ChatServer(script=script or scoring_judge(False)) as server:
        extra = ["--no-cache"] if args[0] == "evaluate" else []  # (the gate never caches)
        result = CliRunner().invoke(main, [*args, "--api-base", server.url, *extra],
                                    env={**ENV, "COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gate") / "baseline"
    code, output = run(["evaluate", "--judge", "openai/judge", "--dataset", "sample",
                        "--output", str(folder)])
    assert code == 0, output
    return folder


@pytest.mark.slow
def test_the_same_judge_passes_the_gate(baseline, tmp_path):
    code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                        str(baseline), "--output", str(tmp_path / "g")])
    assert code == 0, output
    result = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert result["passed"] and "passes" in result["sentence"]
    (overall,) = [r for r in result["rows"] if r["group"] == "overall"]
    assert (overall["paired"], overall["baseline_rate"], overall["candidate_rate"],
            overall["newly_missed"], overall["newly_caught"]) == (len(PLANTED), 0, 0, 0, 0)
    assert {r["group"] for r in result["rows"]} == {*{i.category for i in PLANTED},
                                                    "overall"}


def test_a_judge_that_misses_every_error_fails_the_gate(baseline, tmp_path):
    """Every planted error missed: overall b = 66, c = 0, p = 2⁻⁶⁶ (Holm × 23 rows at
    most); a category's three instances give p = 1/8 alone, never significant."""
    code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                        str(baseline), "--output", str(tmp_path / "g")], scoring_judge(True))
    assert code == 1, output
    result = json.loads((tmp_path / "g" / "gate.json").read_text())
    (overall,) = [r for r in result["rows"] if r["group"] == "overall"]
    assert (overall["newly_missed"], overall["baseline_rate"], overall["candidate_rate"]) \
        == (len(PLANTED), 0, 1)
    assert overall["p_value"] == pytest.approx(0.5 ** len(PLANTED))
    assert overall["regressed"] and not result["passed"]
    assert [r["group"] for r in result["rows"] if r["regressed"]] == ["overall"]
    assert "regressed" in " ".join(output.split())


def test_bad_input_is_one_message(baseline, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "category": "entity", "instruction": "Q?",
                                 "gold_answer": "A.", "perturbed_answer": "B."}) + "\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "none.jsonl").write_text("")
    cases = [
        (["gate", str(other)], "is not the suite the baseline"),
        (["gate", str(tmp_path / "none.jsonl")], "the file is empty"),
        (["gate", "sample", "--baseline", str(empty)], "no run.json"),
        (["gate", "sample", "--alpha", "0"], "--alpha"),
    ]
    for args, message in cases:
        full = [*args, "--judge", "openai/judge", "--output", str(tmp_path / "g")]
        if "--baseline" not in args:
            full += ["--baseline", str(baseline)]
        code, output = run(full)
        assert code == 2, (args, output)
        assert message in " ".join(output.split()), (args, output)
        assert "Traceback" not in output
    assert not (tmp_path / "g" / "gate.json").exists()


@pytest.mark.slow
def test_the_pytest_plugin_runs_a_gate_file(baseline, tmp_path):
    """`pytest --fbi-gate gate.yaml` (the pytest11 entry point): the same judge passes, a
    judge that misses every error fails the test with the gate's sentence, and a gate file
    with a wrong key is one message naming it."""
    import os
    import subprocess
    import sys

    def pytest_with(script, name: str, **keys) -> subprocess.CompletedProcess:
        with ChatServer(script=script) as server:
            gate = tmp_path / f"{name}.yaml"
            fields = {"version": 1, "suite": "sample", "judge": "openai/judge",
                      "baseline": str(baseline), "output": name, "api_base": server.url,
                      **keys}
            gate.write_text("".join(f"{key}: {value}\n" for key, value in fields.items()))
            return subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--fbi-gate", str(gate)], cwd=tmp_path, capture_output=True, text=True,
                env={**os.environ, **ENV}, timeout=600)

    same = pytest_with(scoring_judge(False), "same")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "1 passed" in same.stdout and (tmp_path / "same" / "gate.json").is_file()
    worse = pytest_with(scoring_judge(True), "worse")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "openai/judge regressed: overall under vanilla 0% → 100% missed" in worse.stdout
    wrong = pytest_with(scoring_judge(False), "wrong", treshold=0.1)
    assert wrong.returncode == 1 and "unknown keys treshold" in wrong.stdout
    assert "Traceback" not in wrong.stdout


@pytest.mark.slow
def test_a_certificate_that_no_longer_holds_fails_the_gate(tmp_path):
    """--human: a baseline judged with --samples 3 by the right judge agrees with the
    people on every planted error at confidence 1 (66 calibration items, no error: the
    bound 1 − 0.1^(1/66) = 0.034 ≤ 0.2), so it is certified at target 0.8; the same
    judge keeps it, a judge that misses every error loses it."""
    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,verdict,annotator\n" + "".join(
        f"{i.id},a,ann\n" for i in PLANTED))
    code, output = run(["evaluate", "--judge", "openai/judge", "--dataset", "sample",
                        "--samples", "3", "--output", str(tmp_path / "base")])
    assert code == 0, output
    for name, script, expected in (("same", scoring_judge(False), 0),
                                   ("worse", scoring_judge(True), 1)):
        code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                            str(tmp_path / "base"), "--human", str(labels), "--output",
                            str(tmp_path / name)], script)
        assert code == expected, output
        result = json.loads((tmp_path / name / "gate.json").read_text())
        (held,) = result["certificates"]
        assert (held["strategy"], held["baseline_certified"]) == ("vanilla", True)
        assert held["held"] == (name == "same") == held["candidate_certified"]
    assert "lost its certificate under vanilla" in result["sentence"]


@pytest.mark.slow
def test_a_baseline_of_its_own_strategy_is_gated_from_its_folder(tmp_path):
    """A strategy of the user's (`--prompts DIR`) is read again from the folder the
    baseline's run.json records, with no option to repeat."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    vanilla = (Path(__file__).parents[1] / "prompts" / "vanilla.jinja").read_text()
    (prompts / "strict.jinja").write_text(vanilla.replace('display_name: "Vanilla"',
                                                          'display_name: "Strict"'))
    code, output = run(["evaluate", "--judge", "openai/judge", "--dataset", "sample",
                        "--prompts", str(prompts), "--strategy", "strict", "--output",
                        str(tmp_path / "base")])
    assert code == 0, output
    code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                        str(tmp_path / "base"), "--output", str(tmp_path / "g")])
    assert code == 0, output
    result = json.loads((tmp_path / "g" / "gate.json").read_text())
    assert {r["strategy"] for r in result["rows"]} == {"strict"}


@pytest.mark.slow
def test_the_gate_never_writes_over_a_file_it_did_not_write(baseline, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "gate.json").write_text("my notes\n")
    code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                        str(baseline), "--output", str(mine)])
    assert code == 2 and "fbi did not write" in " ".join(output.split())
    code, output = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                        str(baseline), "--output", str(mine), "--force"])
    assert code == 2 and "not fbi's" in " ".join(output.split())
    assert (mine / "gate.json").read_text() == "my notes\n"
    # a gate run twice (the same server) resumes its own folder, replaces its gate.json
    with ChatServer(script=scoring_judge(False)) as server:
        for _ in range(2):
            result = CliRunner().invoke(main, [
                "gate", "sample", "--judge", "openai/judge", "--baseline", str(baseline),
                "--output", str(tmp_path / "g"), "--api-base", server.url], env=ENV)
            assert result.exit_code == 0, result.output
