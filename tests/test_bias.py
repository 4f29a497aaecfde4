"""Issue 15, item 6: bias diagnostics from the benchmark's own ground truth."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from statsmodels.stats.proportion import proportion_confint

from fbi.cli import main
from fbi.metrics import InstanceOutcome, length_bias, model_family, self_preference
from fbi.records import Instance, Provenance
from fbi.taxonomy import Ability


def instance(n: int, gold_words: int, perturbed_words: int, gold_model: str = "") -> Instance:
    return Instance(id=f"i{n}", ability=Ability.FACTUAL, category="entity",
                    instruction="Q?", gold_answer=" ".join(["g"] * gold_words),
                    perturbed_answer=" ".join(["p"] * perturbed_words),
                    provenance=Provenance(gold_model=gold_model))


def outcome(n: int, missed: bool, judge: str = "j") -> InstanceOutcome:
    return InstanceOutcome(f"i{n}", judge, "vanilla", "single", Ability.FACTUAL, "entity",
                           "undetected" if missed else "detected")


@pytest.mark.parametrize("model, family", [
    ("openai/gpt-4o", "gpt"), ("gpt-4-turbo", "gpt"), ("anthropic/claude-3-5-sonnet", "claude"),
    ("hosted_vllm/meta-llama/Llama-3.1-8B", "llama"), ("local/smollm2-135m", "smollm")])
def test_model_family(model, family):
    assert model_family(model) == family


def test_length_bands_count_misses_by_how_the_length_changed():
    # 10-word golds: 5 words is shorter, 10 about equal, 12 longer (ratio 1.2)
    instances = {i.id: i for i in [instance(0, 10, 5), instance(1, 10, 5), instance(2, 10, 10),
                                   instance(3, 10, 12), instance(4, 10, 12),
                                   instance(5, 10, 12)]}
    outcomes = [outcome(0, False), outcome(1, True), outcome(2, False), outcome(3, True),
                outcome(4, True), outcome(5, False)]
    rows = {r.band: r for r in length_bias(outcomes, instances)}
    assert [r.band for r in length_bias(outcomes, instances)] == [
        "shorter", "about equal", "longer"]
    assert (rows["shorter"].n, rows["shorter"].undetected) == (2, 1)
    assert (rows["about equal"].n, rows["about equal"].undetected) == (1, 0)
    assert (rows["longer"].n, rows["longer"].undetected) == (3, 2)
    low, high = proportion_confint(2, 3, method="wilson")
    assert (rows["longer"].ci_low, rows["longer"].ci_high) == (pytest.approx(low),
                                                                    pytest.approx(high))


def test_self_preference_splits_by_the_gold_writers_family():
    instances = {i.id: i for i in [instance(0, 5, 5, "gpt-4-turbo"), instance(1, 5, 5, "gpt-4"),
                                   instance(2, 5, 5, "claude-3-opus"), instance(3, 5, 5)]}
    outcomes = [outcome(n, missed, "mine") for n, missed in
                ((0, True), (1, True), (2, False), (3, True))]
    rows = {r.same_family: r for r in
            self_preference(outcomes, instances, {"mine": "openai/gpt-4o"})}
    assert (rows[True].n, rows[True].undetected) == (2, 2)  # i3 names no model
    assert (rows[False].n, rows[False].undetected) == (1, 0)
    assert rows[True].judge_family == "gpt"
    assert self_preference(outcomes, {"i3": instances["i3"]}, {"mine": "gpt-4o"}) == []


def test_the_report_carries_the_diagnostics_and_the_slot_interval(tmp_path):
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer() as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--strategy",
            "vanilla", "--strategy", "pairwise", "--output", str(tmp_path / "run")], env=env)
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "out"), "--format", "json",
                                       "--format", "md", "--format", "html"])
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    bands = [r for r in summary["bias"]["length"] if r["strategy"] == "vanilla"]
    assert sum(r["n"] for r in bands) == next(
        r["judged"] for r in summary["rates"]
        if r["strategy"] == "vanilla" and r["level"] == "overall")
    (slots,) = [r for r in summary["pairwise"] if r["group"] == "all"]
    first = round(slots["first_slot_share"] * slots["slot_choices"])
    low, high = proportion_confint(first, slots["slot_choices"], method="wilson")
    assert (slots["first_slot_ci_low"], slots["first_slot_ci_high"]) == (
        pytest.approx(low), pytest.approx(high))
    assert summary["bias"]["self_preference"] == []  # the sample names no gold model
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## Bias: Undetected % by the perturbed answer's length" in markdown
    assert "## Bias: Position" in markdown
