"""`fbi hunt --trajectories` (issue 54): a hunt over agents' trajectories edits them with
the trajectory rules and describes each edit by the step it changed — where it lies, what
it is, the tool, whether the tool changes the world. Loopback judges of agents with blind
spots chosen here (tests/planted_judges.trajectory_spots, which finds the changed step by
its own reading of the rendering): several at once are each named once; a judge with only
random misses gets nothing; bad combinations are refused."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from openai_server import ChatServer
from planted_judges import PlantedJudge, trajectory_spots
from test_hunt import JUDGE, env_for, fbi

from fbi.datasets import load_dataset
from fbi.hunt import EditView, Operator
from fbi.hunt._space import EditSpace, predicates_for
from fbi.hunt._trajectory_edits import Toolbox
from fbi.perturb import perturb_trajectory
from fbi.records import GoldItem
from fbi.trajectories import render, sample_trajectories

ROOT = Path(__file__).resolve().parents[1]

ITEMS = [GoldItem.of_trajectory(t) for t in sample_trajectories()]


def hunt_agents(judge, out, tmp_path, *extra: str, budget: str = "1200"):
    with ChatServer(judge) as server:
        done = fbi("hunt", "--judge", JUDGE, "--api-base", server.url, "--trajectories",
                   "sample", "--budget", budget, "--output", str(out), *extra,
                   env=env_for(tmp_path))
    assert done.returncode == 0, done.stderr
    return done, json.loads((out / "hunt.json").read_text())


def named(result: dict, spots: dict) -> dict[str, list[str]]:
    """Each spot → the confirmed findings ≥ 80% of whose examples it explains."""
    found: dict[str, list[str]] = {name: [] for name in spots}
    for finding in result["findings"]:
        examples = finding["examples"]
        for name, spot in spots.items():
            if finding["confirmed"] and examples and sum(
                    spot(e["gold_answer"], e["edited_answer"]) for e in examples) >= \
                    0.8 * len(examples):
                found[name].append(finding["description"])
    return found


@pytest.mark.slow
def test_four_spots_of_one_judge_of_agents_are_each_named_once(tmp_path):
    spots = trajectory_spots(ITEMS)
    planted = {name: spots[name] for name in ("side effects", "tool errors", "final answer",
                                              "repeated calls")}
    judge = PlantedJudge(ITEMS, lambda g, e: any(s(g, e) for s in planted.values()),
                         noise=10)
    _, result = hunt_agents(judge, tmp_path / "h", tmp_path,
                            "--strategy", "agent", "--strategy", "agent_pairwise")
    found = named(result, planted)
    assert all(len(descriptions) == 1 for descriptions in found.values()), found
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert len(confirmed) == 4, [f["description"] for f in confirmed]
    assert found["side effects"] == ["edits at a step with side effects"]
    assert found["tool errors"] == ["edits at a tool error"]
    assert found["final answer"] == ["edits in the final answer"]
    assert found["repeated calls"] == ["edits repeating a call already made"]
    # the queue: each missed edit of a finding once, an agent's instance naming its step
    queue = load_dataset(str(tmp_path / "h" / "queue.jsonl"))
    assert queue and len({i.id for i in queue}) == len(queue)
    assert {i.ability.value for i in queue} == {"agent"}
    assert all(i.provenance.changed_step for i in queue)


@pytest.mark.slow
def test_a_spot_at_one_tool_is_named_by_the_tool(tmp_path):
    spot = trajectory_spots(ITEMS)["tool:search_flights"]
    _, result = hunt_agents(PlantedJudge(ITEMS, spot, noise=10), tmp_path / "h", tmp_path)
    assert named(result, {"tool": spot})["tool"] == ["edits at a search_flights step"], \
        [f["description"] for f in result["findings"] if f["confirmed"]]


@pytest.mark.slow
def test_a_judge_of_agents_with_only_random_misses_gets_nothing(tmp_path):
    _, result = hunt_agents(PlantedJudge(ITEMS, lambda g, e: False, noise=10),
                            tmp_path / "h", tmp_path, "--seed", "3")
    assert not [f for f in result["findings"] if f["confirmed"]]
    assert result["operators"] and all(o.startswith("op:trajectory/")
                                       for o in result["operators"])


@pytest.mark.slow
def test_a_judge_obeying_instructions_in_tool_results_is_found(tmp_path):
    """A judge that takes an instruction to the grader inside a tool's output at its
    word (it reads the words of perturbations/manipulations.yaml's texts, whitespace
    aside) and catches every other error but one in ten: asked to put the instruction
    into a tool result after trajectory rules, the hunt names that, once."""
    import yaml

    texts = [" ".join(t.split()) for t in yaml.safe_load(
        (ROOT / "perturbations" / "manipulations.yaml").read_text(encoding="utf-8"))
        ["kinds"]["tool-result-instruction"]["texts"]]

    def obeys(gold: str, edited: str) -> bool:
        flat = " ".join(edited.split())
        return any(t in flat for t in texts)

    operators = [f"trajectory/{rule}{suffix}" for rule in ("wrong-tool", "ignored-error",
                                                           "misreported-result")
                 for suffix in ("", "+manipulation/tool-result-instruction")]
    _, result = hunt_agents(PlantedJudge(ITEMS, obeys, noise=10), tmp_path / "h", tmp_path,
                            *[a for o in operators for a in ("--operator", o)])
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert [f["predicates"] for f in confirmed] == [
        ["added:manipulation/tool-result-instruction"]], [f["description"] for f in confirmed]
    assert all(obeys("", e["edited_answer"]) for e in confirmed[0]["examples"])


def test_each_predicate_reads_the_step_an_edit_changed():
    """A hand-checked edit: ignored-error turns the booking trajectory's flight search
    result (step 2 of search, pick, confirm, book, answer) into an error."""
    item = next(i for i in ITEMS if i.trajectory.domain == "booking")
    trajectory = item.trajectory
    space = EditSpace(trajectories=True, toolbox=Toolbox.of([item]))
    by_name = {p.name: p for p in predicates_for(space, ["agent"], False)}
    for seed in range(40):
        edit = perturb_trajectory("trajectory/ignored-error", trajectory, seed)
        if edit.step == 2:
            break
    else:
        pytest.fail("no seed puts the error at step 2")
    view = EditView(item.question, item.gold_answer, render(edit.trajectory),
                    render(edit.trajectory), "agent", "trajectory/ignored-error",
                    ("trajectory/ignored-error",))
    steps = len(edit.trajectory.steps)
    holds = {name for name, p in by_name.items() if p.group == "step" and p.test(view)}
    third = ("first", "middle", "last")[min(2, 3 * (2 - 1) // steps)]
    assert holds == {"step:tool_result", "step:error_result", "step:read_only",
                     f"step:{third}_third", "tool:search_flights",
                     "trajectory:needs_confirmation"}
    # a call made again with the same arguments: by a loop, or beside its twin in a step
    loop = perturb_trajectory("trajectory/redundant-loop", trajectory, 0)
    again = EditView(item.question, item.gold_answer, render(loop.trajectory),
                     render(loop.trajectory), "agent", "trajectory/redundant-loop",
                     ("trajectory/redundant-loop",))
    assert by_name["step:repeats_a_call"].test(again)
    assert not by_name["step:repeats_a_call"].test(view)
    # the answer hunt's places and the trajectory hunt's predicates never mix
    assert not any(p.group == "where" for p in by_name.values())
    answers = predicates_for(EditSpace(), ["vanilla"], False)
    assert not any(p.group == "step" for p in answers)


def test_trajectory_operators_are_not_placed_or_composed():
    item = ITEMS[0]
    operator = Operator.parse("trajectory/redundant-loop")
    assert not operator.placeable
    edit = operator.apply(item, 5)
    assert edit.instance.category == "trajectory/redundant-loop"
    assert edit.instance.provenance.changed_step is not None
    composed = Operator(("trajectory/redundant-loop", "trajectory/wrong-tool"))
    with pytest.raises(Exception, match="not composed"):
        composed.apply(item, random.Random(0).randrange(1 << 30))


@pytest.mark.slow
@pytest.mark.parametrize(("args", "said"), [
    (("--trajectories", "sample", "--strategy", "vanilla"), "judges answers"),
    (("--strategy", "agent"), "judges trajectories"),
    (("--trajectories", "sample", "--operator", "number-errors"),
     "not an operator of trajectories"),
    (("--operator", "trajectory/wrong-tool"), "not an operator of answers"),
    (("--trajectories", "sample", "--strategy", "agent_step"), "step-level"),
    (("--trajectories", "sample", "--dataset", "x.jsonl"), "not both"),
    (("--trajectories", "sample", "--perturber", "openai/p"), "leave them out"),
])
def test_a_hunt_that_mixes_answers_and_trajectories_is_refused(tmp_path, args, said):
    done = fbi("hunt", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9", "--output",
               str(tmp_path / "h"), *args, env=env_for(tmp_path))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_an_outcome_reward_model_of_trajectories_is_hunted_too(tmp_path):
    """--judge reward/NAME --trajectories: `reward` by default; the loopback reward model
    (tests/test_reward_models.PoolingServer) gives the gold trajectory +1 and any edit
    −1, except an edit at a tool error, which it rewards as gold — one blind spot."""
    from test_reward_models import PoolingServer

    spot = trajectory_spots(ITEMS)["tool errors"]
    golds = {i.gold_answer for i in ITEMS}

    def reward(content: str) -> list[float]:
        if content in golds:
            return [1.0]
        gold = next((g for g in golds if g.split("\n", 1)[0] == content.split("\n", 1)[0]
                     and spot(g, content)), None)
        return [1.0 if gold is not None else -1.0]

    with PoolingServer(reply=reward) as server:
        done = fbi("hunt", "--judge", "reward/orm", "--api-base", server.url,
                   "--trajectories", "sample", "--budget", "600", "--output",
                   str(tmp_path / "h"), env=env_for(tmp_path))
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "h" / "hunt.json").read_text())
    assert result["strategies"] == ["reward"]
    confirmed = [f["description"] for f in result["findings"] if f["confirmed"]]
    assert confirmed == ["edits at a tool error"], confirmed
