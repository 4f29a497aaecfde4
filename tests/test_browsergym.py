"""AgentRewardBench's web-agent trajectories (issue 66): records written here in the
layout its public code writes (McGill-NLP/agent-reward-bench,
``scripts/convert_trajectories_to_json.py``: ``Trajectory.to_dict`` and ``Step.to_dict``),
one JSON file a trajectory in its benchmark/model/experiment folders — read, refused,
perturbed and shown by the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fbi.errors import InputError
from fbi.perturb import perturb_trajectory, trajectory_candidates, trajectory_categories
from fbi.perturb.rules import Declined
from fbi.trajectories import gold_only, read_trajectories, render


def arb_step(num: int, action: str | None, reasoning: str | None, url: str,
             page: str = "", error: str | None = None) -> dict:
    """One step as ``Step.to_dict(prune_axtree=True)`` writes it."""
    return {"num": num, "reasoning": reasoning, "action": action,
            "screenshot_path": f"/runs/x/screenshot_step_{num}.png", "url": url,
            "open_pages_urls": [url], "focused_element": None, "last_action_error": error,
            "stats": {"cum_steps": num}, "axtree": f"RootWebArea\n{page}",
            "axtree_obj": {"nodes": []}, "chat_messages": [
                {"role": "system", "content": "You are an agent..."}],
            "bounding_boxes": {}, "extra_element_properties": {},
            "axtree_pruned": page}


def arb_record(task: str, steps: list[dict], reward: float = 1.0) -> dict:
    """One trajectory as ``Trajectory.to_dict`` writes it (its task in the folder name)."""
    return {"benchmark": "webarena", "agent": "GenericAgent-gpt-4o-2024-11-20",
            "model": "gpt-4o-2024-11-20", "valid": True,
            "experiment": "GenericAgent-gpt-4o-2024-11-20_on_webarena",
            "trajectory_dir": f"/home/u/agentlab_results/2025-01-02_exp/"
                              f"2025-01-02_GenericAgent-gpt-4o-2024-11-20_on_{task}_0",
            "goal": "What is the price of the cheapest pair of blue running shoes?\n",
            "seed": 0, "model_args": {"model_name": "gpt-4o-2024-11-20"},
            "flags": {"obs": {"use_ax_tree": True}},
            "summary_info": {"n_steps": len(steps), "cum_reward": reward,
                             "terminated": True},
            "package_version": "browsergym==0.13", "steps": steps}


def shoe_run(task: str = "webarena.177", reward: float = 1.0) -> dict:
    host = "http://shop.example:7770"
    return arb_record(task, [
        arb_step(0, "fill('145', 'blue running shoes')", "I search the store.", host,
                 "[145] searchbox 'Search'"),
        arb_step(1, "click('151')", "I start the search.", host,
                 "[151] button 'Search'"),
        arb_step(2, "scroll(0, 300)", "Results: I look for the prices.",
                 f"{host}/catalogsearch?q=blue+running+shoes",
                 "[301] link 'Aero Blue' $54.00\n[302] link 'Trail Blue' $41.50"),
        arb_step(3, "click('a99')", "I sort the list by price.",
                 f"{host}/catalogsearch?q=blue+running+shoes",
                 "[302] link 'Trail Blue' $41.50\n[303] link 'Road Blue' $38.25"),
        arb_step(4, 'send_msg_to_user("The cheapest pair costs $38.25.")',
                 "The cheapest is Road Blue at $38.25.",
                 f"{host}/catalogsearch?q=blue+running+shoes",
                 "[303] link 'Road Blue' $38.25",
                 error="TimeoutError: element a99 is not visible"),
        arb_step(5, None, None, f"{host}/catalogsearch?q=blue+running+shoes"),
    ], reward)


def write_folder(root: Path, records: dict[str, dict]) -> Path:
    """The published folders: benchmark/model/experiment/{task}.json."""
    for task, record in records.items():
        where = root / "webarena" / record["model"] / record["experiment"]
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{task}.json").write_text(json.dumps(record), encoding="utf-8")
    return root


def test_a_published_trajectory_reads_as_calls_results_and_the_answer(tmp_path):
    [trajectory] = read_trajectories(write_folder(tmp_path, {"webarena.177": shoe_run()}))
    assert trajectory.id == "2025-01-02_GenericAgent-gpt-4o-2024-11-20_on_webarena.177_0"
    assert trajectory.task == "What is the price of the cheapest pair of blue running shoes?"
    assert trajectory.domain == "webarena:reward=1"
    roles = [(s.role, [c.name for c in s.calls]) for s in trajectory.steps]
    # four actions, each with what the agent saw next; the reasoning, then the message
    assert roles == [("assistant", ["fill"]), ("tool", []), ("assistant", ["click"]),
                     ("tool", []), ("assistant", ["scroll"]), ("tool", []),
                     ("assistant", ["click"]), ("tool", []), ("assistant", []),
                     ("assistant", [])]
    fill, scroll = trajectory.steps[0].calls[0], trajectory.steps[4].calls[0]
    assert fill.arguments == {"bid": "145", "value": "blue running shoes"}
    assert scroll.arguments == {"delta_x": 0, "delta_y": 300}
    # the result of step 1's fill is step 2's page; the sort's click failed: the next
    # step's last_action_error
    assert trajectory.steps[1].text == "URL: http://shop.example:7770\n[151] button 'Search'"
    assert trajectory.steps[7].is_error
    assert "Error: TimeoutError: element a99 is not visible" in trajectory.steps[7].text
    assert trajectory.final_answer == "The cheapest pair costs $38.25."
    tools = {t.name: (t.side_effects, t.known_by) for t in trajectory.tools}
    assert tools == {"fill": (True, "browsergym"), "click": (True, "browsergym"),
                     "scroll": (False, "browsergym")}
    shown = render(trajectory)
    assert 'calls fill({"bid": "145", "value": "blue running shoes"})' in shown
    assert "Step 8 · tool click returned an error" in shown


def test_the_environment_s_failures_are_not_gold_and_several_actions_are_calls(tmp_path):
    failed = shoe_run("webarena.178", reward=0.0)
    several = arb_record("webarena.179", [
        arb_step(0, "fill('145', 'socks')\npress('145', 'Enter')", "Search for socks.",
                 "http://shop.example:7770", "[145] searchbox"),
        arb_step(1, 'report_infeasible("The store sells no socks.")', "Nothing found.",
                 "http://shop.example:7770/catalogsearch?q=socks", "No results"),
        arb_step(2, None, None, "http://shop.example:7770/catalogsearch?q=socks")])
    read = read_trajectories(write_folder(tmp_path, {"webarena.178": failed,
                                                     "webarena.179": several}))
    assert [t.domain for t in read] == ["webarena:reward=0.0", "webarena:reward=1"]
    assert [t.id[-14:] for t in gold_only(read)] == ["webarena.179_0"]
    socks = read[1]
    assert [c.arguments for c in socks.steps[0].calls] == [
        {"bid": "145", "value": "socks"}, {"bid": "145", "key_comb": "Enter"}]
    # BrowserGym observes once a step: the page answers the step's last action
    assert socks.steps[1].call_id == socks.steps[0].calls[1].id
    assert socks.final_answer == "Reported infeasible: The store sells no socks."


@pytest.mark.parametrize("action, problem", [
    ("click(bid)", "is not BrowserGym calls of literal values"),
    ("import os", "is not BrowserGym calls of literal values"),
    ("click('12'", "is not BrowserGym calls of literal values"),
])
def test_an_action_that_is_not_browsergym_s_is_one_message(tmp_path, action, problem):
    record = shoe_run()
    record["steps"][2]["action"] = action
    path = tmp_path / "one.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_trajectories(path)
    assert f"{path}, item 1" in str(caught.value) and "step 3" in str(caught.value)
    assert problem in str(caught.value)


def test_a_folder_refuses_an_id_twice_and_follows_no_link(tmp_path):
    root = write_folder(tmp_path / "runs", {"webarena.177": shoe_run()})
    copy = root / "webarena" / "again.json"
    copy.write_text(json.dumps(shoe_run()), encoding="utf-8")
    with pytest.raises(InputError, match=r"is used in .* too"):
        read_trajectories(root)
    copy.unlink()
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(shoe_run("webarena.300")), encoding="utf-8")
    (root / "linked.json").symlink_to(outside)
    assert len(read_trajectories(root)) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"a folder without a \.json or \.jsonl file"):
        read_trajectories(empty)


def test_every_rule_either_plants_its_error_or_says_why_not():
    from fbi.trajectories import trajectory_of

    trajectory = trajectory_of(shoe_run(), "shoes")
    made, declined = trajectory_candidates([trajectory], trajectory_categories(), 0)
    planted = {c.id.split(":", 1)[1] for c in made}
    said = {line.split(" × ")[1].split(":")[0] for line in declined}
    assert planted | said == set(trajectory_categories()) and not planted & said
    for category in ("trajectory/ignored-error", "trajectory/misreported-result",
                     "trajectory/wrong-argument", "trajectory/redundant-loop"):
        assert category in planted
    # no user is in a web task's loop: nothing to confirm with, and the rule says so
    with pytest.raises(Declined, match="no confirmation before the irreversible"):
        perturb_trajectory("trajectory/unconfirmed-action", trajectory, 0)


def test_the_cli_validates_a_published_folder(tmp_path):
    root = write_folder(tmp_path / "runs", {"webarena.177": shoe_run(),
                                            "webarena.178": shoe_run("webarena.178", 0)})
    env = {**os.environ, "COLUMNS": "200", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    shown = subprocess.run([sys.executable, "-m", "fbi", "trajectories", "validate",
                            str(root)], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "2 trajectories" in shown.stdout and "browsergym" in shown.stdout
