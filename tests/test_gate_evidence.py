"""`fbi gate` never passes on silence or on a baseline it cannot trust (issue 63): a
candidate whose replies went unreadable — everywhere, or only where the planted errors
are — fails for want of evidence; a baseline line with a NaN, or a verdict edited away from
its stored reply, is refused with its line; a gate file of the wrong types is one
message. Loopback judges; every count below is worked from the built-in sample (22
categories × 3 planted errors, 66 instances)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from planted_judges import PlantedJudge, _section

from fbi import load_dataset
from fbi.cli import main
from fbi.gate import evidence_rows
from fbi.metrics import InstanceOutcome

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200"}
PLANTED = [i for i in INSTANCES if i.category != "score-invariant"]
GOLDS = {i.gold_answer for i in INSTANCES}


def good_judge(request: dict) -> str:
    return PlantedJudge(INSTANCES, lambda gold, edited: False)(request)


def silent_on(categories: set[str] | None):
    """A judge that catches every error but answers nonsense when the answer it scores
    is a perturbed one (of ``categories``; None: of every category)."""
    perturbed = {i.perturbed_answer for i in INSTANCES
                 if categories is None or i.category in categories}

    def judge(request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        if (_section(prompt, "answer") or "") in perturbed:
            return "I would rather not say."
        return good_judge(request)

    return judge


def run(args: list[str], script=good_judge) -> tuple[int, str]:
    with ChatServer(script=script) as server:
        extra = ["--no-cache"] if args[0] == "evaluate" else []
        result = CliRunner().invoke(main, [*args, "--api-base", server.url, *extra], env=ENV)
    return result.exit_code, " ".join(result.output.split())


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gate") / "baseline"
    code, output = run(["evaluate", "--judge", "openai/judge", "--dataset", "sample",
                        "--output", str(folder)])
    assert code == 0, output
    return folder


def gate(baseline: Path, output: Path, script, *more: str) -> tuple[int, str, dict | None]:
    code, said = run(["gate", "sample", "--judge", "openai/judge", "--baseline",
                      str(baseline), "--output", str(output), *more], script)
    path = output / "gate.json"
    return code, said, json.loads(path.read_text()) if path.exists() else None


@pytest.mark.slow
def test_a_judge_that_no_longer_answers_fails(baseline, tmp_path):
    """Every reply unreadable: nothing is paired, 66 of 66 left out (100% > 10%)."""
    code, said, result = gate(baseline, tmp_path / "g", lambda request: "Hmm.")
    assert code == 1, said
    assert not result["passed"] and "too little evidence" in result["sentence"]
    (evidence,) = result["evidence"]
    assert (evidence["instances"], evidence["candidate_left_out"],
            evidence["baseline_left_out"]) == (66, 66, 0)
    assert "66 of 66" in evidence["reason"] and not evidence["enough"]


def test_unreadable_only_on_perturbed_answers_fails(baseline, tmp_path):
    """Every perturbed answer's verdict unreadable, every gold one read: 66 of 66 left out
    and 66 perturbed-only against 0 gold-only."""
    code, said, result = gate(baseline, tmp_path / "g", silent_on(None))
    assert code == 1, said
    (evidence,) = result["evidence"]
    assert (evidence["perturbed_only"], evidence["gold_only"]) == (66, 0)
    assert not result["passed"]


@pytest.mark.slow
def test_silence_on_two_categories_fails_though_under_the_share(baseline, tmp_path):
    """The perturbed answers of two categories unreadable: 6 of 66 left out (9.1%, under
    the 10% share), all on the perturbed side: P(Bin(6, ½) ≥ 6) = 1/64 = 0.0156 ≤ 0.05 —
    the missing verdicts follow the planted errors, and the gate fails."""
    two = {"entity", "number-errors"}
    code, said, result = gate(baseline, tmp_path / "g", silent_on(two))
    assert code == 1, said
    (evidence,) = result["evidence"]
    assert (evidence["candidate_left_out"], evidence["perturbed_only"],
            evidence["gold_only"]) == (6, 6, 0)
    assert evidence["p_side"] == pytest.approx(1 / 64)
    assert "follows the planted errors" in evidence["reason"]
    # the same silence with a looser level of the side test passes no longer on its
    # own: with --alpha 0.01 the side test says nothing (1/64 > 0.01), and nothing else
    # fails (6 of 66 is under the share; counted as missed, the rows' Holm p stay high)
    code, said, result = gate(baseline, tmp_path / "h", silent_on(two), "--alpha", "0.01")
    assert code == 0, said
    assert result["passed"] and result["evidence"][0]["candidate_left_out"] == 6


def test_the_share_is_an_option(baseline, tmp_path):
    """--max-left-out 0.05: the 6 of 66 (9.1%) of two silent categories are too many."""
    code, said, result = gate(baseline, tmp_path / "g", silent_on({"entity", "number-errors"}),
                              "--max-left-out", "0.05", "--alpha", "0.01")
    assert code == 1 and "more than the 5% allowed" in result["evidence"][0]["reason"], said


def outcome(key: str, category: str, outcome: str) -> InstanceOutcome:
    return InstanceOutcome(instance_id=key, judge="j", strategy="vanilla",
                           paradigm="single", ability="factual", category=category,
                           outcome=outcome)  # type: ignore[arg-type]


class Call:
    def __init__(self, instance_id: str, role: str):
        self.strategy, self.instance_id, self.role = "vanilla", instance_id, role
        self.paradigm, self.status = "single", "unparseable"


def test_left_out_instances_that_could_hide_a_regression_fail_by_hand():
    """Forty instances of one category, all detected by the baseline; the candidate
    misses none it read but gives no verdict on 3 (7.5%, under the share) — one perturbed
    side, one gold side, one both (p_side = P(Bin(2, ½) ≥ 1) = 3/4). Counted as missed,
    the worst case has b = 3, c = 0: p = 1/8, Holm over two rows 1/4: no regression
    hidden. With 12 of 200 left out (6%) the worst case gives p = 2⁻¹² for both rows:
    they could hide a regression, and the gate fails."""
    def case(n: int, lost: int):
        before = [outcome(f"i{k}", "entity", "detected") for k in range(n)]
        after = [outcome(f"i{k}", "entity", "unparseable" if k < lost else "detected")
                 for k in range(n)]
        calls = [Call(f"i{k}", role) for k in range(lost)
                 for role in (("perturbed",), ("gold",), ("gold", "perturbed"))[k % 3]]
        (row,) = evidence_rows(before, after, calls)
        return row

    row = case(40, 3)
    assert (row.candidate_left_out, row.perturbed_only, row.gold_only) == (3, 1, 1)
    assert row.p_side == pytest.approx(3 / 4)
    assert row.enough and row.worst_case == []
    row = case(200, 12)
    assert (row.perturbed_only, row.gold_only) == (4, 4)
    assert not row.enough and row.worst_case == ["entity (0% → 6%)", "overall (0% → 6%)"]
    assert "could hide a regression" in row.reason


def copy_of(baseline: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "base"
    shutil.copytree(baseline, copy)
    return copy


def edit_line(path: Path, match, change) -> int:
    """Change the first line ``match`` accepts; its 1-based number."""
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if match(json.loads(line)):
            lines[number - 1] = change(line)
            path.write_text("\n".join(lines) + "\n")
            return number
    raise AssertionError("no line matched")


def test_a_baseline_nan_is_refused_with_its_line(baseline, tmp_path):
    copy = copy_of(baseline, tmp_path)
    number = edit_line(copy / "judgments.jsonl", lambda r: r["role"] == "perturbed",
                       lambda line: line.replace('"score":1,', '"score":NaN,', 1))
    code, said, result = gate(copy, tmp_path / "g", good_judge)
    assert code == 2 and result is None, said
    assert f"judgments.jsonl, line {number}" in said and "Traceback" not in said


def test_a_baseline_score_edited_away_from_its_reply_is_refused(baseline, tmp_path):
    """A perturbed answer's score raised from 1 to 10 in the record, its stored reply
    still saying 1: the baseline would seem to miss it (and a candidate that misses it
    too would seem no worse)."""
    copy = copy_of(baseline, tmp_path)
    number = edit_line(copy / "judgments.jsonl",
                       lambda r: r["role"] == "perturbed" and r["score"] == 1,
                       lambda line: line.replace('"score":1,', '"score":10,', 1))
    code, said, _ = gate(copy, tmp_path / "g", good_judge)
    assert code == 2, said
    assert f"line {number}" in said and "no longer matches its stored reply" in said
    assert "score 10 (its reply reads 1)" in said


def write_gate_file(path: Path, text: str) -> None:
    path.write_text(text)


@pytest.mark.parametrize(("line", "message"), [
    ("max_regression: [0.1]", "max_regression"),
    ("alpha: null", "alpha"),
    ("alpha: true", "alpha"),
    ("max_left_out: 1.5", "max_left_out"),
    ("human: 12", "human"),
    ("output: " + "x" * 5000, "output"),
    ("api_base: {a: 1}", "api_base"),
])
def test_a_gate_file_of_wrong_types_is_one_message(tmp_path, line, message):
    from fbi.errors import InputError
    from fbi.gate._pytest import read_gate_file

    gate_file = tmp_path / "gate.yaml"
    key = line.split(":")[0]
    fields = {"version": "1", "suite": "sample", "judge": "openai/judge",
              "baseline": "base", "output": "out"}
    fields.pop(key, None)
    write_gate_file(gate_file, "".join(f"{k}: {v}\n" for k, v in fields.items()) + line + "\n")
    with pytest.raises(InputError) as raised:
        read_gate_file(gate_file)
    assert str(raised.value).startswith(f"{gate_file}: {message}")


@pytest.mark.parametrize("version", ["true", "1.0", "'1'", "null"])
def test_a_gate_file_version_is_the_number_one(tmp_path, version):
    from fbi.errors import InputError
    from fbi.gate._pytest import read_gate_file

    gate_file = tmp_path / "gate.yaml"
    write_gate_file(gate_file, f"version: {version}\nsuite: sample\njudge: j\nbaseline: b\n"
                               "output: o\n")
    with pytest.raises(InputError, match="version"):
        read_gate_file(gate_file)


@pytest.mark.slow
def test_the_pytest_plugin_fails_on_silence_too(baseline, tmp_path):
    """`pytest --fbi-gate` with a candidate whose every reply is unreadable: the test
    fails with the gate's reason, never passes."""
    import os
    import subprocess
    import sys

    with ChatServer(script=lambda request: "Hmm.") as server:
        gate_file = tmp_path / "gate.yaml"
        gate_file.write_text(f"version: 1\nsuite: sample\njudge: openai/judge\nbaseline: "
                             f"{baseline}\noutput: silent\napi_base: {server.url}\n")
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--fbi-gate", str(gate_file)], cwd=tmp_path,
                              capture_output=True, text=True, env={**os.environ, **ENV},
                              timeout=600)
    said = " ".join(done.stdout.split())
    assert done.returncode == 1, said
    assert "too little evidence" in said and "66 of 66" in said
