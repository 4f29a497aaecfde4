"""The robustness suites end to end, the question variants' invariants, and scoring."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer

from fbi.cli import main
from fbi.robustness import (
    NOISE_KINDS,
    QAItem,
    add_noise,
    load_qa_items,
    noise_variants,
    parse_letter,
    parse_reply,
    shuffle_variants,
    token_f1,
)


@pytest.fixture(scope="module")
def items() -> list[QAItem]:
    return load_qa_items("sample")[0]


def test_sample_has_every_kind(items):
    kinds = {i.kind for i in items}
    assert kinds == {"extractive", "multiple-choice", "abstractive", "multi-answer"}
    assert all(i.context for i in items if i.kind == "extractive")


# ----------------------------------------------------------------- variant invariants

QUESTIONS = [
    "In which year did Marie Curie move to Paris after 1867?",
    "What is 7 multiplied by 8, and is it more than 50?",
    "Which river flows 2,850 km into the Black Sea?",
    "How many continents are there on Earth (not counting Zealandia)?",
]


@pytest.mark.parametrize("seed", range(20))
def test_noise_never_touches_digits_or_gold_words(items, seed):
    rng = random.Random(seed)
    pool = [*items, *(QAItem(id=f"q{n}", kind="abstractive", question=q, answers=("Paris",))
                      for n, q in enumerate(QUESTIONS))]
    for item in pool:
        for kind in NOISE_KINDS:
            noisy = add_noise(item, kind, rng)
            assert re.findall(r"\d", noisy) == re.findall(r"\d", item.question), (kind, noisy)
            for gold in item.answers:
                for word in re.findall(r"\w+", gold):
                    # a gold word present in the question survives exactly (case aside only
                    # where the noise is about case)
                    if re.search(rf"\b{re.escape(word)}\b", item.question):
                        assert re.search(rf"\b{re.escape(word)}\b", noisy, re.I), (kind, noisy)


def test_noise_changes_the_question(items):
    changed = {kind: sum(add_noise(i, kind, random.Random(1)) != i.question for i in items)
               for kind in NOISE_KINDS}
    assert all(n >= len(items) // 2 for n in changed.values()), changed


def test_distractor_passages_go_before_or_after_the_context(items):
    item = next(i for i in items if i.context)
    variants = {v.id: v for v in noise_variants(item, 0, ["An unrelated passage."])}
    assert variants["distractor-before"].context.endswith(item.context)
    assert variants["distractor-after"].context.startswith(item.context)
    assert variants["distractor-before"].question == item.question


def test_shuffles_keep_labels_move_contents_and_remap_the_key(items):
    for item in (i for i in items if i.choices):
        shuffles = shuffle_variants(item, 4, seed=3)
        assert len(shuffles) == 4 and len({s.choices for s in shuffles}) >= 3
        for variant in shuffles:
            assert sorted(variant.choices) == sorted(item.choices)  # gold text reachable
            letter = variant.gold_letter(item)
            assert variant.choices["ABCDEFGHIJ".index(letter)] == item.answers[0]
        assert shuffles == shuffle_variants(item, 4, seed=3)  # seeded


def test_answer_parsing():
    assert parse_reply('{"answer": "Paris", "confidence": 80}') == ("Paris", 0.8)
    assert parse_reply("Answer: Paris\nConfidence: 90") == ("Paris", 0.9)
    assert parse_letter("The answer is (C).", ("a", "b", "c", "d")) == "C"
    assert parse_letter("Carbon dioxide", ("Oxygen", "Carbon dioxide")) == "B"
    assert parse_letter("I don't know", ("x", "y")) is None
    assert token_f1("the Pacific Ocean", "Pacific") == pytest.approx(2 / 3)


# ----------------------------------------------------------------- the suites, for real


def scripted_model(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    if "Question: " not in prompt:
        return "OK"  # fbi's probe call
    if "Rewrite the question" in prompt:
        question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
        return json.dumps({"rewrites": [f"{question} (asked another way {n})"
                                        for n in range(1, 4)]})
    if "letter of the correct option" in prompt:
        options = dict(re.findall(r"^([A-J])\. (.+)$", prompt, re.M))
        wanted = {"Carbon dioxide", "56", "Mercury"}  # right on three of four questions
        letter = next((k for k, v in options.items() if v in wanted), "A")
        return json.dumps({"answer": letter, "confidence": 80})
    question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
    known = {"Danube": "the Black Sea", "Curie": "1891", "colours": "red, yellow, blue",
             "noble gas": "neon", "boiling": "100 degrees Celsius"}
    answer = next((v for k, v in known.items() if k.lower() in question.lower()), "I am unsure")
    return json.dumps({"answer": answer, "confidence": 90 if answer != "I am unsure" else 20})


def run_suites(tmp_path, server, *extra):
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite"),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "fbi", "robustness", "run", "--model",
                           "openai/qa-under-test", "--api-base", server.url, "--output",
                           str(tmp_path / "run"), "--rephrasings", "3", "--shuffles", "3",
                           "--samples", "3", *extra], env=env, capture_output=True,
                          text=True, timeout=300, cwd=OUTSIDE_CHECKOUT)


@pytest.mark.slow
def test_all_suites_end_to_end_and_resume(tmp_path):
    with ChatServer(script=scripted_model) as server:
        result = run_suites(tmp_path, server)
        served = server.counts["ok"]
        again = run_suites(tmp_path, server)
        assert server.counts["ok"] == served  # a finished run calls nothing again
    assert result.returncode == 0, result.stderr
    assert again.returncode == 0 and "0 calls this time" in again.stdout
    answers = [json.loads(line) for line in (tmp_path / "run" / "answers.jsonl")
               .read_text().splitlines()]
    assert len({a["call_id"] for a in answers}) == len(answers)
    suites = json.loads((tmp_path / "run" / "robustness.json").read_text())["suites"]
    multiqa = suites["multiqa"]
    assert multiqa["questions"] == 16 and multiqa["variants"] == 4
    assert multiqa["base_accuracy"] == pytest.approx(8 / 16)  # 5 known + 3 of 4 MC right
    assert multiqa["certainty"] == 1.0  # the scripted model never changes its mind
    noise = suites["noise"]["by_noise"]
    assert {"noise-typos", "paraphrase", "distractor-before"} <= set(noise)
    assert noise["distractor-before"]["questions"] == 4  # the extractive questions
    groups = suites["noise"]["groups"]
    assert groups["groups"] == 16 and groups["accuracy_original"] == pytest.approx(8 / 16)
    shuffle = suites["shuffle"]
    assert shuffle["questions"] == 4 and shuffle["shuffles"] == 3
    assert shuffle["accuracy"] == 0.75  # it knows the answer whatever the order
    assert shuffle["test_retest_accuracy"] == pytest.approx(0.75)
    maqa = suites["maqa"]
    assert maqa["questions"] == 4 and maqa["samples"] == 12
    assert maqa["accuracy"] == pytest.approx(0.5) and maqa["consistency"] == 1.0
    assert maqa["auroc_verbalised"] == 1.0  # confident exactly when right
    shuffled = [a for a in answers if a["suite"] == "shuffle" and a["variant"] != "original"]
    assert all(a["choices"]["ABCD".index(a["gold_letter"])] == a["gold"][0] for a in shuffled)
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "report")], terminal_width=200)
    assert report.exit_code == 0, report.output
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## MultiQ&A" in markdown and "## Natural noise" in markdown
    assert "## Answer order" in markdown and "## MAQA" in markdown
    assert "Cohen's h under natural noise" in (tmp_path / "report" / "report.html").read_text()


def test_score_an_answers_table_without_a_model(tmp_path):
    table = tmp_path / "answers.csv"
    rows = ["question_id,variant,answer,gold,suite"]
    for question, gold, answers in (("q1", "Paris", ["Paris", "paris", "Lyon"]),
                                    ("q2", "4", ["4", "four", "4"])):
        rows += [f"{question},{n},{a},{gold},multiqa" for n, a in enumerate(answers)]
    table.write_text("\n".join(rows) + "\n")
    out = tmp_path / "metrics.json"
    result = CliRunner().invoke(main, ["robustness", "score", str(table), "--correctness",
                                       "match", "--output", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    multiqa = json.loads(out.read_text())["suites"]["multiqa"]
    assert multiqa["questions"] == 2 and multiqa["base_accuracy"] == 1.0
    assert multiqa["worst_case"] == 0.0 and multiqa["best_case"] == 1.0
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,answer\nq1,x\n")
    result = CliRunner().invoke(main, ["robustness", "score", str(bad)])
    assert result.exit_code == 2 and "missing column(s) variant" in result.output


def test_embedding_correctness_with_the_shipped_model():
    pytest.importorskip("sentence_transformers", reason="needs: pip install 'fbi[embeddings]'")
    from fbi.robustness import Judge

    judge = Judge("embedding")
    assert judge.free_text("It is the Pacific Ocean", ("the Pacific Ocean",))
    assert not judge.free_text("bananas", ("the Pacific Ocean",))


def test_score_gives_the_papers_values_on_worked_examples(tmp_path):
    """`fbi robustness score` on two answers tables worked by hand from the papers'
    formulas (see tests/test_qa_metrics.py for the working):
    noise, six groups: mean PDR 2/5 (one group undefined), mean h = −π/4;
    MultiQ&A, q1 a a b / q2 c c c: Fleiss' κ over the answers = 10/22, M2 = 1 − (3/4)/2,
    μ_D = the average correctness."""
    rows = ["question_id,variant,answer,gold,suite,correct"]
    groups = [(1, [1, 1]), (1, [0, 1]), (1, [0, 0]), (0, [0, 0]), (0, [1, 0]), (1, [1, 0])]
    for n, (original, perturbed) in enumerate(groups):
        rows.append(f"g{n},original,x,x,noise,{bool(original)}")
        rows += [f"g{n},noise-{k},x,x,noise,{bool(v)}" for k, v in enumerate(perturbed)]
    for question, answers, right in (("q1", "aab", (1, 1, 0)), ("q2", "ccc", (1, 0, 1))):
        rows += [f"{question},{k},{a},{a},multiqa,{bool(r)}"
                 for k, (a, r) in enumerate(zip(answers, right, strict=True))]
    table = tmp_path / "answers.csv"
    table.write_text("\n".join(rows) + "\n")
    out = tmp_path / "metrics.json"
    result = CliRunner().invoke(main, ["robustness", "score", str(table), "--output",
                                       str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    suites = json.loads(out.read_text())["suites"]
    groups_ = suites["noise"]["groups"]
    assert groups_["pdr"] == pytest.approx(0.4) and groups_["pdr_undefined_groups"] == 1
    assert groups_["cohens_h"] == pytest.approx(-math.pi / 4)
    multiqa = suites["multiqa"]
    assert multiqa["fleiss_kappa"] == pytest.approx(10 / 22)
    # q1: p = (2/3, 1/3), K = 2: 2·(1 − 5/9) = 8/9; q2: K = 1 → 0
    assert multiqa["gibbs_m2"] == pytest.approx(1 - (8 / 9) / 2)
    assert multiqa["item_difficulty"] == pytest.approx(4 / 6)


@pytest.mark.slow
def test_the_suites_through_provider_batches_give_the_live_metrics(tmp_path):
    """Rewrites, then answers, each phase through the batch API; without --wait each
    run submits what it can, and the metrics appear once every answer is back."""
    with ChatServer(script=scripted_model) as server:
        live = run_suites(tmp_path / "live", server)
        assert live.returncode == 0, live.stderr
        batched = tmp_path / "batched"
        first = run_suites(batched, server, "--batch")
        assert first.returncode == 0 and "calls are in provider batches" in first.stdout
        assert not (batched / "run" / "robustness.json").exists()  # metrics wait
        rounds = 1
        while not (batched / "run" / "robustness.json").exists() and rounds < 10:
            again = run_suites(batched, server, "--batch")
            assert again.returncode == 0, again.stderr
            rounds += 1
        assert (batched / "run" / "rewrites.batches.jsonl").exists()
        assert (batched / "run" / "answers.batches.jsonl").exists()
    metrics = json.loads((batched / "run" / "robustness.json").read_text())
    expected = json.loads((tmp_path / "live" / "run" / "robustness.json").read_text())
    assert metrics == expected


def test_maqa_counts_an_answer_right_only_above_half_precision():
    """MAQA §4.3: "the prediction label as 1 if the precision score is higher than 0.5"."""
    from fbi.robustness import Judge

    judge = Judge("f1")
    assert judge.multi("Paris, Lyon", ("Paris", "Lyon"))[0] is True
    assert judge.multi("Paris, Rome", ("Paris", "Lyon"))[:2] == (False, 0.5)  # not above
    assert judge.multi("Paris, Lyon, Rome", ("Paris", "Lyon"))[0] is True  # 2/3


def test_score_judges_maqa_rows_without_correct_as_answer_sets(tmp_path):
    """Issue 23: a MAQA table with gold and no `correct` column gets the multi-answer rule
    and its precision, recall and F1; expected values worked by hand."""
    from fbi.robustness import score_answers

    rows = [("q1", 0, "Paris, Lyon", "Paris|Lyon"),     # P 1,   R 1,   F1 1    right
            ("q1", 1, "Paris, Rome", "Paris|Lyon"),     # P 1/2, R 1/2, F1 1/2  wrong
            ("q2", 0, "Berlin", "Berlin|Munich"),       # P 1,   R 1/2, F1 2/3  right
            ("q2", 1, "Rome", "Berlin|Munich")]         # P 0,   R 0,   F1 0    wrong
    table = tmp_path / "maqa.jsonl"
    table.write_text("".join(json.dumps({"item_id": q, "variant": "original", "sample": s,
                                         "answer": a, "gold": g, "suite": "maqa"}) + "\n"
                             for q, s, a, g in rows))
    maqa = score_answers(str(table)).suites.maqa
    assert maqa.accuracy == pytest.approx(2 / 4)
    assert maqa.precision == pytest.approx((1 + 0.5 + 1 + 0) / 4)
    assert maqa.recall == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert maqa.f1 == pytest.approx((1 + 0.5 + 2 / 3 + 0) / 4)


def test_score_exits_as_run_does_and_names_model_and_table(tmp_path):
    """Issue 26: `robustness score` exited 0 on answers where `robustness run` exits 1 (a
    suite that failed), and its tables' titles lost the model and dataset."""
    table = tmp_path / "only-originals.csv"
    table.write_text("question_id,variant,answer,gold,suite,model\n"
                     "q1,original,Paris,Paris,multiqa,openai/m\n"
                     "q2,original,4,4,multiqa,openai/m\n")
    failed = CliRunner().invoke(main, ["robustness", "score", str(table)], terminal_width=200)
    assert failed.exit_code == 1, failed.output
    assert "suite multiqa failed" in failed.output
    good = tmp_path / "answers.csv"
    good.write_text("question_id,variant,answer,gold,suite,model\n" + "".join(
        f"q{q},{v},Paris,Paris,multiqa,openai/m\n" for q in (1, 2) for v in (0, 1)))
    result = CliRunner().invoke(main, ["robustness", "score", str(good)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "openai/m · answers.csv" in result.output


def test_robustness_json_is_written_and_read_through_its_model(tmp_path):
    """Issue 25: robustness.json is a RobustnessResults: written through the model with
    every field present, read back equal, an older (version 1) file still read, and a
    file that does not match is one message naming the file and the field (exit 2)."""
    from fbi.metrics import MultiQAMetrics, RobustnessResults

    table = tmp_path / "answers.csv"
    table.write_text("question_id,variant,answer,gold,suite,model\n" + "".join(
        f"q{q},{v},{answer},Paris,multiqa,openai/m\n" for q, answers in
        ((1, ("Paris", "Paris", "Lyon")), (2, ("Paris", "Rome", "Rome")))
        for v, answer in enumerate(answers)))
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"kind": "robustness"}))
    written = folder / "robustness.json"
    result = CliRunner().invoke(main, ["robustness", "score", str(table), "--output",
                                       str(written)])
    assert result.exit_code == 0, result.output
    stored = json.loads(written.read_text())
    assert stored["schema_version"] == 2
    assert set(stored["suites"]) == {"multiqa"}  # only the suites that gave metrics
    assert set(stored["suites"]["multiqa"]) == set(MultiQAMetrics.model_fields)
    assert RobustnessResults.model_validate(stored).model_dump(mode="json") == stored
    # 3 answers a question: base accuracy 2/2, mean 3/6 right, worst case 0 (hand-worked)
    multiqa = stored["suites"]["multiqa"]
    assert (multiqa["base_accuracy"], multiqa["mean_accuracy"], multiqa["worst_case"]) == \
        (1.0, pytest.approx(3 / 6), 0.0)

    report = CliRunner().invoke(main, ["report", str(folder), "--output",
                                       str(tmp_path / "out"), "--format", "json"])
    assert report.exit_code == 0, report.output
    (entry,) = json.loads((tmp_path / "out" / "summary.json").read_text())["robustness"]
    assert entry["suites"]["multiqa"]["mean_accuracy"] == pytest.approx(3 / 6)

    older = {**stored, "schema_version": 1, "suites": {"multiqa": {
        k: v for k, v in multiqa.items() if not k.startswith(("permut", "cronbach_alpha_p",
                                                              "fleiss_kappa_p"))}}}
    written.write_text(json.dumps(older))
    again = CliRunner().invoke(main, ["report", str(folder), "--output",
                                      str(tmp_path / "out"), "--format", "json"])
    assert again.exit_code == 0, again.output

    written.write_text(json.dumps({**stored, "suites": {"multiqa": {
        **multiqa, "certainty": "high"}}}))
    broken = CliRunner().invoke(main, ["report", str(folder), "--output",
                                       str(tmp_path / "out"), "--format", "json"])
    assert broken.exit_code == 2
    assert "robustness.json" in broken.output and "suites.multiqa.certainty" in broken.output
    assert "Traceback" not in broken.output


def test_a_metric_that_cannot_be_computed_is_none_not_nan():
    """NaN from numpy (a constant column) reaches every writer as None."""
    import numpy as np

    from fbi.metrics import NoiseMetrics

    metrics = NoiseMetrics(questions=np.int64(2), accuracy_original=np.float64(0.5),
                           accuracy_perturbed=0.5, pdr=float("nan"), cohens_h=np.nan,
                           h_over_pi=None, abs_h=None, effect="essentially zero",
                           h_ci_low=None, h_ci_high=None, ci_method=None)
    assert metrics.pdr is None and metrics.cohens_h is None
    assert type(metrics.questions) is int and metrics.model_dump_json().count("NaN") == 0


@pytest.mark.parametrize("name, text, said", [
    ("empty-gold.csv", "question_id,variant,answer,gold\nq1,original,Paris,Paris\n"
     "q1,1,Paris,\n", "row 2: an empty gold and no correct"),
    ("maybe.csv", "question_id,variant,answer,gold,correct\nq1,original,Paris,Paris,true\n"
     "q1,1,Paris,Paris,maybe\n", "row 2: correct 'maybe' is neither true nor false"),
    ("two.csv", "question_id,variant,answer,correct\nq1,original,Paris,2\n",
     "correct 2 is neither"),
    ("nothing.jsonl", '{"item_id": "q1", "variant": "original", "answer": "Paris", '
     '"gold": "Paris"}\n{"item_id": "q1", "variant": "1", "answer": "x", "gold": []}\n',
     "line 2: an empty gold and no correct"),
    ("nan.jsonl", '{"item_id": "q1", "variant": "original", "answer": "x", '
     '"correct": NaN}\n', "line 1: the number NaN"),
    ("word.jsonl", '{"item_id": "q1", "variant": "original", "answer": "x", '
     '"correct": "perhaps"}\n', "line 1: correct 'perhaps'"),
])
def test_an_answers_table_is_read_exactly_or_refused_with_its_row(tmp_path, name, text,
                                                                   said):
    """Issue 38: a `correct` that says neither true nor false is never counted correct,
    an empty gold is never a gold of "nan", and a bad row is one message, exit 2."""
    table = tmp_path / name
    table.write_text(text)
    result = CliRunner().invoke(main, ["robustness", "score", str(table)], terminal_width=200)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output


def test_correct_words_and_numbers_are_read_as_written(tmp_path):
    from fbi.robustness import score_answers

    table = tmp_path / "answers.csv"
    table.write_text("question_id,variant,answer,gold,correct\n"
                     "q1,original,a,a,TRUE\nq1,1,b,a,0\nq2,original,c,c,yes\nq2,1,d,c,\n")
    multiqa = score_answers(str(table)).suites.multiqa
    # q2's rephrasing has no `correct`: computed from gold ("d" against "c": wrong)
    assert multiqa.base_accuracy == 1.0 and multiqa.item_difficulty == pytest.approx(2 / 4)
