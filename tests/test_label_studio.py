"""Label Studio round trip (issue 53): a run's instances written as Label Studio tasks
(never the judge's verdict), the labelled tasks exported as Label Studio writes its JSON
export, and the export read by `--human` as it is — each choice mapped back to the
answer it names, whichever slot the gold answer was shown in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from fbi.cli import main
from fbi.runs import load_run
from fbi.trust import read_human_labels

FIXTURE = Path(__file__).parent / "fixtures" / "report_run"


def exported(tasks: list[dict], choose) -> list[dict]:
    """Tasks as Label Studio's JSON export holds them once labelled: an id, and per
    annotation its user, result regions and whether it was skipped."""
    out = []
    for n, task in enumerate(tasks, start=1):
        annotations = [{"id": 10 * n + k, "completed_by": who, "was_cancelled": cancelled,
                        "result": [] if choice is None else [{
                            "from_name": "verdict", "to_name": "question", "type": "choices",
                            "value": {"choices": [choice]}}]}
                       for k, (who, choice, cancelled) in enumerate(choose(task["data"]))]
        out.append({"id": n, "data": task["data"], "annotations": annotations,
                    "predictions": []})
    return out


def gold_slot_of(data: dict, instances) -> str:
    """Which slot holds the gold answer, told as a test can tell it: by the texts."""
    (instance,) = [i for i in instances.values() if data["question"].endswith(i.instruction)
                   and {data["answer_a"], data["answer_b"]} == {i.gold_answer,
                                                                i.perturbed_answer}]
    return "A" if data["answer_a"] == instance.gold_answer else "B"


def test_tasks_made_labelled_and_read_back(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    result = CliRunner().invoke(main, ["export", "label-studio", str(run), "--output",
                                       str(tmp_path / "ls")])
    assert result.exit_code == 0, result.output
    tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text())
    config = (tmp_path / "ls" / "label_config.xml").read_text()
    assert '<Choices name="verdict"' in config and "$answer_a" in config
    instances = load_run(run, full=False).instances
    mapping = json.loads((tmp_path / "ls" / "fbi_tasks.json").read_text())
    assert {m["instance_id"] for m in mapping["tasks"].values()} == set(instances)
    judged = (run / "judgments.jsonl").read_text()
    exported_text = (tmp_path / "ls" / "tasks.json").read_text()
    for task in tasks:
        data = task["data"]
        # blind: the texts shown and an opaque token, nothing that names the instance,
        # its category or the gold side (Label Studio's data manager shows every field)
        assert set(data) == {"question", "answer_a", "answer_b", "fbi_task"}
        entry = mapping["tasks"][data["fbi_task"]]
        instance = instances[entry["instance_id"]]
        assert json.dumps(instance.id) not in exported_text  # no id, quoted or not
        assert instance.category not in data["fbi_task"]
        gold_slot = "answer_a" if entry["a"] == "gold" else "answer_b"
        other = "answer_b" if gold_slot == "answer_a" else "answer_a"
        assert (data[gold_slot], data[other]) == (instance.gold_answer,
                                                 instance.perturbed_answer)
        assert data["question"].endswith(instance.instruction)
        assert gold_slot_of(data, instances) == ("A" if entry["a"] == "gold" else "B")
    assert {m["a"] for m in mapping["tasks"].values()} == {"gold", "perturbed"}
    assert '"explanation"' in judged  # (the run has explanations; none reached a task)

    def choose(data):
        gold = gold_slot_of(data, instances)
        return [(1, gold, False),                                   # the gold answer better
                ({"id": 2, "email": "b@example.org"}, "Tie", False),  # a tie
                (3, "A" if gold == "B" else "B", True),             # skipped: no label
                (4, None, False)]                                   # no verdict region
    (tmp_path / "export.json").write_text(json.dumps(exported(tasks, choose)))
    labels, warnings = read_human_labels(tmp_path / "export.json", instances)
    by_person = {(label.annotator, label.verdict) for label in labels}
    assert by_person == {("label-studio:1", "a"), ("label-studio:b@example.org", "tie")}
    assert len(labels) == 2 * len(tasks)
    # two people, two verdicts: not one-sided; the annotation with no verdict is said
    assert warnings == [f"{tmp_path / 'export.json'}: {len(tasks)} Label Studio "
                        "annotation(s) choose no verdict (no A, B or Tie in a 'verdict' "
                        "region); they are left out"]
    # the whole report reads it too
    report = CliRunner().invoke(main, ["report", str(run), "--human",
                                       str(tmp_path / "export.json"), "--output",
                                       str(tmp_path / "r")])
    assert report.exit_code == 0, report.output


def test_a_bad_export_is_one_message_with_its_item(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    CliRunner().invoke(main, ["export", "label-studio", str(run), "--output",
                              str(tmp_path / "ls")])
    tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text())
    bad = exported(tasks, lambda data: [(1, "A", False)])
    bad[2]["annotations"][0]["result"][0]["value"]["choices"] = ["C"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    result = CliRunner().invoke(main, ["report", str(run), "--human",
                                       str(tmp_path / "bad.json"), "--output",
                                       str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "bad.json" in said and "item 3" in said and "one of A, B, Tie" in said
    assert "Traceback" not in result.output
    # tasks of another tool (no answers as fbi writes them) are refused the same way
    for task in bad:
        del task["data"]["answer_b"]
    (tmp_path / "foreign.json").write_text(json.dumps(bad))
    result = CliRunner().invoke(main, ["report", str(run), "--human",
                                       str(tmp_path / "foreign.json"), "--output",
                                       str(tmp_path / "r2")])
    assert result.exit_code == 2 and "fbi export label-studio" in " ".join(
        result.output.split())


def hostile(tmp_path: Path, edit) -> str:
    """An export of this run's tasks, labelled, then changed by ``edit(tasks)``: what
    `fbi report --human` says of it."""
    run = tmp_path / "run"
    if not run.exists():
        shutil.copytree(FIXTURE, run)
        CliRunner().invoke(main, ["export", "label-studio", str(run), "--output",
                                  str(tmp_path / "ls")])
    tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text())
    labelled = exported(tasks, lambda data: [(1, "A", False)])
    edit(labelled)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(labelled))
    result = CliRunner().invoke(main, ["report", str(run), "--human", str(path),
                                       "--output", str(tmp_path / "r")], terminal_width=200)
    return str(result.exit_code) + " " + " ".join(result.output.split())


def test_tasks_of_another_run_are_refused_and_verdicts_follow_the_texts(tmp_path):
    """The same tokens over other texts (another run's export) are refused: only texts
    that are exactly an instance's are read. A verdict is read against the texts the
    task holds — what the person saw — so a task whose answers were swapped before it was
    labelled is read the other way round, and an old export's side marker means
    nothing."""
    def other_texts(tasks):
        tasks[1]["data"]["answer_a"] += " (another run)"

    said = hostile(tmp_path, other_texts)
    assert said.startswith("2 ") and "no instance of these runs" in said, said
    assert "Traceback" not in said
    run = tmp_path / "run"
    instances = load_run(run, full=False).instances
    tasks = json.loads((tmp_path / "ls" / "tasks.json").read_text())
    swapped = json.loads(json.dumps(tasks))
    for task in swapped:
        data = task["data"]
        data["answer_a"], data["answer_b"] = data["answer_b"], data["answer_a"]
    verdicts = []
    for version in (tasks, swapped):
        (tmp_path / "e.json").write_text(json.dumps(exported(version,
                                                             lambda d: [(1, "A", False)])))
        labels, _ = read_human_labels(tmp_path / "e.json", instances)
        verdicts.append({label.instance_id: label.verdict for label in labels})
    assert set(verdicts[0]) == set(verdicts[1]) == set(instances)
    assert all({verdicts[0][i], verdicts[1][i]} == {"a", "b"} for i in instances)

    def old_marker(tasks):  # fields of an older export mean nothing now
        for task in tasks:
            task["data"]["fbi_a"] = "perturbed"
            task["data"]["fbi_instance_id"] = "not-this-one"

    said = hostile(tmp_path, old_marker)
    assert said.startswith("0 "), said
