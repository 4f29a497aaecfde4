"""Columns that hold whole numbers (issue 63): in JSON and Parquet rows only an integer —
never text, a float or a boolean standing in for one; in CSV and TSV rows (where every
value is text) ASCII digits only, never what Python's ``int`` would also take ("1_000",
"٣", " 3 " is fine). A seed, a best-of-N count, an MT-Bench question id alike."""

from __future__ import annotations

import json

import pytest

from fbi import load_dataset
from fbi.datasets import load_gold_items
from fbi.errors import DatasetError


def row(**more) -> dict:
    return {"id": "r1", "category": "entity", "instruction": "Who wrote Hamlet?",
            "gold_answer": "Shakespeare.", "perturbed_answer": "Marlowe.", **more}


@pytest.mark.parametrize("value", ["3", True, 3.0, [3], {"n": 3}, "1_000"])
def test_a_json_seed_is_an_integer(tmp_path, value):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row(seed=value)) + "\n")
    with pytest.raises(DatasetError, match="'seed' must be a whole number") as raised:
        load_dataset(str(path))
    assert raised.value.problems[0].location == "line 1"


def test_a_json_seed_that_is_an_integer_is_read(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row(seed=-7)) + "\n")
    assert load_dataset(str(path)).instances[0].provenance.seed == -7


@pytest.mark.parametrize(("value", "read"), [("3", 3), (" 12 ", 12), ("-4", -4),
                                             ("1_000", None), ("٣", None), ("3.0", None),
                                             ("true", None)])
def test_a_csv_seed_is_ascii_digits(tmp_path, value, read):
    path = tmp_path / "rows.csv"
    fields = row(seed=value)
    path.write_text(",".join(fields) + "\n" + ",".join(f'"{v}"' for v in fields.values())
                    + "\n", encoding="utf-8")
    if read is None:
        with pytest.raises(DatasetError, match="'seed' must be a whole number"):
            load_dataset(str(path))
    else:
        assert load_dataset(str(path)).instances[0].provenance.seed == read


@pytest.mark.parametrize("count", ["2", True, 2.0])
def test_a_best_of_n_count_is_an_integer(tmp_path, count):
    """RewardBench 2's num_correct, checked against the list it counts: 2 answers, and
    the count 2 written as text, a boolean or a float is refused, not read as 2."""
    path = tmp_path / "bon.jsonl"
    good = {"id": "b1", "prompt": "Name a prime.", "chosen": ["2", "3"],
            "rejected": ["4"], "num_correct": 2}
    path.write_text(json.dumps(good) + "\n")
    assert len(load_dataset(str(path)).instances) == 2
    path.write_text(json.dumps({**good, "num_correct": count}) + "\n")
    with pytest.raises(DatasetError, match="'num_correct' must be a whole number"):
        load_dataset(str(path))


@pytest.mark.parametrize("question_id", [True, "81", 81.0, None, [81]])
def test_an_mt_bench_question_id_is_an_integer(tmp_path, question_id):
    path = tmp_path / "question.jsonl"
    question = {"question_id": 81, "category": "math", "turns": ["What is 2 + 2?"],
                "reference": ["4"]}
    path.write_text(json.dumps(question) + "\n")
    (item,), _ = load_gold_items(str(path))
    assert item.id == "mt-bench-81-t1"
    path.write_text(json.dumps({**question, "question_id": question_id}) + "\n")
    with pytest.raises(DatasetError, match="question_id"):
        load_gold_items(str(path))
