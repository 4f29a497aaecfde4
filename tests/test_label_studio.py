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
    assert {t["data"]["fbi_instance_id"] for t in tasks} == set(instances)
    judged = (run / "judgments.jsonl").read_text()
    for task in tasks:
        data = task["data"]
        instance = instances[data["fbi_instance_id"]]
        gold_slot = "answer_a" if data["fbi_a"] == "gold" else "answer_b"
        other = "answer_b" if gold_slot == "answer_a" else "answer_a"
        assert (data[gold_slot], data[other]) == (instance.gold_answer,
                                                 instance.perturbed_answer)
        assert data["question"].endswith(instance.instruction)
        assert set(data) == {"question", "answer_a", "answer_b", "fbi_instance_id", "fbi_a",
                             "fbi_version"}  # no verdict, score or explanation of the judge
    assert {t["data"]["fbi_a"] for t in tasks} == {"gold", "perturbed"}  # both sides used
    assert '"explanation"' in judged  # (the run has explanations; none reached a task)

    def choose(data):
        gold = "A" if data["fbi_a"] == "gold" else "B"
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
    # tasks of another tool (no fbi_instance_id) are refused the same way
    for task in bad:
        del task["data"]["fbi_instance_id"]
    (tmp_path / "foreign.json").write_text(json.dumps(bad))
    result = CliRunner().invoke(main, ["report", str(run), "--human",
                                       str(tmp_path / "foreign.json"), "--output",
                                       str(tmp_path / "r2")])
    assert result.exit_code == 2 and "fbi export label-studio" in " ".join(
        result.output.split())
