"""Web agents' trajectories as AgentRewardBench publishes them (Lù et al. 2025,
McGill-NLP/agent-reward-bench: 1,302 BrowserGym trajectories with experts' labels), read
into fbi's `Trajectory` (issue 66).

Chosen over TRAIL because its layout is public in code anyone can read: one JSON object a
trajectory (``scripts/convert_trajectories_to_json.py``: ``Trajectory.to_dict`` with
``steps`` of ``Step.to_dict``) — ``benchmark``, ``agent``, ``model``, ``goal``, ``seed``,
``trajectory_dir``, ``summary_info`` (``cum_reward``: the environment's own success) and
``steps``, each with ``num``, ``reasoning``, ``action``, ``url``, ``last_action_error``,
``axtree`` / ``axtree_pruned`` (the page) and the agent model's prompt. TRAIL's trace
files could not be reached here to check a reader against.

How a step becomes fbi's steps:

* ``reasoning`` is the agent's message; ``action`` is BrowserGym's action — Python calls
  such as ``click('a51')`` or ``fill('145', "blue shoes")``, one a line when several —
  each a tool call, its positional arguments named as BrowserGym's high-level action set
  names them (`PARAMETERS`);
* what the action did is what the agent saw next: the following step's URL, its
  ``last_action_error`` (then the result is an error) and its page, as the one result of
  the step's last call (BrowserGym observes the page once a step);
* ``send_msg_to_user(text)`` and ``report_infeasible(reason)`` are the agent's words to the
  user, an assistant message;
* a step without an action (BrowserGym's last, after the episode ended) adds nothing.

Side effects: BrowserGym's actions that may submit a form or change a site (a click, a
fill, a key press, an upload: `INTERACTIONS`) count as changing the world — the judge of a
web agent must ask whether a change was wanted (AgentRewardBench's "side effect" label) —
and navigation, scrolling and messages as changing nothing; both known by
``"browsergym"``; an action a run added to BrowserGym's set is known by its name, as in
every layout (an ``ask_user`` action is then a confirmation). Web tasks have no user in
the loop, so BrowserGym's own actions hold no confirmation. The record's ``domain`` is
``{benchmark}:reward={cum_reward}`` so `gold_only` keeps the runs the environment judged
successful.
"""

from __future__ import annotations

import ast
from pathlib import PurePath
from typing import Any

from fbi.trajectories._effects import inferred_asks_user, inferred_effects
from fbi.trajectories._model import Step, Tool, ToolCall, Trajectory, TrajectoryError

#: BrowserGym's high-level actions (browsergym.core.action.functions) and the names of
#: their positional parameters, so a call's arguments are a JSON object.
PARAMETERS: dict[str, tuple[str, ...]] = {
    "noop": ("wait_ms",), "send_msg_to_user": ("text",), "report_infeasible": ("reason",),
    "fill": ("bid", "value"), "check": ("bid",), "uncheck": ("bid",),
    "select_option": ("bid", "options"), "click": ("bid", "button", "modifiers"),
    "dblclick": ("bid", "button", "modifiers"), "hover": ("bid",),
    "press": ("bid", "key_comb"), "focus": ("bid",), "clear": ("bid",),
    "drag_and_drop": ("from_bid", "to_bid"), "upload_file": ("bid", "file"),
    "scroll": ("delta_x", "delta_y"), "scroll_at": ("x", "y", "dx", "dy"),
    "mouse_move": ("x", "y"), "mouse_up": ("x", "y", "button"),
    "mouse_down": ("x", "y", "button"), "mouse_click": ("x", "y", "button"),
    "mouse_dblclick": ("x", "y", "button"), "mouse_drag_and_drop": (
        "from_x", "from_y", "to_x", "to_y"), "mouse_upload_file": ("x", "y", "file"),
    "keyboard_down": ("key",), "keyboard_up": ("key",), "keyboard_press": ("key",),
    "keyboard_type": ("text",), "keyboard_insert_text": ("text",), "goto": ("url",),
    "go_back": (), "go_forward": (), "new_tab": (), "tab_close": (),
    "tab_focus": ("index",),
}
#: The actions that may change a site: a click can submit, a fill can be sent.
INTERACTIONS = frozenset({
    "fill", "check", "uncheck", "select_option", "click", "dblclick", "press", "clear",
    "drag_and_drop", "upload_file", "mouse_up", "mouse_down", "mouse_click",
    "mouse_dblclick", "mouse_drag_and_drop", "mouse_upload_file", "keyboard_down",
    "keyboard_up", "keyboard_press", "keyboard_type", "keyboard_insert_text"})
#: The actions that speak to the user: their text is the agent's message.
MESSAGES = frozenset({"send_msg_to_user", "report_infeasible"})


def is_browsergym_record(record: Any) -> bool:
    """An AgentRewardBench trajectory: a ``goal`` and ``steps`` of BrowserGym actions
    (fbi's own layout has a ``task`` and steps with a ``role``)."""
    if not (isinstance(record, dict) and "goal" in record and "task" not in record
            and isinstance(record.get("steps"), list)):
        return False
    return all(isinstance(s, dict) and "role" not in s for s in record["steps"])


def browsergym_trajectory(record: dict, where: str, typed) -> Trajectory:
    """One AgentRewardBench record as a `Trajectory` (the module docstring); ``typed`` is
    the reader's type check (`fbi.trajectories._read._typed`)."""
    ident = _ident(record, where, typed)
    goal = typed(record.get("goal"), str, "goal", ident, default="").strip()
    if not goal:
        raise TrajectoryError(ident, None, "its goal is empty",
                              "give the user's goal as text")
    raw = [typed(s, dict, f"step {n}", ident, default={})
           for n, s in enumerate(record["steps"], 1)]
    steps: list[Step] = []
    for number, step in enumerate(raw):
        action = typed(step.get("action"), str, "the action", ident, number + 1,
                       default="").strip()
        if not action:
            continue
        reasoning = typed(step.get("reasoning"), str, "the reasoning", ident, number + 1,
                          default="").strip()
        calls = _calls(action, f"s{number + 1}", ident, number + 1)
        spoken = [c for c in calls if c.name in MESSAGES]
        acted = tuple(c for c in calls if c.name not in MESSAGES)
        if reasoning or acted:
            steps.append(Step(role="assistant", text=reasoning, calls=acted))
        if acted:
            seen = raw[number + 1] if number + 1 < len(raw) else {}
            steps.append(_observation(acted[-1], seen, ident, number + 2, typed))
        steps += [Step(role="assistant", text=_said(c)) for c in spoken if _said(c)]
    if not steps:
        raise TrajectoryError(ident, None, "no step took an action",
                              "give the steps' actions")
    names = dict.fromkeys(c.name for s in steps for c in s.calls)
    summary = typed(record.get("summary_info"), dict, "summary_info", ident, default={})
    reward = summary.get("cum_reward")
    benchmark = typed(record.get("benchmark"), str, "benchmark", ident, default="web")
    label = "" if reward is None or isinstance(reward, bool) or not isinstance(
        reward, int | float) else f":reward={1 if abs(reward - 1) < 1e-6 else reward}"
    return Trajectory(
        id=ident, task=goal, steps=tuple(steps), domain=f"{benchmark}{label}",
        tools=tuple(_tool(n) for n in names))


def _tool(name: str) -> Tool:
    """BrowserGym's action as a tool; an action a run added to the set (a custom action,
    such as a tool that asks the user) known by its name as in every layout."""
    if name in PARAMETERS:
        return Tool(name=name, description=_described(name),
                    side_effects=name in INTERACTIONS, known_by="browsergym")
    effects = inferred_effects(name, "")
    return Tool(name=name, side_effects=bool(effects),
                known_by="unknown" if effects is None else "inferred",
                asks_user=inferred_asks_user(name, ""), defined=False)


def _described(name: str) -> str:
    """What the judge is told of an action: its BrowserGym signature."""
    if name not in PARAMETERS:
        return ""
    return f"BrowserGym's action {name}({', '.join(PARAMETERS[name])})"


def _ident(record: dict, where: str, typed) -> str:
    """``id``, else the name of the folder BrowserGym ran it in (its task and seed), else
    where it was read."""
    for name in ("id", "trajectory_dir"):
        value = typed(record.get(name), str, name, where, default="")
        if value:
            return PurePath(value).name if name == "trajectory_dir" else value
    return where


def _calls(action: str, prefix: str, ident: str, step: int) -> tuple[ToolCall, ...]:
    """BrowserGym's action text as calls: Python calls of literals, one a statement."""
    try:
        body = ast.parse(action).body
    except SyntaxError:
        body = None
    calls = []
    for n, statement in enumerate(body or (), 1):
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            body = None
            break
        names = PARAMETERS.get(call.func.id, ())
        try:
            arguments = {names[k] if k < len(names) else f"arg{k + 1}":
                         ast.literal_eval(a) for k, a in enumerate(call.args)}
            arguments |= {k.arg: ast.literal_eval(k.value) for k in call.keywords
                          if k.arg}
        except (ValueError, TypeError, SyntaxError):
            body = None
            break
        calls.append(ToolCall(id=f"{prefix}-{n}", name=call.func.id, arguments=arguments))
    if body is None:
        raise TrajectoryError(ident, step, f"the action {action[:60]!r} is not BrowserGym "
                              "calls of literal values", "give the action as BrowserGym "
                              "wrote it, e.g. click('a51')")
    return tuple(calls)


def _observation(call: ToolCall, seen: dict, ident: str, step: int, typed) -> Step:
    """What the agent saw after the call: the next step's URL, error and page."""
    url = typed(seen.get("url"), str, "the url", ident, step, default="")
    error = typed(seen.get("last_action_error"), str, "last_action_error", ident, step,
                  default="").strip()
    page = typed(seen.get("axtree_pruned") or seen.get("axtree"), str, "the page",
                 ident, step, default="").strip()
    text = "\n".join(part for part in (f"URL: {url}" if url else "",
                                       f"Error: {error}" if error else "", page) if part)
    return Step(role="tool", text=text, call_id=call.id, tool=call.name,
                is_error=bool(error))


def _said(call: ToolCall) -> str:
    """A message action's words (an infeasible task said so)."""
    text = next(iter(call.arguments.values()), "")
    text = text if isinstance(text, str) else str(text)
    return f"Reported infeasible: {text}" if call.name == "report_infeasible" else text
