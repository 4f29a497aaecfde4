"""Issue 41, item 2: best-of-N sets in RewardBench 2's layout (prompt, chosen and
rejected as lists, subset, num_correct). Each row is judged as its chosen × rejected
pairs and ranked: right when every chosen answer outranks every rejected one, by
single-answer scores and by pairwise judgments, with chance, Wilson intervals,
RewardBench 2's credit, its Ties score and paired tests between judges. Every expected
value below is worked by hand from the planted scores (or by statsmodels)."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi import load_dataset
from fbi.cli import main

#: The score each judge gives each answer (None: an unreadable reply).
SCORES = {
    "good": {
        "A1": 9, "B1": 5, "B2": 3, "B3": 7,  # m1: 9 above 7, 5, 3: right
        "A2": 6, "B4": 6, "B5": 2, "B6": 1,  # m2: 6 ties 6: wrong (RB2 credit ½)
        "A3": 4, "B7": 8, "B8": 1, "B9": 1,  # m3: 4 below 8: wrong (credit 0)
        "A4": None, "C1": 1, "C2": 1, "C3": 1,  # m4: unreadable (credit 0: RB2 drops the
        # failed rating and the top of the rest is a rejected answer)
        "T1": 8, "T3": 9, "F1": 5, "F2": 6,  # ref:1 and tied:1
        "U1": 5, "U2": 5, "G1": 6, "G2": 2,  # ref:2 and tied:2
    },
}
#: A second judge: right on m2 and m3, wrong on m1 (A1 below B3), m4 readable and right.
SCORES["other"] = {**SCORES["good"], "A1": 6, "A2": 7, "A3": 9, "A4": 2}

ROWS = [
    {"id": "m1", "prompt": "Q1", "chosen": ["A1"], "rejected": ["B1", "B2", "B3"],
     "subset": "Math", "num_correct": 1},
    {"id": "m2", "prompt": "Q2", "chosen": ["A2"], "rejected": ["B4", "B5", "B6"],
     "subset": "Math"},
    {"id": "m3", "prompt": "Q3", "chosen": ["A3"], "rejected": ["B7", "B8", "B9"],
     "subset": "Math"},
    {"id": "m4", "prompt": "Q4", "chosen": ["A4"], "rejected": ["C1", "C2", "C3"],
     "subset": "Math"},
    {"id": "ref:1", "prompt": "P1", "chosen": ["T1"], "rejected": ["F1", "F2"],
     "subset": "Ties"},
    {"id": "tied:1", "prompt": "P1", "chosen": ["T1", "T3"], "rejected": ["F1", "F2"],
     "subset": "Ties", "num_correct": 2},
    {"id": "ref:2", "prompt": "P2", "chosen": ["U1"], "rejected": ["G1"], "subset": "Ties"},
    {"id": "tied:2", "prompt": "P2", "chosen": ["U1", "U2"], "rejected": ["G1", "G2"],
     "subset": "Ties"},
]
MARK = re.compile(r"\b[A-Z]\d\b")


def planted(request: dict) -> str:
    """Scores from SCORES for the judge named by the model; pairwise, the higher score
    wins its slot (equal: a tie)."""
    table = SCORES[request["model"]]
    prompt = "\n".join(m["content"] for m in request["messages"])
    answers = [m for m in MARK.findall(prompt) if m in table and not m.startswith(("Q", "P"))]
    if '"verdict"' in prompt:
        first, second = (table[a] for a in answers[-2:])
        if first is None or second is None:
            return "no verdict here"
        verdict = "A" if first > second else "B" if second > first else "tie"
        return json.dumps({"explanation": ".", "verdict": verdict})
    if "an integer from" not in prompt:
        return "OK"
    score = table[answers[-1]]
    return "unreadable" if score is None else json.dumps({"explanation": ".", "score": score})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bon")
    data = folder / "rb2.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in ROWS) + "\n")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(folder / "cache.sqlite")}
    with ChatServer(planted) as server:
        for judge in ("good", "other"):
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", f"openai/{judge}", "--api-base", server.url,
                "--dataset", str(data), "--strategy", "vanilla", "--strategy", "pairwise",
                "--output", str(folder / judge)], env=env, terminal_width=120)
            assert result.exit_code == 0, result.output
        single = [r for r in server.requests if "an integer from" in json.dumps(r)
                  and r["model"] == "good"]
    report = CliRunner().invoke(main, ["report", str(folder / "good"), str(folder / "other"),
                                       "--output", str(folder / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    return folder, json.loads((folder / "r" / "summary.json").read_text()), single, \
        report.output


def test_rewardbench2_rows_are_read_as_their_pairs(tmp_path):
    path = tmp_path / "rb2.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in ROWS[:1] + ROWS[5:6]) + "\n")
    loaded = list(load_dataset(str(path)).instances)
    assert [(i.id, i.category, i.gold_answer, i.perturbed_answer, i.provenance.group,
             i.provenance.chosen_index, i.provenance.rejected_index) for i in loaded] == [
        ("m1:c1-r1", "preference/Math", "A1", "B1", "m1", 0, 0),
        ("m1:c1-r2", "preference/Math", "A1", "B2", "m1", 0, 1),
        ("m1:c1-r3", "preference/Math", "A1", "B3", "m1", 0, 2),
        ("tied:1:c1-r1", "preference/Ties", "T1", "F1", "tied:1", 0, 0),
        ("tied:1:c1-r2", "preference/Ties", "T1", "F2", "tied:1", 0, 1),
        ("tied:1:c2-r1", "preference/Ties", "T3", "F1", "tied:1", 1, 0),
        ("tied:1:c2-r2", "preference/Ties", "T3", "F2", "tied:1", 1, 1)]


@pytest.mark.parametrize(("row", "said"), [
    ({"num_correct": 2}, "num_correct 2 but the row lists 1"),
    ({"total_completions": 3}, "total_completions 3 but the row lists 4"),
    ({"rejected": []}, "'rejected' must be a non-empty list"),
    ({"rejected": ["x", 3]}, "'rejected' item 2 is not a non-empty text"),
    ({"chosen": ["x", "  "]}, "'chosen' item 2 is not a non-empty text"),
    # a list of messages is a conversation, and a list of answers no conversation
    ({"rejected": [{"role": "assistant", "content": "x"}]}, "'chosen' message 1 is not"),
    ({"chosen": ["x"] * 65}, "more than 64"),
])
def test_bad_best_of_n_rows_name_file_and_row(tmp_path, row, said):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[1]) + "\n" + json.dumps({**ROWS[0], **row}) + "\n")
    result = CliRunner().invoke(main, ["evaluate", "--judge", "openai/x", "--api-base",
                                       "http://127.0.0.1:9/v1", "--dataset", str(path),
                                       "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"{path}, line 2" in " ".join(result.output.split()) and said in result.output
    assert "Traceback" not in result.output


def test_an_answer_in_several_pairs_is_scored_once(runs):
    """m1's chosen answer is in three pairs: one single-answer call, not three (the
    cache, or the call in flight, answers the others)."""
    _, _, single, _ = runs
    asked = [MARK.findall("\n".join(m["content"] for m in r["messages"]))[-1] for r in single]
    assert sorted(asked) == sorted(set(asked))  # every answer asked exactly once
    assert len(asked) == 16 + 8  # Math's 16 answers; Ties' T1 T3 F1 F2 U1 U2 G1 G2


def rows_of(summary, judge, strategy):
    return {r["group"]: r for r in summary["best_of_n"]["accuracy"]
            if r["judge"] == judge and r["strategy"] == strategy}


@pytest.mark.parametrize("strategy", ["vanilla", "pairwise"])
def test_accuracy_chance_and_interval_worked_by_hand(runs, strategy):
    from statsmodels.stats.proportion import proportion_confint

    _, summary, _, _ = runs
    math_row = rows_of(summary, "openai/good", strategy)["Math"]
    # m1 right; m2 wrong (a tie); m3 wrong; m4 unreadable: 1 of 3 readable, 1 of 4 whole
    assert (math_row["rows"], math_row["correct"], math_row["unreadable"],
            math_row["incomplete"]) == (4, 1, 1, 0)
    assert math_row["accuracy"] == pytest.approx(1 / 3)
    assert math_row["worst_case_accuracy"] == pytest.approx(1 / 4)
    assert math_row["chance"] == pytest.approx(1 / 4)  # 1 / C(4, 1)
    low, high = proportion_confint(1, 3, alpha=0.05, method="wilson")
    assert (math_row["ci_low"], math_row["ci_high"]) == (pytest.approx(low, abs=1e-4),
                                                         pytest.approx(high, abs=1e-4))
    # RewardBench 2's credit: 1 + ½ (top shared by 2) + 0 + 0 (the chosen's rating
    # unreadable: dropped, and the rejected answers share the top), over 4
    expected_credit = (1 + 0.5 + 0 + 0) / 4 if strategy == "vanilla" else None
    assert math_row["rewardbench_credit"] == (pytest.approx(expected_credit)
                                              if expected_credit else None)
    ties = rows_of(summary, "openai/good", strategy)["Ties"]
    # ref:1 and tied:1 right; ref:2 (5 < 6) and tied:2 wrong; chance ⅓, ⅙, ½, ⅙
    assert (ties["rows"], ties["correct"]) == (4, 2)
    assert ties["chance"] == pytest.approx((1 / 3 + 1 / 6 + 1 / 2 + 1 / 6) / 4)


def test_the_ties_score_worked_by_hand(runs):
    """Prompt 1: ref margin 8 − 6 = 2, tied margin 8 − 6 = 2, tied spread 9 − 8 = 1:
    accurate, preferred (2 > 1), hard-preferred (min 2 > 1), tanh(2/1 − 1) = tanh 1.
    Prompt 2: ref 5 − 6 = −1, tied 5 − 6 = −1, spread 0: none, and −1/0 gives tanh(−∞)
    = −1. Score = .3·½ + .3·½ + .2·½ + .2·½ + .01·(tanh 1 − 1)/2."""
    _, summary, _, _ = runs
    (ties,) = [t for t in summary["best_of_n"]["ties"] if t["judge"] == "openai/good"]
    assert (ties["ref_accuracy"], ties["tied_accuracy"], ties["correctness_preferred"],
            ties["correctness_preferred_hard"]) == (0.5, 0.5, 0.5, 0.5)
    assert ties["margin_score"] == pytest.approx((math.tanh(1) - 1) / 2)
    assert ties["score"] == pytest.approx(0.5 + 0.01 * (math.tanh(1) - 1) / 2)
    assert (ties["ref_prompts"], ties["tied_prompts"], ties["margin_prompts"]) == (2, 2, 2)
    assert not [t for t in summary["best_of_n"]["ties"] if t["strategy"] == "pairwise"]


def test_paired_tests_between_judges_against_statsmodels(runs):
    """Math under Vanilla, rows both judged readably: m1, m2, m3 (m4 unreadable for the
    good judge). Good is right on m1 only; other on m2 and m3: 1 against 2 discordant."""
    from statsmodels.stats.contingency_tables import mcnemar

    _, summary, _, _ = runs
    (row,) = [c for c in summary["best_of_n"]["comparisons"]
              if c["strategy"] == "vanilla" and c["group"] == "Math"]
    assert (row["judge_a"], row["judge_b"], row["rows"], row["a_only"], row["b_only"]) == (
        "openai/good", "openai/other", 3, 1, 2)
    assert row["p_value"] == pytest.approx(mcnemar([[0, 1], [2, 0]], exact=True).pvalue)


def test_every_report_shows_the_tables(runs):
    folder, _, _, terminal = runs
    markdown = (folder / "r" / "report.md").read_text()
    html = (folder / "r" / "report.html").read_text()
    for text in (markdown, html):
        assert "Best-of-N: % of rows ranked right" in text and "RewardBench 2 Ties" in text
        assert "paired tests between judges" in text
    assert "Best-of-N: % of rows ranked right" in terminal and "% chance" in terminal
    assert "33.3" in terminal and "[6–79]" in terminal  # good's Math accuracy, interval


def test_limit_and_sample_keep_rows_whole(tmp_path):
    """--limit N and --sample N count best-of-N rows, each with all its pairs."""
    data = tmp_path / "rb2.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in ROWS) + "\n")
    dataset = load_dataset(str(data))
    first = dataset.select(limit=1)
    assert sorted(i.id for i in first) == sorted(
        [f"m1:c1-r{j}" for j in (1, 2, 3)] + [f"ref:1:c1-r{j}" for j in (1, 2)])
    for seed in range(5):
        drawn = dataset.select(sample=2, sample_seed=seed, sample_by="overall")
        rows = {i.provenance.group for i in drawn}
        assert len(rows) == 2
        assert len(drawn) == sum(len(r["chosen"]) * len(r["rejected"]) for r in ROWS
                                 if r["id"] in rows)


def test_a_row_the_run_holds_in_part_is_incomplete_not_counted(tmp_path):
    """A file holding only some of a row's pairs (a pair deleted by hand from a written
    dataset): the row is incomplete, out of every figure and counted."""
    source = tmp_path / "rb2.jsonl"
    source.write_text("\n".join(json.dumps(row) for row in ROWS[:2]) + "\n")
    from fbi import write_dataset

    pairs = [i for i in load_dataset(str(source)).instances if i.id != "m2:c1-r3"]
    data = write_dataset(pairs, tmp_path / "pairs.jsonl")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    with ChatServer(planted) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/good", "--api-base", server.url, "--dataset",
            str(data), "--strategy", "vanilla", "--output",
            str(tmp_path / "run")], env=env)
        assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")])
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    row = rows_of(summary, "openai/good", "vanilla")["Math"]
    assert (row["rows"], row["correct"], row["incomplete"], row["accuracy"]) == (1, 1, 1, 1.0)



def test_a_human_label_matching_several_pairs_by_text_is_refused(runs, tmp_path):
    """Issue 50: P1 with the rejected answer F1 is a pair of T1 and of T3 (and of ref:1's
    T1): a label naming it by its texts names no one instance — one message with the
    row, never the label given to the last pair read. Q1 with B1 names one: read."""
    folder, *_ = runs
    labels = tmp_path / "labels.csv"
    labels.write_text("prompt,perturbed_answer,verdict,annotator\nQ1,B1,a,ann\nP1,F1,a,ann\n")
    result = CliRunner().invoke(main, ["report", str(folder / "good"), "--human",
                                       str(labels), "--output", str(tmp_path / "r")],
                                terminal_width=200)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "line 3" in said and "match several instances" in said and "line 2" not in said
    labels.write_text("prompt,perturbed_answer,verdict,annotator\nQ1,B1,a,ann\n")
    result = CliRunner().invoke(main, ["report", str(folder / "good"), "--human",
                                       str(labels), "--output", str(tmp_path / "r2")],
                                terminal_width=200)
    assert result.exit_code == 0, result.output


def test_rewardbench_credit_drops_unreadable_ratings_as_its_scorer_does():
    """RewardBench 2's run_judge_ratings_multi: ratings of -1 (failed) are dropped and
    the winners are the top of the rest; only when every rating failed is the row
    "effectively a tie" (0.25 of 4). Cases worked by hand."""
    from fbi.metrics._best_of_n import _credit, _Row

    row = _Row(subset="Math", chosen=1, rejected=3, outcomes={})

    def credit(chosen, *rejected):
        scores = {("chosen", 0): chosen, **{("rejected", j): v
                                            for j, v in enumerate(rejected)}}
        return _credit(scores, row)

    assert credit(None, 1, 1, 1) == 0.0  # the chosen unrated: not among the top
    assert credit(7, None, 7, 2) == 0.5  # a rejected unrated: top 7 shared by 2
    assert credit(9, None, None, 3) == 1.0
    assert credit(2, 5, None, None) == 0.0
    assert credit(None, None, None, None) == 0.25
