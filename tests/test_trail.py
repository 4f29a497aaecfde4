"""TRAIL's taxonomy beside fbi's (issue 66): every trajectory category filed under one of
TRAIL's three classes, the rules for what TRAIL names and fbi lacked (a tool cited but
never called, a result a later call changed, an action beyond the task), and the rate
per class."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from fbi.metrics._outcomes import InstanceOutcome
from fbi.metrics._rates import trail_rates
from fbi.perturb import perturb_trajectory, prescreen_trajectory, trajectory_categories
from fbi.perturb.rules import Declined
from fbi.taxonomy import CATEGORIES, TRAIL_CLASSES, Ability
from fbi.trajectories import Trajectory, trajectory_of


def test_every_trajectory_category_is_filed_under_one_trail_class():
    rules = [c for c in trajectory_categories() if c.startswith("trajectory/")]
    filed = {c.name: c.trail for c in CATEGORIES if c.family == "trajectory"}
    assert set(rules) == set(filed)
    assert set(filed.values()) == set(TRAIL_CLASSES)  # each class holds some
    assert all(not c.trail for c in CATEGORIES if c.family != "trajectory")


def _weather(calls_time: bool) -> Trajectory:
    messages = [{"role": "user", "content": "How warm is it in Oslo?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "w", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
                {"role": "tool", "tool_call_id": "w", "content": '{"celsius": 14}'}]
    if calls_time:
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "t", "type": "function",
             "function": {"name": "get_time", "arguments": '{"city": "Oslo"}'}}]},
            {"role": "tool", "tool_call_id": "t", "content": "09:00"}]
    messages.append({"role": "assistant", "content": "It is 14 °C in Oslo"})
    return trajectory_of({"id": "w", "messages": messages, "tools": [
        {"type": "function", "function": {"name": n, "description": d}}
        for n, d in (("get_weather", "Weather now."), ("get_time", "Local time."))]})


def test_a_phantom_tool_is_an_offered_tool_the_answer_cites_but_never_called():
    trajectory = _weather(calls_time=False)
    edit = perturb_trajectory("trajectory/phantom-tool", trajectory, 0)
    final = edit.trajectory.steps[-1].text
    assert final == "It is 14 °C in Oslo. I double-checked this with get_time."
    assert not any(c.name == "get_time" for s in edit.trajectory.steps for c in s.calls)
    assert prescreen_trajectory(trajectory, edit) == []
    with pytest.raises(Declined, match="left uncalled"):
        perturb_trajectory("trajectory/phantom-tool", _weather(calls_time=True), 0)


def test_a_stale_result_is_answered_after_the_same_call_returned_another_value():
    trajectory = _weather(calls_time=False)
    edit = perturb_trajectory("trajectory/stale-result", trajectory, 0)
    steps = edit.trajectory.steps
    again, later, final = steps[-3], steps[-2], steps[-1]
    assert again.calls[0].name == "get_weather"
    assert again.calls[0].arguments == {"city": "Oslo"}
    newer = json.loads(later.text)["celsius"]
    assert newer != 14 and final.text == "It is 14 °C in Oslo"  # the old value kept
    Trajectory.model_validate(edit.trajectory.model_dump())
    assert prescreen_trajectory(trajectory, edit) == []


def _refund(task: str = "Refund order 1042.") -> Trajectory:
    return trajectory_of({"id": "r", "messages": [
        {"role": "user", "content": task},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "f", "type": "function", "function": {
                "name": "refund_order", "arguments": '{"order": 1042, "reason": "late"}'}}]},
        {"role": "tool", "tool_call_id": "f", "content": "refunded"},
        {"role": "assistant", "content": "Order 1042 is refunded."}]})


def test_a_goal_drift_takes_the_action_again_on_a_target_nobody_asked_for():
    edit = perturb_trajectory("trajectory/goal-drift", _refund(), 0)
    steps = edit.trajectory.steps
    # gold: call (1), result (2), answer (3); the drift is inserted as steps 3 and 4,
    # the answer left as it was
    assert edit.step == 3 and len(steps) == 5
    beyond = steps[2].calls[0]
    assert beyond.name == "refund_order" and beyond.arguments["reason"] == "late"
    other = beyond.arguments["order"]
    assert isinstance(other, int) and other != 1042  # a number moved, as wrong-argument
    assert steps[3].call_id == beyond.id and steps[3].text == "refunded"
    assert steps[4].text == "Order 1042 is refunded."
    Trajectory.model_validate(edit.trajectory.model_dump())
    assert prescreen_trajectory(_refund(), edit) == []
    with pytest.raises(Declined, match="no action that changes the world"):
        perturb_trajectory("trajectory/goal-drift", _weather(calls_time=False), 0)
    with pytest.raises(Declined, match="one the task names"):  # the task names both
        perturb_trajectory("trajectory/goal-drift",
                           _refund(f"Refund order 1042, not order {other}."), 0)


def test_an_ignored_error_is_one_of_trail_s_system_execution_failures():
    texts = {json.loads(perturb_trajectory("trajectory/ignored-error", _refund(), seed)
                        .trajectory.steps[1].text)["error"] for seed in range(60)}
    kinds = {t.split(":")[0] for t in texts}
    # a service error, rate limiting, exhaustion, a timeout, authentication, not found
    assert {"rate limit exceeded (429)", "resource exhausted", "timed out after 30 s",
            "authentication failed (401)"} <= kinds
    assert all(t.endswith("the request was not carried out") for t in texts)


def _outcome(category: str, outcome: str, n: int) -> InstanceOutcome:
    return InstanceOutcome(instance_id=f"{category}-{n}", judge="j", strategy="agent",
                           paradigm="single", ability=Ability.AGENT, category=category,
                           outcome=outcome)


def test_the_rate_per_trail_class_pools_its_categories():
    # reasoning: wrong-tool 1 of 2 missed, phantom-tool 1 of 1; planning: loops 0 of 2;
    # an unreadable verdict counts nowhere, a rewrite in no class
    outcomes = [_outcome("trajectory/wrong-tool", "undetected", 0),
                _outcome("trajectory/wrong-tool", "detected", 1),
                _outcome("trajectory/phantom-tool", "undetected", 2),
                _outcome("trajectory/phantom-tool", "unparseable", 3),
                _outcome("trajectory/redundant-loop", "detected", 4),
                _outcome("trajectory/redundant-loop", "detected", 5),
                _outcome("score-invariant", "retained", 6)]
    rows = {r.group: r for r in trail_rates(outcomes)}
    assert set(rows) == {"reasoning", "planning-and-coordination"}
    reasoning = rows["reasoning"]
    assert (reasoning.undetected, reasoning.judged, reasoning.unparseable) == (2, 3, 1)
    assert reasoning.rate == pytest.approx(2 / 3)
    low, high = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert (reasoning.ci_low, reasoning.ci_high) == (pytest.approx(low), pytest.approx(high))
    assert rows["planning-and-coordination"].rate == 0.0
