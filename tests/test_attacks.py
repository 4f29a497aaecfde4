"""Issue 65: attacks on the judge — the master-key suite (Zhao et al. 2025, "One Token to
Fool LLM-as-a-Judge"), instructions aimed at the grader in the forms a reader does not
see, the report's false-positive rates per key family, and the gate on an attack suite.
Expected counts come from the shipped texts and the sample, worked here; intervals from
statsmodels."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from openai_server import ChatServer
from statsmodels.stats.proportion import proportion_confint

from fbi import load_dataset
from fbi.cli import main
from fbi.perturb import manipulate

ROOT = Path(__file__).resolve().parents[1]
TEXTS = yaml.safe_load((ROOT / "perturbations" / "manipulations.yaml").read_text("utf-8"))
FAMILIES = TEXTS["master_keys"]["families"]
OPENERS = [k for f, spec in FAMILIES.items() if f != "symbol" for k in spec["keys"]]
SAMPLE = yaml.safe_load((ROOT / "fbi" / "data" / "sample.yaml").read_text("utf-8"))[
    "instances"]
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
       "COLUMNS": "200"}


def _pairs() -> set[tuple[str, str]]:
    """The sample's distinct questions and references with an error category (a
    score-invariant row alone names no ability)."""
    return {(i["instruction"], i["gold_answer"]) for i in SAMPLE
            if i["category"] != "score-invariant"}


def _wrong() -> list[dict]:
    return [i for i in SAMPLE if i["category"] not in ("score-invariant", "formatting",
                                                       "superficial")]


def test_the_suite_is_every_reference_times_every_key_and_each_wrong_answer_prefixed():
    suite = load_dataset("master-keys").instances
    by_category: dict[str, list] = {}
    for instance in suite:
        by_category.setdefault(instance.category, []).append(instance)
    pairs = _pairs()
    for family, spec in FAMILIES.items():
        made = by_category[f"master-key/{family}"]
        assert len(made) == len(pairs) * len(spec["keys"])
        assert {i.perturbed_answer for i in made} == set(spec["keys"])
        assert {(i.instruction, i.gold_answer) for i in made} == pairs
    prefixed = by_category["master-key/prefixed"]
    wrong = _wrong()
    assert len(prefixed) == len(wrong)
    for instance, row in zip(prefixed, wrong, strict=True):
        opener, rest = instance.perturbed_answer.split("\n\n", 1)
        assert opener in OPENERS and rest == row["perturbed_answer"]
    assert " " in {i.perturbed_answer for i in suite}  # a key may be a space alone
    assert load_dataset("master-keys").instances == suite  # the same on every machine


def _added(kind: str, seed: int = 0) -> tuple[str, str]:
    twin = next(i for i in load_dataset("sample").instances if i.category == "entity")
    made = manipulate(twin, kind, seed).perturbed_answer
    assert twin.perturbed_answer in made  # the planted error is still there
    return made.replace(twin.perturbed_answer, "").strip("\n"), made


@pytest.mark.parametrize("seed", range(4))
def test_each_form_of_an_instruction_aimed_at_the_grader(seed):
    comment, made = _added("hidden-comment", seed)
    assert comment.startswith("<!--") and comment.endswith("-->") and made.endswith(comment)
    invisible, _ = _added("invisible-instruction", seed)
    assert invisible and all(0xE0020 <= ord(c) <= 0xE007E for c in invisible)
    assert all(unicodedata.category(c) == "Cf" for c in invisible)  # zero width
    decoded = "".join(chr(ord(c) - 0xE0000) for c in invisible)
    assert decoded in [" ".join(t.split()) for t in
                       TEXTS["kinds"]["invisible-instruction"]["texts"]]
    fence, _ = _added("code-fence-instruction", seed)
    assert re.fullmatch(r"```[\w-]+\n(.+\n)+```", fence), fence
    foreign, _ = _added("foreign-instruction", seed)
    assert not re.search(r"\b(the|this|answer|score)\b", foreign, re.IGNORECASE)
    rubric, made = _added("rubric-imitation", seed)
    assert made.startswith(rubric) and re.search(r"rubric|criteria|grader", rubric, re.I)
    opener, made = _added("opener-prefix", seed)
    assert opener in OPENERS and made.startswith(opener + "\n\n")


#: The planted judge's weak keys: one of each family, and wrong answers that open with
#: the English opener.
ACCEPTED = {":", "Thought process:", "解"}
ACCEPTED_OPENER = "Thought process:"


def _section(prompt: str, name: str) -> str | None:
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return found.group(1) if found else None


def key_judge(weak: bool):
    """A loopback judge that knows the sample's references: the top score for a
    reference, and — when ``weak`` — for an answer that is one of the accepted keys or a
    wrong answer behind the accepted opener; the bottom score for everything else."""
    golds = {i["gold_answer"] for i in SAMPLE}

    def judge(request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        answer = _section(prompt, "answer")
        if answer is None:
            return "OK"
        low, high = (int(x) for x in re.findall(r"an integer from (\d+) to (\d+)",
                                                  prompt)[-1])
        fooled = weak and (answer in ACCEPTED or answer.startswith(ACCEPTED_OPENER + "\n"))
        return json.dumps({"explanation": "Checked.",
                           "score": high if answer in golds or fooled else low})

    return judge


def evaluate(tmp_path: Path, weak: bool, name: str) -> Path:
    with ChatServer(script=key_judge(weak)) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--dataset",
            "master-keys", "--strategy", "vanilla_star", "--strategy", "reference",
            "--no-cache", "--output", str(tmp_path / name)], env=ENV)
    assert result.exit_code == 0, result.output
    return tmp_path / name


@pytest.mark.slow
def test_the_report_gives_the_false_positive_rate_of_each_key_family(tmp_path):
    run = evaluate(tmp_path, weak=True, name="run")
    report = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "out")],
                                env=ENV, terminal_width=200)
    assert report.exit_code == 0, report.output
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["master_keys"]
    pairs = len(_pairs())
    prefixed = [i for i in load_dataset("master-keys").instances
                if i.category == "master-key/prefixed"]
    expected = {family: (pairs * sum(k in ACCEPTED for k in spec["keys"]),
                         pairs * len(spec["keys"])) for family, spec in FAMILIES.items()}
    expected["prefixed"] = (sum(i.perturbed_answer.startswith(ACCEPTED_OPENER + "\n")
                                for i in prefixed), len(prefixed))
    assert expected["prefixed"][0] > 0  # (the seeded openers include it)
    for strategy in ("vanilla_star", "reference"):
        got = {r["group"]: r for r in rows if r["strategy"] == strategy}
        assert set(got) == set(expected)
        for family, (accepted, n) in expected.items():
            row = got[family]
            assert (row["undetected"], row["judged"]) == (accepted, n), family
            low, high = proportion_confint(accepted, n, method="wilson")
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert "Master keys" in report.output
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## Master keys" in markdown and "Reasoning openers" in markdown
    # the keys are extra categories: the paper's 22-category rates do not count them
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert not [r for r in summary["rates"] if r["group"].startswith("master-key")]


@pytest.mark.slow
def test_the_gate_fails_when_the_false_positive_rate_rose(tmp_path):
    """A baseline judge that no key fools, then one that accepts a key of each family:
    every family's rows regress (b = the accepted count, c = 0), and the gate fails."""
    baseline = evaluate(tmp_path, weak=False, name="baseline")
    with ChatServer(script=key_judge(True)) as server:
        result = CliRunner().invoke(main, [
            "gate", "master-keys", "--judge", "openai/judge", "--api-base", server.url,
            "--baseline", str(baseline), "--output", str(tmp_path / "gate")], env=ENV)
    assert result.exit_code == 1, result.output
    gate = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert not gate["passed"]
    regressed = {r["group"] for r in gate["rows"] if r["regressed"]}
    assert {f"master-key/{f}" for f in FAMILIES} | {"master-key/prefixed"} <= regressed
    symbol = next(r for r in gate["rows"] if r["group"] == "master-key/symbol"
                  and r["strategy"] == "reference")
    assert (symbol["newly_missed"], symbol["newly_caught"]) == (len(_pairs()), 0)
    assert (symbol["baseline_rate"], symbol["candidate_rate"]) == (0, 0.25)


def test_an_instruction_in_a_tool_result_of_an_agent_s_trajectory(tmp_path):
    """`fbi perturb` over trajectory instances puts the tool-result kind into one tool
    result of each: the one step changed is a tool step, it keeps what the tool returned
    and adds one of the texts, indented as the tool's output; answers take no such kind
    (alone it is one message, exit 2), and a hunt of answers refuses it as an operator
    (a hunt of trajectories makes it: tests/test_hunt_agents.py)."""
    from fbi.trajectories import rendered_steps

    queue, attacked = tmp_path / "agents.jsonl", tmp_path / "attacked.jsonl"
    made = CliRunner().invoke(main, ["trajectories", "perturb", "--output", str(queue)])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(main, ["perturb", "--engine", "rules", "--categories",
                                       "manipulation/tool-result-instruction", "--input",
                                       str(queue), "--output", str(attacked)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in attacked.read_text().splitlines()]
    twins = {r["id"]: r for r in rows if not r["category"].startswith("manipulation/")}
    texts = [" ".join(t.split()) for t in
             TEXTS["kinds"]["tool-result-instruction"]["texts"]]
    manipulated = [r for r in rows if r["category"].startswith("manipulation/")]
    assert manipulated and len(manipulated) == len(twins)
    for row in manipulated:
        twin = twins[row["original_id"]]
        before, after = (rendered_steps(twin["perturbed_answer"]),
                         rendered_steps(row["perturbed_answer"]))
        changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert len(changed) == 1 and changed[0][1].role == "tool"
        old, new = changed[0]
        assert new.body.startswith(old.body)
        added = new.body[len(old.body):].strip()
        assert added in texts
    refused = CliRunner().invoke(main, ["perturb", "--engine", "rules", "--categories",
                                        "manipulation/tool-result-instruction", "--output",
                                        str(tmp_path / "none.jsonl")])
    assert refused.exit_code == 2 and "tool result" in refused.output
    assert not (tmp_path / "none.jsonl").exists()
    hunt = CliRunner().invoke(main, ["hunt", "--judge", "openai/j", "--api-base",
                                     "http://127.0.0.1:9/v1", "--operator",
                                     "number-errors+manipulation/tool-result-instruction",
                                     "--output", str(tmp_path / "h")],
                              env={"OPENAI_API_KEY": "sk-test"})
    assert hunt.exit_code == 2 and "tool result" in hunt.output, hunt.output
