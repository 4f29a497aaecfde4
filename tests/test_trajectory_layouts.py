"""Every rule on every layout fbi reads (issue 66): one support agent's runs written in
the world's shapes (`tests/layouts.py`, from each layout's specification), read, and
perturbed by each rule. What each rule can make follows from what the layout records,
worked out by hand below, not from fbi's output."""

from __future__ import annotations

import pytest
from layouts import LAYOUTS, write

from fbi.perturb import trajectory_candidates, trajectory_categories
from fbi.trajectories import changed_step, read_trajectories, render

#: What a layout cannot carry, and so the rules that must decline on it, with the reason
#: the rule gives. τ-bench's results and AgentRewardBench's trajectories define no tools,
#: so no offered tool is left uncalled to cite; BrowserGym observes the page once a step,
#: so of two actions in one step only the last has a result, and no step makes two
#: answered calls to reorder.
CANNOT = {
    "τ-bench results": {"trajectory/phantom-tool": "no offered read-only tool"},
    "AgentRewardBench (BrowserGym)": {
        "trajectory/phantom-tool": "no offered read-only tool",
        "score-invariant/reordered-calls": "no step makes independent calls together"},
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_rule_plants_its_error_on_every_layout_or_says_what_it_lacks(tmp_path,
                                                                          layout):
    runs = read_trajectories(write(layout, 4, 6, tmp_path / "runs.jsonl"))
    assert len(runs) == 4
    # the same agent in every layout: 6 reads (two batches of two, two single), the
    # confirmation, the cancel, the answer
    for run in runs:
        calls = [c.name for s in run.steps for c in s.calls]
        assert calls.count("get_stock") == 6 and calls[-1] == "cancel_pending_order"
        assert run.final_answer.startswith("Order #W")
    made, declined = trajectory_candidates(runs, trajectory_categories(), 0)
    cannot = CANNOT.get(layout, {})
    by_rule = {c: [m for m in made if m.id.split(":", 1)[1] == c]
               for c in trajectory_categories()}
    for category, candidates in by_rule.items():
        if category in cannot:
            reasons = [line for line in declined if f" × {category}:" in line]
            assert not candidates and len(reasons) == 4, category
            assert all(cannot[category] in line for line in reasons), reasons[0]
        else:
            assert len(candidates) == 4, (category, declined)
    for candidate in made:
        gold = next(r for r in runs if candidate.id.startswith(r.id))
        assert render(gold) != candidate.perturbed_answer or \
            candidate.id.split(":", 1)[1].startswith("score-invariant/")
        step = changed_step(render(gold), candidate.perturbed_answer)
        assert step is None or step >= 1
