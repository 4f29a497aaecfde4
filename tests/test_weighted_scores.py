"""Issue 15, item 5: probability-weighted (G-Eval) scores from token log-probabilities,
stored with every scored judgment and reported beside the sampled score.

Expected values are worked by hand from G-Eval's definition (Liu et al. 2023, §2.3:
score = Σ p(s)·s over the score tokens, renormalised) and the FBI outcome rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import SCORE_CANDIDATES, ChatServer
from statsmodels.stats.proportion import proportion_confint

from fbi.cli import main
from fbi.judge._evaluate import reparse
from fbi.judge._parsing import parse_reply
from fbi.judge._weighting import weighted_score
from fbi.metrics import weighted_rates
from fbi.providers import ModelResponse
from fbi.records import Judgment


def tokens(*pieces) -> list[list[tuple[str, float]]]:
    """Token candidates from (chosen text, {alternative: probability}) or bare texts."""
    out = []
    for piece in pieces:
        text, alternatives = piece if isinstance(piece, tuple) else (piece, {piece: 1.0})
        out.append([(t, math.log(p)) for t, p in alternatives.items()])
        assert out[-1][0][0] == text
    return out


def test_expectation_over_the_score_tokens_renormalised():
    text = '{"explanation": "ok", "score": 7}'
    reply = tokens('{"', "explanation", '":', ' "', "ok", '",', ' "', "score", '":', " ",
                   ("7", {"7": 0.5, "8": 0.3, "x": 0.2}), "}")
    weighted = weighted_score(text, 7, 0, (1, 10), reply)
    # (7·0.5 + 8·0.3) / (0.5 + 0.3)
    assert weighted.expected == pytest.approx(7.375)
    assert weighted.probabilities == pytest.approx({7: 0.625, 8: 0.375})
    assert weighted.mass == pytest.approx(0.8)


def test_vanishing_log_probabilities_after_the_score_token_are_read():
    """Issue 63: after "1" the next position's candidates hold log-probabilities of
    −10⁶ and −10⁶ − ln 3 (as plain probabilities both underflow to 0). Renormalised
    they are ¾ and ¼: "0" (¾) makes 10, "}" (¼) ends at 1; "9" keeps 0.4."""
    text = '{"score": 10}'
    reply = tokens('{"', "score", '":', " ", ("1", {"1": 0.6, "9": 0.4}))
    reply.append([("0", -1e6), ("}", -1e6 - math.log(3))])
    reply.append([("}", 0.0)])
    weighted = weighted_score(text, 10, 0, (1, 10), reply)
    assert weighted.probabilities == pytest.approx({1: 0.15, 9: 0.4, 10: 0.45})


def test_a_digit_that_begins_a_longer_score_is_resolved_by_the_next_token():
    # SmolLM-style digits: "10" is "1" then "0". P(1…) = 0.6 splits by the next token:
    # "0" (0.5) makes 10, "}" (0.5) ends at 1; "9" keeps 0.4.
    text = '{"score": 10}'
    reply = tokens('{"', "score", '":', " ", ("1", {"1": 0.6, "9": 0.4}),
                   ("0", {"0": 0.5, "}": 0.5}), "}")
    weighted = weighted_score(text, 10, 0, (1, 10), reply)
    assert weighted.probabilities == pytest.approx({1: 0.3, 9: 0.4, 10: 0.3})
    assert weighted.expected == pytest.approx(0.3 * 1 + 0.4 * 9 + 0.3 * 10)


def test_only_the_judges_own_score_token_counts():
    # A number in the explanation, and the same number quoted before the verdict marker.
    text = '{"explanation": "3 of 10 facts hold", "score": 3}'
    reply = tokens('{"', "explanation", '":', ' "', ("3", {"3": 0.9, "4": 0.1}), " of", " ",
                   "10", " facts", " hold", '",', ' "', "score", '":', " ",
                   ("3", {"3": 0.5, "2": 0.5}), "}")
    parsed = parse_reply(text, "score", (1, 10))
    assert weighted_score(text, 3, parsed.at, (1, 10), reply).expected == pytest.approx(2.5)

    text = "The answer says 4 things. Rating: [[4]]"
    reply = tokens("The", " answer", " says", " ", ("4", {"4": 1.0}), " things", ".",
                   " Rating", ":", " [[", ("4", {"4": 0.25, "5": 0.75}), "]]")
    parsed = parse_reply(text, "score", (1, 10))
    assert text[parsed.at:] == "[[4]]"
    assert weighted_score(text, 4, parsed.at, (1, 10), reply).expected == pytest.approx(4.75)


def test_no_weights_when_the_tokens_are_not_the_reply_or_hold_no_score():
    text = '{"score": 4}'
    assert weighted_score(text, 4, 0, (1, 5), tokens('{"', "score", '":', " ", "5", "}")) \
        is None
    reply = tokens('{"', "score", '":', " ", ("4", {"4": 0.5, "x": 0.5}), "}")
    assert weighted_score(text, 4, 0, (5, 9), reply) is None  # no candidate in range
    assert weighted_score(text, 4, 0, (1, 5), reply).expected == 4


def test_cache_entries_without_token_texts_still_load():
    old = ModelResponse(text="x", token_logprobs=[[-0.1, -2.5]])
    assert old.token_logprobs == [[("", -0.1), ("", -2.5)]]


def judgment(instance, role, score, expected, paradigm="single", category="entity",
             top=10) -> Judgment:
    return Judgment(call_id=f"{instance}|s|{role}", instance_id=instance, ability="factual",
                    category=category, strategy="vanilla" if paradigm == "single" else
                    "reference", strategy_version="1", paradigm=paradigm, role=role,
                    judge="j", score_range=(1, top), prompt_hash="h", score=score,
                    expected_score=expected, status="ok")


def test_rates_under_both_scores_by_the_fbi_rules():
    records = [
        # single: tie when sampled (undetected), detected when weighted
        judgment("a", "gold", 8, 7.9), judgment("a", "perturbed", 8, 7.2),
        # detected under both
        judgment("b", "gold", 9, 8.5), judgment("b", "perturbed", 4, 4.4),
        # undetected under both (weighted tie counts as undetected)
        judgment("c", "gold", 6, 6.5), judgment("c", "perturbed", 7, 6.5),
        # no log-probabilities for one call: in neither rate
        judgment("d", "gold", 6, None), judgment("d", "perturbed", 3, 3.1),
        # score-invariant: retained sampled, penalised weighted
        judgment("e", "gold", 7, 7.4, category="score-invariant"),
        judgment("e", "perturbed", 7, 7.1, category="score-invariant"),
        # reference: top sampled (undetected); weighted 9.4 rounds below 10 (detected)
        judgment("f", "perturbed", 10, 9.4, paradigm="reference"),
        judgment("g", "perturbed", 10, 9.6, paradigm="reference"),
    ]
    single, reference = weighted_rates(records)
    assert (single.strategy, single.instances, single.without_weights) == \
        ("vanilla", 3, 1)
    assert single.sampled_rate == pytest.approx(2 / 3)  # a (tie) and c
    assert single.expected_rate == pytest.approx(1 / 3)  # c (tie)
    assert (single.sampled_ties, single.expected_ties) == (2, 1)  # a, e / c
    assert (single.sampled_si_retained, single.expected_si_retained) == (1.0, 0.0)
    low, high = proportion_confint(1, 3, method="wilson")
    assert (single.expected_ci_low, single.expected_ci_high) == \
        (pytest.approx(low), pytest.approx(high))
    assert reference.sampled_rate == 1.0 and reference.expected_rate == 0.5


def test_a_reread_that_changes_the_score_drops_its_weights():
    stored = judgment("a", "gold", 8, 7.9).model_copy(update={
        "raw_output": '{"explanation": "fine", "score": 8}', "parser_version": "0"})
    assert reparse(stored, None).expected_score == 7.9
    changed = stored.model_copy(update={"raw_output": '{"explanation": "fine", "score": 5}'})
    assert reparse(changed, None).expected_score is None


@pytest.mark.slow
def test_logprobs_through_the_whole_pipeline(tmp_path):
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite"),
           "COLUMNS": "80"}
    run = tmp_path / "run"
    with ChatServer() as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--strategy",
            "vanilla", "--strategy", "reference", "--strategy", "pairwise", "--limit", "2",
            "--logprobs", "--output", str(run)], env=env, terminal_width=80)
        assert result.exit_code == 0, result.output
        asked = [r for r in server.requests if "messages" in r]
    records = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    scored = [r for r in records if r["paradigm"] != "pairwise"]
    assert scored and all(r["status"] == "ok" for r in scored)
    (p_same,), (p_lower,) = ([p for offset, p in SCORE_CANDIDATES if offset == k]
                             for k in (0, -1))
    for record in scored:
        score, low = record["score"], record["score_range"][0]
        if score == low:  # the score below is out of range: all weight on the score
            assert record["expected_score"] == pytest.approx(score)
        else:
            assert record["expected_score"] == pytest.approx(
                (score * p_same + (score - 1) * p_lower) / (p_same + p_lower), abs=1e-5)
            assert record["score_mass"] == pytest.approx(p_same + p_lower, abs=1e-5)
    # pairwise calls have no score: they neither ask for nor store weights
    assert all(r["expected_score"] is None for r in records if r["paradigm"] == "pairwise")
    pairwise_asks = [r for r in asked if '"verdict"' in r["messages"][-1]["content"]]
    assert pairwise_asks and not any(r.get("logprobs") for r in pairwise_asks)
    assert json.loads((run / "run.json").read_text())["parameters"]["logprobs"] == 20

    report = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "r")],
                                env=env, terminal_width=80)
    assert report.exit_code == 0, report.output
    assert "probability-" in report.output and "…" not in report.output
    assert all(len(line) <= 80 for line in report.output.splitlines())
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rows = {r["strategy"]: r for r in summary["weighted_scores"]}
    assert set(rows) == {"vanilla", "reference"} and rows["vanilla"]["without_weights"] == 0
    assert "Probability-weighted scores" in (tmp_path / "r" / "report.md").read_text()
    assert 'id="weighted"' in (tmp_path / "r" / "report.html").read_text()
    record = next(r for r in scored if r["score"] > r["score_range"][0])
    shown = CliRunner().invoke(main, ["show", str(run), record["call_id"]], env=env)
    assert f"weighted {record['expected_score']:.2f}" in shown.output, shown.output


@pytest.mark.slow
def test_the_embedded_judge_passes_log_probabilities(tmp_path):
    pytest.importorskip("gguf", reason="the embedded judge needs: pip install 'fbi[local]'")
    env = {**os.environ, "FBI_CACHE": str(tmp_path / "cache.sqlite"), "HF_HUB_OFFLINE": "1"}
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--category", "entity",
                             "--limit", "1", "--logprobs", "--output", str(run)], env=env,
                            capture_output=True, text=True, timeout=600, cwd=OUTSIDE_CHECKOUT)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    assert len(records) == 2
    # the embedded judge's one-sentence cap on the explanation, enforced by the grammar
    assert json.loads((run / "run.json").read_text())["parameters"]["explanation_chars"] == 120
    assert all(0 < len(r["explanation"]) <= 120 for r in records)
    for record in records:
        probabilities = {int(k): p for k, p in record["score_probabilities"].items()}
        assert sum(probabilities.values()) == pytest.approx(1, abs=1e-4)
        assert set(probabilities) <= set(range(1, 11)) and 0 < record["score_mass"] <= 1
        assert record["expected_score"] == pytest.approx(
            sum(s * p for s, p in probabilities.items()), abs=1e-4)
    report = subprocess.run([sys.executable, "-m", "fbi", "report", str(run), "--output",
                             str(tmp_path / "r")], env=env, capture_output=True, text=True,
                            cwd=OUTSIDE_CHECKOUT)
    assert report.returncode == 0, report.stderr
    (row,) = json.loads((tmp_path / "r" / "summary.json").read_text())["weighted_scores"]
    assert row["judge"] == "local/smollm2-135m" and row["instances"] == 1


def test_providers_without_log_probabilities(tmp_path):
    """Asked explicitly (--logprobs), a provider litellm sends none to is refused up
    front; asked by a suite where they are optional (MAQA), the parameter is left out,
    since litellm refuses the whole call otherwise."""
    from fbi.providers import ModelClient, ModelRequest

    result = CliRunner().invoke(main, [
        "evaluate", "--judge", "anthropic/claude-3-5-sonnet-20241022", "--logprobs",
        "--dry-run", "--output", str(tmp_path / "run")],
        env={"ANTHROPIC_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")})
    assert result.exit_code == 2 and "--logprobs" in result.output, result.output
    assert not (tmp_path / "run").exists()

    client = ModelClient()
    for model, sent in (("anthropic/claude-3-5-sonnet-20241022", False),
                        ("openai/gpt-4o", True), ("local/smollm2-135m", True)):
        arguments = client._arguments(ModelRequest(model, (("user", "Hi"),), top_logprobs=5))
        assert ("top_logprobs" in arguments) is sent, model


# ------------------------------------------------------------------ issue 50: lying servers


@pytest.mark.slow
@pytest.mark.parametrize("lie", [float("nan"), 1e308, 0.7, -float("inf"), "high", None])
def test_log_probabilities_a_server_lies_about_are_an_unreadable_reply(tmp_path, lie):
    """NaN, a huge number, a probability above 1, minus infinity, a string, null: each
    reply is unreadable with its reason, the records read back, a rerun makes no call
    and writes nothing new, and the report runs."""
    from openai_server import LyingLogprobs, hashed_verdict_script

    from fbi.judge import read_judgments

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    run = tmp_path / "run"
    args = ["evaluate", "--judge", "openai/judge", "--strategy", "vanilla", "--limit", "2",
            "--logprobs", "--output", str(run)]
    with ChatServer(lambda request: LyingLogprobs(hashed_verdict_script(request),
                                                  lie)) as server:
        first = CliRunner().invoke(main, [*args, "--api-base", server.url], env=env)
        assert first.exit_code == 0, first.output
        before = (run / "judgments.jsonl").read_bytes()
        again = CliRunner().invoke(main, [*args, "--api-base", server.url], env=env)
        assert again.exit_code == 0, again.output
    judgments = read_judgments(run)
    assert judgments and all(j.status == "unparseable" and "log-probabilit" in j.reason
                             for j in judgments)
    assert all(j.expected_score is None for j in judgments)
    assert (run / "judgments.jsonl").read_bytes() == before  # nothing asked twice
    report = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "r")])
    assert report.exit_code == 0, report.output


@pytest.mark.slow
def test_a_lone_surrogate_in_a_reply_is_saved_as_a_replacement_character(tmp_path):
    """A JSON reply holding "\\ud800" (no character a UTF-8 file can hold): the run saves
    it as U+FFFD, reads it back and resumes, instead of a traceback on every rerun."""
    from fbi.judge import read_judgments

    def surrogate_judge(request: dict) -> str:
        reply = json.loads(hashed_verdict_script(request)) if "integer from" in json.dumps(
            request) else None
        if reply is None:
            return "OK \ud800"
        return json.dumps({"explanation": "odd bytes \ud800 here", "score": reply["score"]})

    from openai_server import hashed_verdict_script

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    run = tmp_path / "run"
    with ChatServer(surrogate_judge) as server:
        for _ in range(2):
            done = CliRunner().invoke(main, [
                "evaluate", "--judge", "openai/judge", "--api-base", server.url,
                "--strategy", "vanilla", "--limit", "2", "--output", str(run)], env=env)
            assert done.exit_code == 0, done.output
    judgments = read_judgments(run)
    assert judgments and all(j.status == "ok" and "\ufffd" in j.explanation
                             for j in judgments)
