"""Issue 24, item 1: preference benchmarks as fbi data — RewardBench's and LLMBar's
layouts and any other through --columns; chosen plays gold, rejected perturbed, the
subset is the category under its own ability, never pooled with FBI's."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi import load_dataset
from fbi.cli import main
from fbi.datasets import parse_columns
from fbi.errors import DatasetError
from fbi.taxonomy import Ability


def rewardbench_file(path, instances):
    """The sample's pairs in RewardBench's published columns (prompt, chosen,
    chosen_model, rejected, rejected_model, subset, id)."""
    with open(path, "w", encoding="utf-8") as out:
        for n, i in enumerate(instances):
            out.write(json.dumps({"prompt": i.instruction, "chosen": i.gold_answer,
                                  "chosen_model": "human", "rejected": i.perturbed_answer,
                                  "rejected_model": "gpt-4", "subset": i.category,
                                  "id": n}) + "\n")
    return path


@pytest.fixture(scope="module")
def pairs():
    return [i for i in load_dataset("sample").instances if not i.is_score_invariant]


def test_rewardbench_layout(tmp_path, pairs):
    loaded = list(load_dataset(str(rewardbench_file(tmp_path / "rb.jsonl", pairs))).instances)
    assert len(loaded) == len(pairs)
    first = loaded[0]
    assert (first.id, first.category, first.ability) == ("0", f"preference/{pairs[0].category}",
                                                        Ability.PREFERENCE)
    assert (first.instruction, first.gold_answer, first.perturbed_answer) == (
        pairs[0].instruction, pairs[0].gold_answer, pairs[0].perturbed_answer)
    assert (first.provenance.gold_model, first.provenance.generator) == ("human", "gpt-4")


def test_llmbar_layout_reads_the_label_and_the_subset_folder(tmp_path):
    folder = tmp_path / "LLMBar" / "Adversarial" / "Neighbor"
    folder.mkdir(parents=True)
    (folder / "dataset.json").write_text(json.dumps([
        {"input": "Name a prime.", "output_1": "9", "output_2": "7", "label": 2},
        {"input": "Name a colour.", "output_1": "Blue.", "output_2": "Chair.", "label": 1}]))
    loaded = list(load_dataset(str(folder / "dataset.json")).instances)
    assert [(i.instruction, i.gold_answer, i.perturbed_answer, i.category) for i in loaded] == [
        ("Name a prime.", "7", "9", "preference/Adversarial/Neighbor"),
        ("Name a colour.", "Blue.", "Chair.", "preference/Adversarial/Neighbor")]
    (folder / "dataset.json").write_text(json.dumps([
        {"input": "x", "output_1": "a", "output_2": "b", "label": 3}]))
    with pytest.raises(DatasetError, match="1 or 2"):
        load_dataset(str(folder / "dataset.json"))


def llmbar_tree(root):
    """LLMBar's published tree: one dataset.json a subset, Adversarial's in subfolders."""
    for subset, rows in {"Natural": [("Name a prime.", "9", "7", 2)],
                         "Adversarial/Neighbor": [("Name a colour.", "Blue.", "Chair.", 1),
                                                  ("Name a fruit.", "Pear.", "Car.", 1)],
                         "Adversarial/GPTInst": [("Name a tree.", "Rock.", "Oak.", 2)]}.items():
        (root / subset).mkdir(parents=True)
        (root / subset / "dataset.json").write_text(json.dumps([
            {"input": q, "output_1": a, "output_2": b, "label": label}
            for q, a, b, label in rows]))
    return root


@pytest.mark.parametrize("top", ["LLMBar", "published"])
def test_llmbar_tree_keeps_each_files_subset(tmp_path, top):
    """Issue 41, item 6: the tree read as a folder keeps each file's path as its subset
    (not one 'train' split); below a folder named LLMBar the name is the same whichever
    part of the tree, or which file, is read."""
    root = llmbar_tree(tmp_path / top)
    tree = [(i.instruction, i.category) for i in load_dataset(str(root)).instances]
    assert sorted(tree) == sorted([
        ("Name a prime.", "preference/Natural"),
        ("Name a colour.", "preference/Adversarial/Neighbor"),
        ("Name a fruit.", "preference/Adversarial/Neighbor"),
        ("Name a tree.", "preference/Adversarial/GPTInst")])
    part = {i.category for i in load_dataset(str(root / "Adversarial")).instances}
    one = {i.category for i in load_dataset(
        str(root / "Adversarial" / "Neighbor" / "dataset.json")).instances}
    if top == "LLMBar":
        assert part == {"preference/Adversarial/Neighbor", "preference/Adversarial/GPTInst"}
        assert one == {"preference/Adversarial/Neighbor"}
    else:  # no LLMBar folder: named below the folder given, or by the file's folder
        assert part == {"preference/Neighbor", "preference/GPTInst"}
        assert one == {"preference/Neighbor"}


def test_llmbar_tree_through_evaluate_and_report(tmp_path):
    root = llmbar_tree(tmp_path / "LLMBar")
    with ChatServer() as server:
        evaluate(tmp_path, server, root, "llmbar")
    report = CliRunner().invoke(main, ["report", str(tmp_path / "llmbar"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    counts = {(r["strategy"], r["group"]): r["detected"] + r["undetected"] + r["unparseable"]
              for r in summary["rates"] if r["level"] == "category"}
    assert counts == {(s, g): n for s in ("vanilla", "pairwise") for g, n in (
        ("preference/Natural", 1), ("preference/Adversarial/Neighbor", 2),
        ("preference/Adversarial/GPTInst", 1))}
    bad = root / "Adversarial" / "GPTInst" / "dataset.json"
    bad.write_text(json.dumps([{"input": "x", "output_1": "a", "output_2": "b",
                                "label": "first"}]))
    result = CliRunner().invoke(main, ["evaluate", "--judge", "openai/x", "--api-base",
                                       "http://127.0.0.1:9/v1", "--dataset", str(root),
                                       "--output", str(tmp_path / "bad")],
                                env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 2 and str(bad) in result.output and "item 1" in result.output


def test_other_names_through_columns_and_no_mixing(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("question,good,bad,kind\nWhat is 3+3?,6,7,math\n")
    (loaded,) = load_dataset(str(path), columns=parse_columns(
        "prompt=question,chosen=good,rejected=bad,category=kind")).instances
    assert (loaded.instruction, loaded.gold_answer, loaded.perturbed_answer,
            loaded.category) == ("What is 3+3?", "6", "7", "preference/math")
    with pytest.raises(Exception, match="FIELD=COLUMN"):
        parse_columns("question=prompt")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"prompt": "a", "chosen": "b", "rejected": "c"}) + "\n" +
                     json.dumps({"instruction": "a", "gold_answer": "b",
                                 "perturbed_answer": "c", "category": "entity"}) + "\n")
    with pytest.raises(DatasetError, match="both preference pairs"):
        load_dataset(str(mixed))


def evaluate(tmp_path, server, dataset, name, *extra):
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / f"{name}.sqlite")}
    result = CliRunner().invoke(main, [
        "evaluate", "--judge", f"openai/{name}", "--api-base", server.url, "--dataset",
        str(dataset), "--strategy", "vanilla", "--strategy", "pairwise", "--output",
        str(tmp_path / name), *extra], env=env, terminal_width=120)
    assert result.exit_code == 0, result.output
    return result.output


def outcome_counts(summary: dict) -> dict:
    return {(r["strategy"], r["group"].removeprefix("preference/")):
            (r["detected"], r["undetected"], r["unparseable"])
            for r in summary["rates"] if r["level"] == "category"}


@pytest.mark.slow
def test_the_same_pairs_give_the_same_counts_either_way(tmp_path, pairs):
    """The sample as FBI instances and as a RewardBench file, judged by the loopback
    judge (its verdict a hash of the prompt, the same prompt for the same pair under
    Vanilla and Pairwise): identical counts per category and subset; the report names
    the preference rate as an error rate and keeps it in its own column."""
    fbi_layout = tmp_path / "fbi.jsonl"
    from fbi import write_dataset

    write_dataset(pairs, fbi_layout)
    preference = rewardbench_file(tmp_path / "rb.jsonl", pairs)
    with ChatServer() as server:
        evaluate(tmp_path, server, fbi_layout, "as-fbi")
        said = evaluate(tmp_path, server, preference, "as-preference")
    assert "% error, 1 − accuracy" in " ".join(said.split()) and "Pref (66)" in said
    summaries = []
    for name in ("as-fbi", "as-preference"):
        report = CliRunner().invoke(main, ["report", str(tmp_path / name), "--output",
                                           str(tmp_path / name / "r")], terminal_width=120)
        assert report.exit_code == 0, report.output
        summaries.append(json.loads((tmp_path / name / "r" / "summary.json").read_text()))
    assert outcome_counts(summaries[0]) == outcome_counts(summaries[1])
    overall = [[(r["strategy"], r["detected"], r["undetected"]) for r in s["rates"]
                if r["level"] == "overall"] for s in summaries]
    assert overall[0] == overall[1]
    assert {r["group"] for r in summaries[1]["rates"] if r["level"] == "ability"} == {"Pref"}
    markdown = (tmp_path / "as-preference" / "r" / "report.md").read_text()
    assert "| strategy | Pref |" in markdown and "1 − accuracy" in markdown
    assert "| LF |" not in markdown


@pytest.mark.slow
def test_two_judges_jury_and_leaderboard_on_a_preference_set(tmp_path, pairs):
    preference = rewardbench_file(tmp_path / "rb.jsonl", pairs)
    with ChatServer() as server:
        evaluate(tmp_path, server, preference, "a")
    with ChatServer(script=lambda r: '{"score": 5}' if "answer_a" not in json.dumps(r)
                    else '{"verdict": "tie"}') as server:
        evaluate(tmp_path, server, preference, "b")
    report = CliRunner().invoke(main, ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                       "--jury", "any", "--output", str(tmp_path / "r")],
                                terminal_width=160)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert {c["group"] for c in summary["comparisons"] if c["level"] == "ability"} == {"Pref"}
    board = summary["leaderboard"]
    assert {r["judge"] for r in board} >= {"openai/a", "openai/b"}
    assert all("Pref" in r for r in board if r["rate"] is not None)
    assert any(r["judge"].startswith("jury:any") for r in board)
    # b ties every pair (a miss each time): under Vanilla, where a misses about half,
    # the verdict names a
    said = " ".join(report.output.split())
    sentence = said.split("openai/a misses fewer planted errors than openai/b: ", 1)[1]
    assert "vs 100.0%" in sentence.split(")")[0] and "(under Vanilla," in sentence.split(
        ")")[0] + ")"


@pytest.mark.slow
def test_resume_restores_the_columns(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("question,good,bad\nWhat is 3+3?,6,7\nWhat is 2+2?,4,5\n")
    with ChatServer() as server:
        evaluate(tmp_path, server, path, "j", "--columns",
                 "prompt=question,chosen=good,rejected=bad")
        env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "j.sqlite")}
        again = CliRunner().invoke(main, ["evaluate", "--resume", str(tmp_path / "j")],
                                   env=env)
    assert again.exit_code == 0, again.output
    assert "0 calls this time" in " ".join(again.output.split())
