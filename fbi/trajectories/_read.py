"""Reading trajectories from the layouts agents write (issue 54), each record told by its
shape:

* **fbi's own** (`Trajectory` as JSON: ``task``, ``tools``, ``steps``);
* **OpenAI's chat layout**: ``messages`` with ``tool_calls`` on assistant messages
  (``function.arguments`` a JSON string) and ``tool`` messages naming their
  ``tool_call_id``; ``tools`` as function definitions;
* **Anthropic's Messages layout**: content blocks — ``tool_use`` (``id``, ``name``,
  ``input``) in assistant messages, ``tool_result`` (``tool_use_id``, ``content``,
  ``is_error``) in user messages; ``tools`` with ``input_schema``;
* **τ-bench's results** (Yao et al. 2024, sierra-research/tau-bench, ``EnvRunResult``):
  ``task_id``, ``reward``, ``info.task.instruction`` and ``traj``, its messages in
  OpenAI's layout. Only a run with reward 1 did the task; fbi reads every record and
  keeps ``reward`` in ``domain``'s place as ``tau-bench`` (gold trajectories are the
  reward-1 ones: `gold_only`).

The task is the first user message (τ-bench: the task's instruction); system messages
are left out. Extra fields of the layouts fbi reads: ``id``, ``domain``,
``requires_confirmation`` and ``side_effects`` (the names of tools that change the
world). A record that breaks a rule is one `TrajectoryError`, naming the file, the
record and the step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fbi.errors import InputError, validation_summary
from fbi.trajectories._model import Step, Tool, ToolCall, Trajectory, TrajectoryError


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory of a ``.jsonl`` file (one a line) or a ``.json`` list."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error}). Fix: give a UTF-8 .jsonl or "
                         ".json file of trajectories") from None
    records: list[tuple[str, Any]] = []
    if path.suffix == ".json":
        try:
            loaded = json.loads(text)
        except ValueError as error:
            raise InputError(f"{path}: not JSON ({error}). Fix: give a list of "
                             "trajectories") from None
        records = [(f"{path}, item {n}", r) for n, r in enumerate(
            loaded if isinstance(loaded, list) else [loaded], 1)]
    else:
        for number, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    records.append((f"{path}, line {number}", json.loads(line)))
                except ValueError as error:
                    raise InputError(f"{path}, line {number}: not JSON ({error}). Fix: one "
                                     "trajectory a line") from None
    found, seen = [], set()
    for where, record in records:
        try:
            trajectory = trajectory_of(record, where)
        except TrajectoryError as error:
            raise InputError(f"{where}: {error}") from None
        if trajectory.id in seen:
            raise InputError(f"{where}: the id {trajectory.id!r} is used twice. Fix: give "
                             "each trajectory its own id")
        seen.add(trajectory.id)
        found.append(trajectory)
    if not found:
        raise InputError(f"{path}: no trajectory. Fix: give one a line")
    return found


def trajectory_of(record: Any, where: str = "") -> Trajectory:
    """One record in any layout above, as a `Trajectory`."""
    if not isinstance(record, dict):
        raise TrajectoryError(where, None, "is not a JSON object", "one object a record")
    ident = str(record.get("id") or record.get("task_id") or where)
    try:
        if "steps" in record:
            return Trajectory.model_validate(record)
        if "traj" in record:
            return _tau_bench(record, ident)
        if "messages" in record:
            return _chat(record, ident)
    except ValidationError as error:
        raise TrajectoryError(ident, None, validation_summary(error, limit=1),
                              "correct the record (docs/how-to/agents.md)") from None
    raise TrajectoryError(ident, None, "has neither steps, messages nor traj",
                          "give fbi's layout, OpenAI's or Anthropic's messages, or a "
                          "τ-bench result")


def gold_only(trajectories: list[Trajectory]) -> list[Trajectory]:
    """The trajectories that did their task (a τ-bench record: reward 1)."""
    return [t for t in trajectories if not t.domain.startswith("tau-bench:reward=")
            or t.domain == "tau-bench:reward=1"]


def _tau_bench(record: dict, ident: str) -> Trajectory:
    info = record.get("info") or {}
    task = ((info.get("task") or {}) if isinstance(info, dict) else {}).get("instruction")
    reward = record.get("reward")
    chat = _chat({"messages": record["traj"], "id": ident}, ident, task)
    label = "1" if isinstance(reward, int | float) and abs(reward - 1) < 1e-6 else str(reward)
    return chat.model_copy(update={"domain": f"tau-bench:reward={label}"})


def _chat(record: dict, ident: str, task: str | None = None) -> Trajectory:
    messages = record["messages"]
    if not isinstance(messages, list):
        raise TrajectoryError(ident, None, "messages is not a list", "give a list")
    side_effects = set(record.get("side_effects") or ())
    tools = tuple(_tool(t, side_effects, ident) for t in record.get("tools") or ())
    steps: list[Step] = []

    def here() -> int:
        """The step a message becomes, numbered as the trajectory will be: the user
        message that states the task is not a step."""
        stated = task is None and any(s.role == "user" and s.text for s in steps)
        return len(steps) + 1 - stated

    for number, message in enumerate(messages, 1):
        if not isinstance(message, dict):
            raise TrajectoryError(ident, here(), f"message {number} is not an object",
                                  "each message a JSON object")
        role, content = message.get("role"), message.get("content")
        if role == "system":
            continue
        if isinstance(content, list):  # Anthropic's content blocks
            steps += _blocks(role, content, ident, here())
        elif role == "tool":
            steps.append(Step(role="tool", text=_text(content), tool=message.get("name"),
                              call_id=str(message.get("tool_call_id") or "")))
        elif role in ("user", "assistant"):
            calls = tuple(_openai_call(c, ident, here())
                          for c in message.get("tool_calls") or ())
            steps.append(Step(role=role, text=_text(content), calls=calls))
        else:
            raise TrajectoryError(ident, here(), f"an unknown role {role!r}",
                                  "roles are system, user, assistant and tool")
    if task is None:
        first = next((n for n, s in enumerate(steps) if s.role == "user" and s.text), None)
        if first is None:
            raise TrajectoryError(ident, None, "no user message states the task",
                                  "begin with the user's request")
        task, steps = steps[first].text, steps[:first] + steps[first + 1:]
    names = {c.id: c.name for s in steps for c in s.calls}
    steps = [s.model_copy(update={"tool": s.tool or names.get(s.call_id or "")})
             if s.role == "tool" else s for s in steps]
    return Trajectory(id=ident, task=task, tools=tools, steps=tuple(steps),
                      domain=str(record.get("domain") or ""),
                      requires_confirmation=bool(record.get("requires_confirmation")))


def _tool(definition: Any, side_effects: set[str], ident: str) -> Tool:
    if not isinstance(definition, dict):
        raise TrajectoryError(ident, None, "a tool definition is not an object",
                              "give each tool as an object")
    function = definition.get("function", definition)  # OpenAI's, or Anthropic's flat one
    name = function.get("name") or ""
    return Tool(name=name, description=function.get("description") or "",
                parameters=function.get("parameters") or function.get("input_schema") or {},
                side_effects=name in side_effects)


def _openai_call(call: Any, ident: str, step: int) -> ToolCall:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise TrajectoryError(ident, step, "a tool call without its function",
                              "give function.name and function.arguments")
    return ToolCall(id=str(call.get("id") or ""), name=function.get("name") or "",
                    arguments=_arguments(function.get("arguments"), ident, step))


def _arguments(value: Any, ident: str, step: int) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise TrajectoryError(ident, step, f"the arguments {value[:60]!r} are not JSON",
                                  "write the arguments as a JSON object") from None
    if not isinstance(value, dict):
        raise TrajectoryError(ident, step, "the arguments are not a JSON object",
                              "write the arguments as a JSON object")
    return value


def _blocks(role: Any, blocks: list, ident: str, step: int) -> list[Step]:
    """Anthropic's content blocks: text and tool_use make one message; each tool_result
    is a step of its own."""
    text, calls, results = [], [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append(ToolCall(id=str(block.get("id") or ""), name=block.get("name") or "",
                                  arguments=_arguments(block.get("input", {}), ident, step)))
        elif kind == "tool_result":
            results.append(Step(role="tool", text=_text(block.get("content")),
                                call_id=str(block.get("tool_use_id") or ""),
                                is_error=bool(block.get("is_error"))))
        else:
            raise TrajectoryError(ident, step, f"a content block of type {kind!r}",
                                  "blocks are text, tool_use and tool_result")
    steps = results
    if text or calls:
        if role not in ("user", "assistant"):
            raise TrajectoryError(ident, step, f"an unknown role {role!r}",
                                  "roles are user and assistant")
        steps = [*results, Step(role=role, text="\n".join(text), calls=tuple(calls))]
    return steps


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # a tool_result's blocks
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b)
                         for b in content)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
