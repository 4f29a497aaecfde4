"""A dry run too large to render every prompt estimates from a seeded sample (issue 21).

The estimator is the stratified one of Cochran, *Sampling Techniques* §5.3; the expected
values below are worked by hand from its formula.
"""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from fbi.runs import DryRun, estimate_from_sample
from fbi.settings import ModelSettings

STRATEGIES = ("vanilla", "pairwise", "reference")


def test_the_estimate_is_the_stratified_formula_worked_by_hand():
    # Stratum 1: N = 4 units, sampled units of 10 and 20 prompt tokens (2 calls each).
    #   total = 4 · 15 = 60; s² = ((10−15)² + (20−15)²)/1 = 50;
    #   var = N²(1 − n/N)s²/n = 16 · ½ · 50/2 = 200.
    # Stratum 2: N = 3, all 3 units sampled (tokens 7, 8, 9, one call each, one cached):
    #   total = 24, var = 0 (the whole stratum is known).
    # Margin: 1.96 · √200 = 27.72 → 28.
    first = [DryRun(calls=2, to_call=2, prompt_tokens=10, completion_tokens=4),
             DryRun(calls=2, to_call=1, cached=1, prompt_tokens=20, completion_tokens=2)]
    second = [DryRun(calls=1, to_call=1, prompt_tokens=t) for t in (7, 8, 9)]
    second[0] = DryRun(calls=1, cached=1, prompt_tokens=7)
    estimate = estimate_from_sample([(4, first), (3, second)])
    assert estimate.calls == 4 * 2 + 3
    assert estimate.prompt_tokens == 60 + 24
    assert estimate.cached == round(1 * 4 / 2) + 1
    assert estimate.to_call == round(3 * 4 / 2) + 2
    assert estimate.completion_tokens == round(6 * 4 / 2)
    assert estimate.prompt_tokens_margin == round(1.96 * math.sqrt(200)) == 28


def test_a_sampled_dry_run_keeps_the_call_count_and_bounds_the_tokens(tmp_path, monkeypatch):
    from fbi import load_dataset
    from fbi.judge import Evaluation, EvaluationConfig
    from fbi.providers import ModelClient

    monkeypatch.setenv("OPENAI_API_KEY", "sk-dry-run")
    config = EvaluationConfig(model=ModelSettings(model="openai/judge",
                                                  api_base="http://127.0.0.1:9/v1"),
                              strategies=STRATEGIES)
    evaluation = Evaluation(load_dataset("sample"), config, tmp_path / "run")
    client = ModelClient()
    exact = evaluation.dry_run(client)
    sampled = evaluation.dry_run(client, exact_up_to=0, sample_size=24)
    assert exact.sampled == 0 and exact.prompt_tokens_margin == 0
    assert sampled.calls == exact.calls == evaluation.call_count
    assert sampled.sampled == 24 * (2 + 2 + 1)  # per instance: 2 single, 2 pairwise, 1 ref
    assert 0 < sampled.prompt_tokens_margin < exact.prompt_tokens / 10
    assert abs(sampled.prompt_tokens - exact.prompt_tokens) <= sampled.prompt_tokens_margin
    assert sampled == evaluation.dry_run(client, exact_up_to=0, sample_size=24)  # seeded
    assert evaluation.dry_run(client, exact_up_to=0, sample_size=72) == exact  # all of it


@pytest.mark.parametrize("planned_over_limit", [False, True])
def test_the_cli_says_when_it_estimated(tmp_path, monkeypatch, planned_over_limit):
    from fbi.cli import main
    from fbi.judge import _evaluate

    monkeypatch.setattr(_evaluate, "DRY_RUN_SAMPLE", 10)
    if planned_over_limit:
        monkeypatch.setattr(_evaluate, "DRY_RUN_EXACT_CALLS", 100)
    result = CliRunner().invoke(main, [
        "evaluate", "--judge", "openai/judge", "--api-base", "http://127.0.0.1:9/v1",
        "--dataset", "sample", "--dry-run", "--output", str(tmp_path / "run")],
        env={"COLUMNS": "120", "OPENAI_API_KEY": "x", "FBI_CACHE": str(tmp_path / "c")})
    assert result.exit_code == 0, result.output
    assert ("seeded random sample" in result.output) is planned_over_limit
    assert "144 calls planned" in result.output
    if planned_over_limit:
        assert "20 prompts rendered" in result.output and "(95% interval)" in result.output
