from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from fbi import DatasetError, load_dataset, validate_dataset, write_dataset
from fbi.records import VettingLabel
from fbi.taxonomy import PERTURBATION_CATEGORIES, SCORE_INVARIANT

# Paper Table 1 (our category names), and the two extra files of the release.
TABLE_1 = {
    "grammar": 92, "spelling": 100, "consistency": 84, "chronology": 71, "coherence": 91,
    "comprehensiveness": 90, "contextual": 94, "entity": 87, "incorrect-fact": 68,
    "number-errors": 74, "opposite-fact": 91, "remove-fact": 69, "do-less": 100,
    "do-more": 50, "ignore-format": 99, "sequence-errors": 49, "assumptions": 81,
    "calculations": 149, "copying-numbers": 83, "final-errors": 97, "incorrect-units": 77,
    "wrong-formula": 88, SCORE_INVARIANT: 516,
}


def row(**overrides):
    base = {"id": "a1", "category": "entity", "instruction": "Who wrote Hamlet?",
            "gold_answer": "Shakespeare.", "perturbed_answer": "Marlowe."}
    return {**base, **overrides}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ----------------------------------------------------------------- built-in sample


def test_sample_has_three_per_category_and_score_invariant():
    dataset = load_dataset("sample")
    counts = Counter(i.category for i in dataset)
    for category in PERTURBATION_CATEGORIES:
        assert counts[category.name] >= 3, category.name
    assert counts[SCORE_INVARIANT] >= 3
    assert dataset.rows_read == len(dataset)
    assert all(i.gold_answer != i.perturbed_answer for i in dataset)
    assert all(i.rationale for i in dataset)


# ----------------------------------------------------------------- original FBI release


def test_fbi_release_matches_table_1(fbi_original):
    dataset = load_dataset(str(fbi_original))
    counts = Counter(i.category for i in dataset)
    for category, expected in TABLE_1.items():
        assert counts[category] == expected, category
    assert sum(TABLE_1.values()) == 2400
    main = dataset.select()  # extra categories are left out unless asked for
    assert len(main) == 2400
    assert counts["formatting"] == 31 and counts["superficial"] == 61
    # every row survives, and ids are unique even though the release repeats 123 cdx values
    assert dataset.rows_read == len(dataset) == 2492
    assert len({i.id for i in dataset}) == 2492
    original_ids = Counter(i.provenance.original_id for i in dataset)
    assert sum(1 for n in original_ids.values() if n > 1) == 123
    assert all(i.label is VettingLabel.VALID for i in dataset)


def test_fbi_release_score_invariant_abilities_come_from_ids(fbi_original):
    dataset = load_dataset(str(fbi_original))
    si = [i for i in dataset if i.category == SCORE_INVARIANT]
    assert {i.ability.value for i in si} == {
        "factual", "instruction-following", "long-form", "reasoning"}
    lf = [i for i in si if i.provenance.original_id.startswith("lf-")]
    assert lf and all(i.ability.value == "long-form" for i in lf)


def test_single_fbi_tsv_file_infers_category(fbi_original):
    dataset = load_dataset(str(fbi_original / "reasoning" / "calculation-errors.tsv"))
    assert len(dataset) == 149 and {i.category for i in dataset} == {"calculations"}


def test_ids_are_stable_across_loads(fbi_original):
    first = [i.id for i in load_dataset(str(fbi_original))]
    assert first == [i.id for i in load_dataset(str(fbi_original))]


# ----------------------------------------------------------------- files, both ways


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv", ".tsv"])
def test_round_trip_is_lossless(tmp_path, suffix):
    sample = load_dataset("sample")
    path = write_dataset(sample.instances, tmp_path / f"out{suffix}")
    again = load_dataset(str(path))
    assert again.instances == sample.instances
    assert again.fingerprint == sample.fingerprint


def test_round_trip_keeps_provenance_flags_and_labels(tmp_path):
    from fbi import Instance, Provenance

    instance = Instance(
        id="x-1", ability="reasoning", category="calculations", instruction="2+2?",
        gold_answer="4", perturbed_answer="5", rationale=None,
        provenance=Provenance(source="mine", original_id="7", generator="rules:calc",
                              template_version="3", seed=11),
        label=VettingLabel.NOT_SURE, flags=("length-drift", "identical"),
    )
    for suffix in (".jsonl", ".parquet"):
        path = write_dataset([instance], tmp_path / f"one{suffix}")
        assert load_dataset(str(path)).instances == [instance]


def test_aliases_of_the_original_release_are_accepted(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [
        {"cdx": "q1", "category": "entity", "question": "Who?", "og": "A.",
         "perturbed_gpt4": "B."}])
    (instance,) = load_dataset(str(path))
    assert (instance.id, instance.instruction, instance.gold_answer,
            instance.perturbed_answer, instance.ability.value) == (
        "q1", "Who?", "A.", "B.", "factual")


def test_rows_without_id_get_a_stable_content_id(tmp_path):
    one = write_jsonl(tmp_path / "a.jsonl", [row(id=None)])
    first = load_dataset(str(one)).instances[0].id
    assert first.startswith("entity-") and first == load_dataset(str(one)).instances[0].id


def test_hf_folder_layout(tmp_path):
    sample = load_dataset("sample")
    for ability in ("factual", "reasoning"):
        subset = [i for i in sample if i.ability.value == ability
                  and i.category != SCORE_INVARIANT]
        write_dataset(subset, tmp_path / ability / "train.parquet")
    loaded = load_dataset(str(tmp_path))
    assert {i.ability.value for i in loaded} == {"factual", "reasoning"}
    assert len(loaded) == 33


def test_hub_id_while_offline_is_a_clear_error():
    with pytest.raises(DatasetError, match="could not fetch the dataset from the Hugging Face"):
        load_dataset("hf:ai4bharat/FBI")


# ----------------------------------------------------------------- bad input


def problems_of(path: Path) -> list[str]:
    result = validate_dataset(str(path))
    return [str(p) for p in result.problems]


def test_validate_lists_every_problem_with_its_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, [
        row(id="1"),
        row(id="2", category="entty"),
        row(id="3", instruction=""),
        row(id="1"),
        row(id="4", instruction=5),
        row(id="5", ability="reasoning"),
        row(id="6", seed="abc"),
    ])
    with open(path, "a", encoding="utf-8") as out:
        out.write('{"id": "7", "category": "entity", "instr')  # truncated line
    problems = problems_of(path)
    assert len(problems) == 7
    assert "line 2: unknown category 'entty'. Did you mean 'entity'?" in problems[0]
    assert "line 3: empty 'instruction'" in problems[1]
    assert "line 4: duplicate id '1' (first at" in problems[2]
    assert "line 5: 'instruction' must be text" in problems[3]
    assert "line 6:" in problems[4] and "belongs to ability 'factual'" in problems[4]
    assert "line 7: 'seed' must be a whole number" in problems[5]
    assert "line 8: not valid JSON" in problems[6] and "truncated" in problems[6]
    assert all(p.startswith(str(path)) for p in problems)
    assert validate_dataset(str(path)).rows_read == 8


def test_missing_columns_are_named_once_per_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("question,og\nq,a\nq2,a2\n", encoding="utf-8")
    assert problems_of(path) == [
        f"{path}: missing column(s) 'category', 'perturbed_answer'. "
        "Fix: add the column(s) 'category', 'perturbed_answer' (or 'perturbed_gpt4'); or, "
        "for a preference set, name its columns prompt, chosen and rejected (or map yours "
        "with --columns prompt=COL,chosen=COL,rejected=COL)"]


def test_csv_problem_names_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("category,instruction,gold_answer,perturbed_answer\n"
                    "entity,q,a,b\n"
                    'entity,"multi\nline",a,b\n'
                    "entity,q,,b\n", encoding="utf-8")
    assert problems_of(path) == [
        f"{path}, line 5: empty 'gold_answer'. Fix: fill in the gold_answer, or remove the row"]


def test_non_utf8_bytes(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(row()).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    (problem,) = problems_of(path)
    assert "line 2: bytes that are not UTF-8" in problem and "re-save the file as UTF-8" in problem


def test_empty_file_and_missing_path(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert "the file is empty" in problems_of(empty)[0]
    assert "no such file or directory" in problems_of(tmp_path / "nope.jsonl")[0]


def test_load_refuses_a_bad_dataset_and_reports_rows_read(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [row(id="1"), row(id="2", category="x")])
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert caught.value.rows_read == 2
    assert "line 2: unknown category 'x'" in str(caught.value)


def test_unreadable_parquet(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 not really")
    assert "not a readable Parquet file" in problems_of(path)[0]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1e"])
def test_line_separators_inside_texts_survive_a_round_trip(tmp_path, separator):
    """A CSV answer holding U+2028 (or another character str.splitlines breaks on)
    converts to JSONL and reads back as one record, the text intact."""
    from fbi import load_dataset, write_dataset

    instance = load_dataset("sample").instances[0]
    odd = instance.model_copy(update={"perturbed_answer": f"one{separator}two"})
    for name in ("x.jsonl", "x.csv"):
        write_dataset([odd], tmp_path / name)
        back = load_dataset(str(tmp_path / name)).instances
        assert [i.perturbed_answer for i in back] == [f"one{separator}two"], name
    raw = tmp_path / "raw.jsonl"  # written by another tool, not escaped
    raw.write_text(json.dumps(odd.to_row(), ensure_ascii=False) + "\n", encoding="utf-8")
    assert load_dataset(str(raw)).instances[0].perturbed_answer == f"one{separator}two"


def test_a_header_only_csv_or_an_empty_parquet_is_refused(tmp_path):
    from fbi import DatasetError, load_dataset, write_dataset

    header = tmp_path / "h.csv"
    header.write_text("category,instruction,gold_answer,perturbed_answer\n")
    empty = tmp_path / "e.parquet"
    write_dataset([], empty)
    for path in (header, empty):
        with pytest.raises(DatasetError, match="holds no rows"):
            load_dataset(str(path))


@pytest.fixture
def judgebench():
    """The contributing page's layout example, registered for one test and taken out."""
    from conftest import load_example

    from fbi.datasets import LAYOUTS

    module = load_example("judgebench_layout")
    yield module
    LAYOUTS.remove(module.JudgeBench.name)


def test_a_new_dataset_layout_is_one_file(tmp_path, judgebench):
    """Issue 52: JudgeBench's rows read through the example layout — the correct response
    plays gold whichever slot it was in, the source is the subset — and a bad label is
    refused with its file and line, like any of fbi's own layouts."""
    from fbi.datasets import layout_of

    rows = [{"pair_id": "p1", "source": "mmlu-pro-math", "question": "2+2?",
             "response_model": "gpt-4o", "response_A": "4", "response_B": "5",
             "label": "A>B"},
            {"pair_id": "p2", "source": "livebench-reasoning", "question": "Is 7 prime?",
             "response_model": "gpt-4o", "response_A": "No.", "response_B": "Yes.",
             "label": "B>A"}]
    path = tmp_path / "judgebench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert isinstance(layout_of(rows[0]), judgebench.JudgeBench)
    dataset = load_dataset(str(path))
    by_id = {i.id: i for i in dataset}
    assert (by_id["p1"].gold_answer, by_id["p1"].perturbed_answer) == ("4", "5")
    assert (by_id["p2"].gold_answer, by_id["p2"].perturbed_answer) == ("Yes.", "No.")
    assert by_id["p2"].category == "preference/livebench-reasoning"
    assert by_id["p1"].provenance.gold_model == "gpt-4o"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {**rows[0], "pair_id":
                                                                   "p3", "label": "A=B"}]))
    with pytest.raises(DatasetError, match=r"judgebench.jsonl, line 3: label 'A=B'"):
        load_dataset(str(path))
