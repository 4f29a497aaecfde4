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

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fbi.errors import InputError, validation_summary
from fbi.exact_json import JSONRefused, exact_json
from fbi.files import read_bytes
from fbi.trajectories._model import Step, Tool, ToolCall, Trajectory, TrajectoryError

#: The deepest nesting a trajectory file may have: a list of records, each with messages
#: holding content blocks holding tool results, and the arguments' own objects.
MAX_TRAJECTORY_DEPTH = 64


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory of a ``.jsonl`` file (one a line) or a ``.json`` list. The JSON is
    read exactly (`fbi.exact_json`: no NaN or infinity, no lone surrogate, no integer past
    64 bits, nesting bounded) and every field's type is checked before it is used."""
    path = Path(path)
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error}). Fix: give a UTF-8 .jsonl or "
                         ".json file of trajectories") from None
    records: list[tuple[str, Any]] = []
    if path.suffix == ".json":
        try:
            loaded = exact_json(text, MAX_TRAJECTORY_DEPTH)
        except JSONRefused as error:
            where = error.where(text)
            raise InputError(f"{path}{', ' + where if where else ''}: {error.message}. "
                             f"Fix: {error.fix} (a .json file is a list of trajectories)") \
                from None
        records = [(f"{path}, item {n}", r) for n, r in enumerate(
            loaded if isinstance(loaded, list) else [loaded], 1)]
    else:
        for number, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    records.append((f"{path}, line {number}",
                                    exact_json(line, MAX_TRAJECTORY_DEPTH)))
                except JSONRefused as error:
                    raise InputError(f"{path}, line {number}: {error.message}. Fix: "
                                     f"{error.fix} (one trajectory a line)") from None
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
        raise TrajectoryError(where, None, f"is {_kind(record)}, not a JSON object",
                              "one object a record")
    ident = _ident(record, where)
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


def _ident(record: dict, where: str) -> str:
    """The record's id: ``id``, else τ-bench's ``task_id`` (0 is an id) with its
    ``trial`` when it has one, else where it was read."""
    for name in ("id", "task_id"):
        value = record.get(name)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise TrajectoryError(where, None, f"its {name} is {_kind(value)}",
                                  f"give the {name} as text or a whole number")
        trial = record.get("trial")
        if name == "task_id" and trial is not None:
            if isinstance(trial, bool) or not isinstance(trial, int):
                raise TrajectoryError(where, None, f"its trial is {_kind(trial)}",
                                      "give the trial as a whole number")
            return f"{value}/trial-{trial}"
        return str(value)
    return where


def gold_only(trajectories: list[Trajectory]) -> list[Trajectory]:
    """The trajectories that did their task (a τ-bench record: reward 1)."""
    return [t for t in trajectories if not t.domain.startswith("tau-bench:reward=")
            or t.domain == "tau-bench:reward=1"]


def _kind(value: Any) -> str:
    """What a JSON value is, as a message says it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"


def _typed(value: Any, types: type | tuple[type, ...], what: str, ident: str,
           step: int | None = None, default: Any = None) -> Any:
    """``value`` when it is of ``types`` (a boolean is never a number), ``default`` when
    it is null or absent; else one TrajectoryError naming what it is."""
    if value is None:
        return default
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in
                                         (types if isinstance(types, tuple) else (types,))):
        return value
    names = {str: "text", list: "a list", dict: "an object", bool: "true or false",
             int: "a whole number"}
    wanted = " or ".join(names.get(t, t.__name__) for t in
                         (types if isinstance(types, tuple) else (types,)))
    raise TrajectoryError(ident, step, f"{what} is {_kind(value)}, where {wanted} belongs",
                          f"give {what} as {wanted}")


def _tau_bench(record: dict, ident: str) -> Trajectory:
    info = _typed(record.get("info"), dict, "info", ident, default={})
    task = _typed(info.get("task"), dict, "info.task", ident, default={})
    instruction = _typed(task.get("instruction"), str, "info.task.instruction", ident)
    reward = record.get("reward")
    chat = _chat({"messages": record["traj"], "id": ident}, ident, instruction)
    label = "1" if isinstance(reward, int | float) and not isinstance(reward, bool) and \
        abs(reward - 1) < 1e-6 else str(reward)
    return chat.model_copy(update={"domain": f"tau-bench:reward={label}"})


def _chat(record: dict, ident: str, task: str | None = None) -> Trajectory:
    messages = _typed(record["messages"], list, "messages", ident, default=[])
    side_effects = {_typed(name, str, "a side_effects entry", ident)
                    for name in _typed(record.get("side_effects"), list, "side_effects",
                                       ident, default=[])}
    tools = tuple(_tool(t, side_effects, ident)
                  for t in _typed(record.get("tools"), list, "tools", ident, default=[]))
    steps: list[Step] = []

    def here() -> int:
        """The step a message becomes, numbered as the trajectory will be: the user
        message that states the task is not a step."""
        stated = task is None and any(s.role == "user" and s.text for s in steps)
        return len(steps) + 1 - stated

    for number, message in enumerate(messages, 1):
        message = _typed(message, dict, f"message {number}", ident, here(), default={})
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            continue
        if isinstance(content, list):  # Anthropic's content blocks
            steps += _blocks(role, content, ident, here())
        elif role == "tool":
            steps.append(Step(role="tool", text=_text(content, ident, here()),
                              tool=_typed(message.get("name"), str, "the tool's name",
                                          ident, here()),
                              call_id=_id(message.get("tool_call_id"), ident, here()) or ""))
        elif role in ("user", "assistant"):
            calls = tuple(_openai_call(c, ident, here()) for c in _typed(
                message.get("tool_calls"), list, "tool_calls", ident, here(), default=[]))
            steps.append(Step(role=role, text=_text(content, ident, here()), calls=calls))
        else:
            raise TrajectoryError(ident, here(), f"an unknown role {_kind(role)}",
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
    return Trajectory(
        id=ident, task=task, tools=tools, steps=tuple(steps),
        domain=_typed(record.get("domain"), str, "domain", ident, default=""),
        requires_confirmation=_typed(record.get("requires_confirmation"), bool,
                                     "requires_confirmation", ident, default=False))


def _id(value: Any, ident: str, step: int) -> str | None:
    """A call id: text or a whole number."""
    value = _typed(value, (str, int), "a call id", ident, step)
    return None if value is None else str(value)


def _tool(definition: Any, side_effects: set[str], ident: str) -> Tool:
    definition = _typed(definition, dict, "a tool definition", ident, default={})
    function = _typed(definition.get("function", definition), dict, "a tool's function",
                      ident)  # OpenAI's, or Anthropic's flat one
    name = _typed(function.get("name"), str, "a tool's name", ident, default="")
    parameters = function.get("parameters") or function.get("input_schema")
    return Tool(name=name,
                description=_typed(function.get("description"), str,
                                   f"the description of {name!r}", ident, default=""),
                parameters=_typed(parameters, dict, f"the parameters of {name!r}", ident,
                                  default={}),
                side_effects=name in side_effects)


def _openai_call(call: Any, ident: str, step: int) -> ToolCall:
    call = _typed(call, dict, "a tool call", ident, step)
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise TrajectoryError(ident, step, "a tool call without its function",
                              "give function.name and function.arguments")
    return ToolCall(id=_id(call.get("id"), ident, step) or "",
                    name=_typed(function.get("name"), str, "a tool call's name", ident, step,
                                default=""),
                    arguments=_arguments(function.get("arguments"), ident, step))


def _arguments(value: Any, ident: str, step: int) -> dict:
    if isinstance(value, str):  # OpenAI's: JSON in a string, read exactly like the file
        try:
            value = exact_json(value, MAX_TRAJECTORY_DEPTH) if value.strip() else {}
        except JSONRefused as error:
            raise TrajectoryError(ident, step, f"the arguments {value[:60]!r} are not "
                                  f"JSON fbi reads ({error.message})",
                                  "write the arguments as a JSON object") from None
    if not isinstance(value, dict):
        raise TrajectoryError(ident, step, f"the arguments are {_kind(value)}, not a JSON "
                              "object", "write the arguments as a JSON object")
    return value


def _blocks(role: Any, blocks: list, ident: str, step: int) -> list[Step]:
    """Anthropic's content blocks: text and tool_use make one message; each tool_result
    is a step of its own."""
    text, calls, results = [], [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text.append(_typed(block.get("text"), str, "a text block", ident, step,
                               default=""))
        elif kind == "tool_use":
            calls.append(ToolCall(
                id=_id(block.get("id"), ident, step) or "",
                name=_typed(block.get("name"), str, "a tool_use's name", ident, step,
                            default=""),
                arguments=_arguments(block.get("input", {}), ident, step)))
        elif kind == "tool_result":
            results.append(Step(
                role="tool", text=_text(block.get("content"), ident, step),
                call_id=_id(block.get("tool_use_id"), ident, step) or "",
                is_error=_typed(block.get("is_error"), bool, "is_error", ident, step,
                                default=False)))
        else:
            raise TrajectoryError(ident, step, f"a content block of type {_kind(kind)}",
                                  "blocks are text, tool_use and tool_result")
    steps = results
    if text or calls:
        if role not in ("user", "assistant"):
            raise TrajectoryError(ident, step, f"an unknown role {_kind(role)}",
                                  "roles are user and assistant")
        steps = [*results, Step(role=role, text="\n".join(text), calls=tuple(calls))]
    return steps


def _text(content: Any, ident: str, step: int) -> str:
    """A message's or a result's text: a string, or blocks of text (a tool result's);
    another JSON value is shown as its JSON."""
    import json

    if content is None:
        return ""
    if isinstance(content, list):  # a tool_result's blocks
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(_typed(block.get("text"), str, "a block's text", ident, step,
                                    default=""))
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(json.dumps(block, ensure_ascii=False))
        return "\n".join(parts)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
