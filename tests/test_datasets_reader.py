"""Issue 23 item 7: files, Hugging Face folders and Hub datasets are read by
``datasets.load_dataset`` (streaming), with fbi's line-numbered messages for bad rows."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT

from fbi import DatasetError, load_dataset, validate_dataset, write_dataset
from fbi.robustness import load_qa_items

SAMPLE = load_dataset("sample", reader="fbi").instances


def row(**overrides):
    base = {"id": "a1", "category": "entity", "instruction": "Who wrote Hamlet?",
            "gold_answer": "Shakespeare.", "perturbed_answer": "Marlowe."}
    return {**base, **overrides}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".parquet"])
def test_datasets_and_fbis_reader_read_the_same_instances(tmp_path, suffix):
    path = write_dataset(SAMPLE, tmp_path / f"sample{suffix}")
    by_datasets = load_dataset(str(path), reader="datasets").instances
    assert by_datasets == load_dataset(str(path), reader="fbi").instances == SAMPLE


def test_a_json_array_file_is_read_exactly(tmp_path):
    """Issue 38: JSON files are read by fbi's exact reader, arrays and lines alike."""
    rows = [i.to_row() for i in SAMPLE[:5]]
    path = tmp_path / "five.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    assert load_dataset(str(path)).instances == SAMPLE[:5]
    lines = tmp_path / "lines.json"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert load_dataset(str(lines)).instances == SAMPLE[:5]


def test_csv_text_is_kept_as_written(tmp_path):
    """pandas would read "NA" and "null" as missing and "007" as 7; fbi keeps the text."""
    path = tmp_path / "texts.csv"
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(row()))
        writer.writeheader()
        for n, (gold, perturbed) in enumerate([("NA", "N/A"), ("007", "7"), ("null", "")]):
            writer.writerow(row(id=f"t{n}", gold_answer=gold, perturbed_answer=perturbed
                                or "nan"))
    instances = load_dataset(str(path)).instances
    assert [(i.gold_answer, i.perturbed_answer) for i in instances] == \
        [("NA", "N/A"), ("007", "7"), ("null", "nan")]


def test_a_bad_row_is_named_by_its_line(tmp_path):
    """datasets numbers rows; fbi re-reads the file with its own reader to name the line
    (a blank line and a multi-line CSV field would make the row number wrong)."""
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text(json.dumps(row(id="a")) + "\n\n" + json.dumps(row(id="b", gold_answer=""))
                     + "\n", encoding="utf-8")
    problems = validate_dataset(str(jsonl)).problems
    assert [(p.location, p.message) for p in problems] == [("line 3", "empty 'gold_answer'")]

    table = tmp_path / "bad.csv"
    with open(table, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(row()))
        writer.writeheader()
        writer.writerow(row(id="a", gold_answer="one\ntwo\nthree"))
        writer.writerow(row(id="b", category="entitty"))
    problems = validate_dataset(str(table)).problems
    assert [p.location for p in problems] == ["line 5"]
    assert "Did you mean 'entity'" in problems[0].message


def test_a_file_datasets_cannot_parse_is_read_by_fbi_or_named(tmp_path):
    # A blank line among rows of mixed value types stops datasets' JSON reader.
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps(row(id="a", seed=1)) + "\n\n" +
                     json.dumps(row(id="b", seed=2, flags=["x"])) + "\n", encoding="utf-8")
    assert [i.provenance.seed for i in load_dataset(str(mixed))] == [1, 2]
    # (issue 63) text where a number belongs is refused in JSON, as a boolean is
    for wrong in ("2", True, 2.0, "1_000"):
        mixed.write_text(json.dumps(row(id="b", seed=wrong)) + "\n", encoding="utf-8")
        with pytest.raises(DatasetError, match="'seed' must be a whole number"):
            load_dataset(str(mixed))
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(row(id="a")) + "\n" + json.dumps(row(id="b"))[:30] + "\n",
                    encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(torn))
    assert caught.value.problems[0].location == "line 2"
    assert "not valid JSON" in caught.value.problems[0].message


def test_a_bad_json_array_is_one_clear_problem(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[{"id": "a", ', encoding="utf-8")
    problems = validate_dataset(str(path)).problems
    assert len(problems) == 1 and problems[0].file == str(path)
    assert problems[0].message.startswith("not valid JSON")


def _hub_folder(tmp_path: Path) -> Path:
    """A Hugging Face folder in CSV, with a card listing two configs (written by hand in
    the Hub's layout, not by fbi)."""
    folder = tmp_path / "hf"
    for config, category in (("facts", "entity"), ("maths", "calculations")):
        (folder / "data" / config).mkdir(parents=True)
        instances = [i for i in SAMPLE if i.category == category]
        for split, chosen in (("train", instances[:2]), ("test", instances[2:])):
            write_dataset(chosen, folder / "data" / config / f"{split}.csv")
    (folder / "README.md").write_text(
        "---\nconfigs:\n" + "".join(
            f"- config_name: {config}\n  data_files:\n"
            f"  - split: train\n    path: data/{config}/train.csv\n"
            f"  - split: test\n    path: data/{config}/test.csv\n"
            for config in ("facts", "maths")) + "---\n# a dataset\n", encoding="utf-8")
    return folder


def test_a_hugging_face_folder_reads_as_load_dataset_does(tmp_path):
    import datasets

    folder = _hub_folder(tmp_path)
    instances = load_dataset(str(folder)).instances
    expected = sum(len(datasets.load_dataset(str(folder), config, split=split))
                   for config in ("facts", "maths") for split in ("train", "test"))
    assert len(instances) == expected == 6
    assert {i.category for i in instances} == {"entity", "calculations"}
    assert sorted(i.id for i in instances) == sorted(
        i.id for i in SAMPLE if i.category in ("entity", "calculations"))


def test_a_bad_row_in_a_hugging_face_folder_names_config_split_and_row(tmp_path):
    folder = _hub_folder(tmp_path)
    test_file = folder / "data" / "maths" / "test.csv"
    text = test_file.read_text(encoding="utf-8").replace(",calculations,", ",calculatoins,")
    test_file.write_text(text, encoding="utf-8")
    problems = validate_dataset(str(folder)).problems
    assert [(p.file, p.location) for p in problems] == [(f"{folder} maths/test", "row 1")]
    assert "Did you mean 'calculations'" in problems[0].message


def test_qa_items_load_through_datasets_with_lines_for_bad_rows(tmp_path):
    path = tmp_path / "qa.json"
    path.write_text(json.dumps([{"id": "q1", "question": "2+2?", "answers": ["4", "four"]}]),
                    encoding="utf-8")
    items, rows = load_qa_items(str(path))
    assert rows == 1 and list(items[0].answers) == ["4", "four"]
    bad = tmp_path / "qa.jsonl"
    bad.write_text('{"id": "q1", "question": "2+2?", "answers": ["4"]}\n\n'
                   '{"id": "q2", "answers": ["5"]}\n', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_qa_items(str(bad))
    assert caught.value.problems[0].location == "line 3"


def test_streaming_copies_nothing_into_the_datasets_cache(tmp_path):
    """datasets would otherwise convert every file it reads into Arrow files in its cache:
    a second copy of a large dataset on disk."""
    path = write_dataset(SAMPLE, tmp_path / "sample.parquet")
    home = tmp_path / "hf-home"
    env = {**os.environ, "HF_HOME": str(home), "HF_DATASETS_CACHE": str(home / "datasets")}
    result = subprocess.run([sys.executable, "-m", "fbi", "datasets", "validate", str(path)],
                            env=env, capture_output=True, text=True, cwd=OUTSIDE_CHECKOUT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"Read {len(SAMPLE)} rows" in result.stdout
    assert not [p for p in home.rglob("*") if p.suffix == ".arrow"]


def test_a_local_looking_spec_that_does_not_exist_is_no_such_file(tmp_path, monkeypatch):
    """Issue 26: 'hiddn/data' beside a folder 'hidden' was tried as a Hub download."""
    (tmp_path / "hidden" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    for spec, closest in (("hiddn/data", "hidden/data"), ("hidden/dta", "hidden/data"),
                          ("hidden/nothing-like-it", "hidden")):
        with pytest.raises(DatasetError) as caught:
            load_dataset(spec)
        problem = caught.value.problems[0]
        assert problem.message == f"no such file or directory (the closest here: {closest})"
        assert f"hf:{spec}" in problem.fix
    with pytest.raises(DatasetError) as caught:  # nothing like it here: a Hub id, offline
        load_dataset("ai4bharat/FBI")
    assert "could not fetch the dataset from the Hugging Face Hub" in \
        caught.value.problems[0].message


# ------------------------------------------------------------------ issue 38: exact rows

HOSTILE_LINES = {
    # what a line holds → what the one problem for it says
    "lone surrogate": ('"instruction": "Who \\udc00 wrote it?"', "lone surrogate"),
    "high surrogate at the end": ('"gold_answer": "ends \\uD83D"', "lone surrogate"),
    "nested arrays": ('"extra": ' + "[" * 5000 + "]" * 5000, "nested more than"),
    "nested objects": ('"extra": ' + '{"a": ' * 40 + "1" + "}" * 40, "nested more than"),
    "number as gold": ('"gold_answer": 42', "'gold_answer' must be text, not int"),
    "list as perturbed": ('"perturbed_answer": ["a"]', "must be text, not list"),
    "object as instruction": ('"instruction": {"t": "x"}', "must be text, not dict"),
    "boolean category": ('"category": true', "'category' must be text, not bool"),
    "huge id": ('"id": 1' + "0" * 30, "integer of 31 digits"),
    "past int64": ('"id": 9223372036854775808', "past what a 64-bit column holds"),
    "digits past Python's limit": ('"id": ' + "7" * 5000, "integer of 5000 digits"),
    "float id": ('"id": 3.0', "'id' must be text or a whole number"),
    "NaN": ('"seed": NaN', "the number NaN"),
    "-Infinity": ('"seed": -Infinity', "the number -Infinity"),
    "overflowing float": ('"seed": 1e999', "overflows to infinity"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_LINES))
def test_a_value_no_column_holds_exactly_is_refused_with_its_line(tmp_path, name):
    """Every row is read exactly or refused with its file and line: never coerced (a
    number made text, a huge id made "inf"), never a crash in a third-party reader."""
    field, said = HOSTILE_LINES[name]
    good = json.dumps(row(id="ok"))
    bad = good[:-1] + ", " + field + "}"
    if field.split(":")[0].strip('"') in row():  # replace the field, not add it twice
        key = field.split(":")[0].strip('"')
        bad = "{" + ", ".join(f'"{k}": {json.dumps(v)}' for k, v in row(id="x").items()
                              if k != key) + ", " + field + "}"
    path = tmp_path / "hostile.jsonl"
    path.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    problems = validate_dataset(str(path)).problems
    assert [p.location for p in problems] == ["line 2"], problems
    assert said in problems[0].message, problems[0].message
    # a .json array of the same rows: the same refusal, by item
    array = tmp_path / "hostile.json"
    array.write_text("[" + good + ",\n" + bad + "]", encoding="utf-8")
    problems = validate_dataset(str(array)).problems
    assert len(problems) == 1 and said in problems[0].message, problems


def test_hostile_rows_through_the_cli_are_one_message_and_exit_2(tmp_path):
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(row(id="ok")) + "\n" + json.dumps(row(id="x"))[:-1] +
                    ', "extra": ' + "[" * 200_000 + "]" * 200_000 + "}\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--dataset", str(path),
                             "--dry-run"], capture_output=True, text=True, timeout=300,
                            cwd=OUTSIDE_CHECKOUT, env={**os.environ, "COLUMNS": "200",
                                                       "FBI_CACHE": str(tmp_path / "c")})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.count("error:") == 1 and "line 2" in result.stderr


def test_a_json_folder_is_checked_exactly_before_datasets_reads_it(tmp_path):
    """A Hugging Face folder of JSON Lines: a mixed-kind column (an id that is text in one
    row and a number in the next, a number among answers) is refused by file and line
    rather than handed to datasets, which would make the column JSON-dumped text."""
    folder = tmp_path / "hf" / "data"
    folder.mkdir(parents=True)
    good = [row(id=f"a{n}") for n in range(3)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in good),
                                        encoding="utf-8")
    assert len(load_dataset(str(tmp_path / "hf")).instances) == 3
    (folder / "test.jsonl").write_text(json.dumps(row(id=7)) + "\n" +
                                       json.dumps(row(id="b8", gold_answer=8.5)) + "\n",
                                       encoding="utf-8")
    problems = validate_dataset(str(tmp_path / "hf")).problems
    assert [(Path(p.file).name, p.location) for p in problems] == \
        [("test.jsonl", "line 2"), ("test.jsonl", "line 2")]
    messages = " ".join(p.message for p in problems)
    assert "'gold_answer' must be text, not float" in messages
    assert "'id' is text where earlier rows hold int" in messages


def test_two_columns_or_keys_of_one_name_are_refused_not_read_as_the_last(tmp_path):
    """Issue 50: a header naming a column twice (CSV, TSV, Parquet) or a JSON object
    giving a key twice would be read as its last value; it is one message naming the
    file and where."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    header = "id,category,instruction,gold_answer,perturbed_answer,gold_answer\n"
    for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
        path = tmp_path / f"twice{suffix}"
        path.write_text((header + "a1,entity,Q?,Right.,Wrong.,Other.\n").replace(",", delimiter))
        with pytest.raises(DatasetError) as caught:
            load_dataset(str(path))
        said = str(caught.value)
        assert path.name in said and "line 1" in said and "'gold_answer'" in said

    path = tmp_path / "twice.parquet"
    names = ["id", "category", "instruction", "gold_answer", "perturbed_answer",
             "perturbed_answer"]
    pq.write_table(pa.Table.from_arrays([pa.array([v]) for v in (
        "a1", "entity", "Q?", "Right.", "Wrong.", "Other.")], names=names), path)
    with pytest.raises(DatasetError, match="two columns are named 'perturbed_answer'"):
        load_dataset(str(path))

    path = tmp_path / "twice.jsonl"
    good = json.dumps(row())
    twice = good[:-1] + ', "perturbed_answer": "Kyd."}'
    path.write_text(good + "\n" + twice + "\n")
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    said = str(caught.value)
    assert "line 2" in said and "'perturbed_answer' is given twice" in said
