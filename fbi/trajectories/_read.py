"""Reading trajectories from the layouts agents write (issue 54), each record told by its
shape:

* **fbi's own** (`Trajectory` as JSON: ``task``, ``tools``, ``steps``);
* **OpenAI's chat layout**: ``messages`` with ``tool_calls`` on assistant messages
  (``function.arguments`` a JSON string) and ``tool`` messages naming their
  ``tool_call_id``; ``tools`` as function definitions;
* **Anthropic's Messages layout**: content blocks — ``tool_use`` (``id``, ``name``,
  ``input``) in assistant messages, ``tool_result`` (``tool_use_id``, ``content``,
  ``is_error``) in user messages; ``tools`` with ``input_schema``;
* **AgentRewardBench's trajectories** (web agents in BrowserGym: ``goal`` and ``steps``
  of actions; `fbi.trajectories._browsergym`);
* **τ-bench's results** (Yao et al. 2024, sierra-research/tau-bench, ``EnvRunResult``):
  ``task_id``, ``reward``, ``info.task.instruction`` and ``traj``, its messages in
  OpenAI's layout. Only a run with reward 1 did the task; fbi reads every record and
  keeps ``reward`` in ``domain``'s place as ``tau-bench`` (gold trajectories are the
  reward-1 ones: `gold_only`).

A file of spans — OTLP JSON, OpenInference's span records — is one trajectory per
trace (`fbi.trajectories._traces`). Tool definitions may be MCP's (``inputSchema``,
``annotations``); side effects and tools that ask the user are learnt as
`fbi.trajectories._effects` says.

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
from fbi.trajectories._browsergym import browsergym_trajectory, is_browsergym_record
from fbi.trajectories._effects import (
    TAU_BENCH_WRITE_TOOLS,
    inferred_asks_user,
    inferred_effects,
    mcp_effects,
)
from fbi.trajectories._model import Step, Tool, ToolCall, Trajectory, TrajectoryError

#: The deepest nesting a trajectory file may have: a list of records, each with messages
#: holding content blocks holding tool results, and the arguments' own objects.
MAX_TRAJECTORY_DEPTH = 64


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory of a ``.jsonl`` file (one a line), a ``.json`` file (a list or one
    trajectory), or a folder of them (every ``.json`` and ``.jsonl`` file beneath it, in
    name order, as AgentRewardBench publishes one file a trajectory; links are not
    followed). The JSON is read exactly (`fbi.exact_json`: no NaN or infinity, no lone
    surrogate, no integer past 64 bits, nesting bounded) and every field's type is checked
    before it is used. Ids are unique across a folder."""
    path = Path(path)
    if not path.is_dir() or path.is_symlink():
        return _read_file(path)
    files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl")
                   and p.is_file() and not p.is_symlink())
    if not files:
        raise InputError(f"{path}: a folder without a .json or .jsonl file. Fix: give a "
                         "file of trajectories or a folder holding them")
    found, where = [], {}
    for file in files:
        for trajectory in _read_file(file):
            if trajectory.id in where:
                raise InputError(f"{file}: the id {trajectory.id!r} is used in "
                                 f"{where[trajectory.id]} too. Fix: give each trajectory "
                                 "its own id")
            where[trajectory.id] = file
            found.append(trajectory)
    return found


def _read_file(path: Path) -> list[Trajectory]:
    """The trajectories of one file (`read_trajectories`)."""
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
    records = _traces_as_records(path, records)
    found, seen, skipped = [], set(), []
    for where, record in records:
        if _raised(record):
            skipped.append(where)
            continue
        try:
            trajectory = trajectory_of(record, where)
        except TrajectoryError as error:
            raise InputError(f"{where}: {error}") from None
        if trajectory.id in seen:
            raise InputError(f"{where}: the id {trajectory.id!r} is used twice. Fix: give "
                             "each trajectory its own id")
        seen.add(trajectory.id)
        found.append(trajectory)
    if skipped:
        import warnings

        from fbi.errors import FbiWarning

        warnings.warn(f"{path}: {len(skipped)} τ-bench run(s) that raised (an empty traj) "
                      f"left out: {', '.join(skipped[:3])}"
                      + (", …" if len(skipped) > 3 else ""), FbiWarning, stacklevel=2)
    if not found:
        raise InputError(f"{path}: no trajectory. Fix: give one a line")
    return found


def _traces_as_records(path: Path, records: list[tuple[str, Any]]
                       ) -> list[tuple[str, Any]]:
    """A file of spans (OTLP JSON, span records: `fbi.trajectories._traces`) as one
    record in fbi's layout per trace; any other file as it is. A file mixes neither."""
    from fbi.trajectories._traces import is_trace_record, spans_of, trace_records

    shaped = [is_trace_record(record) for _, record in records]
    if not any(shaped):
        return records
    if not all(shaped):
        where = records[shaped.index(False)][0]
        raise InputError(f"{where}: a trajectory among spans. Fix: give a file of "
                         "trajectories or a file of spans (one trace export), not both")
    spans = []
    for where, record in records:
        try:
            spans += spans_of(record, where)
        except TrajectoryError as error:
            raise InputError(f"{where}: {error}") from None
    try:
        made = trace_records(spans, str(path))
    except TrajectoryError as error:
        raise InputError(f"{path}: {error}") from None
    return [(f"{path}, trace {record['id']!r}", record) for record in made]


def _raised(record: Any) -> bool:
    """A τ-bench run that raised: its ``traj`` empty (the run's error is in ``info``)."""
    return isinstance(record, dict) and "traj" in record and record["traj"] in ([], None)


def trajectory_of(record: Any, where: str = "") -> Trajectory:
    """One record in any layout above, as a `Trajectory`."""
    if not isinstance(record, dict):
        raise TrajectoryError(where, None, f"is {_kind(record)}, not a JSON object",
                              "one object a record")
    ident = _ident(record, where)
    try:
        if is_browsergym_record(record):
            return browsergym_trajectory(record, ident, _typed)
        if "steps" in record:
            return _settled(Trajectory.model_validate(record), record)
        if "traj" in record:
            return _tau_bench(record, ident)
        if "messages" in record:
            return _chat(record, ident)
    except ValidationError as error:
        raise TrajectoryError(ident, None, validation_summary(error, limit=1),
                              "correct the record (docs/how-to/agents.md)") from None
    raise TrajectoryError(ident, None, "has neither steps, messages nor traj",
                          "give fbi's layout, OpenAI's or Anthropic's messages, a "
                          "τ-bench result or an AgentRewardBench trajectory")


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
    """The trajectories that did their task: a record whose source gives a reward (a
    τ-bench result, an AgentRewardBench run: ``…:reward=R`` in ``domain``) only with
    reward 1."""
    return [t for t in trajectories if ":reward=" not in t.domain
            or t.domain.endswith(":reward=1")]


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


def _settled(trajectory: Trajectory, record: dict) -> Trajectory:
    """fbi's own layout: a tool whose definition leaves ``side_effects`` out has them
    from MCP's annotations or its name and description, as in every other layout."""
    given = {t.get("name"): t for t in record.get("tools") or () if isinstance(t, dict)}
    tools = []
    for tool in trajectory.tools:
        definition = given.get(tool.name, {})
        if "side_effects" not in definition:
            effects, source = _effects_of(tool.name, tool.description, definition, set(),
                                          tau_bench=False)
            tool = tool.model_copy(update={"side_effects": effects, "known_by": source})
        if "asks_user" not in definition:
            tool = tool.model_copy(update={"asks_user": inferred_asks_user(
                tool.name, tool.description)})
        tools.append(tool)
    return trajectory.model_copy(update={"tools": tuple(tools)})


def _effects_of(name: str, description: str, definition: dict, declared: set[str],
                tau_bench: bool) -> tuple[bool, str]:
    """A tool's side effects and where they were learnt (`fbi.trajectories._effects`)."""
    if declared:  # the record names the tools that change the world: the rest do not
        return name in declared, "declared"
    if isinstance(definition.get("side_effects"), bool):
        return definition["side_effects"], "declared"
    hinted = mcp_effects(definition.get("annotations"))
    if hinted is not None:
        return hinted, "mcp"
    if tau_bench:
        return name in TAU_BENCH_WRITE_TOOLS, "tau-bench"
    inferred = inferred_effects(name, description)
    return (False, "unknown") if inferred is None else (inferred, "inferred")


def _tau_bench(record: dict, ident: str) -> Trajectory:
    info = _typed(record.get("info"), dict, "info", ident, default={})
    task = _typed(info.get("task"), dict, "info.task", ident, default={})
    instruction = _typed(task.get("instruction"), str, "info.task.instruction", ident)
    reward = record.get("reward")
    chat = _chat({"messages": record["traj"], "id": ident}, ident, instruction,
                 tau_bench=True)
    label = "1" if isinstance(reward, int | float) and not isinstance(reward, bool) and \
        abs(reward - 1) < 1e-6 else str(reward)
    # τ-bench's policies ask for the user's explicit "yes" before any action that
    # updates the database (its airline and retail wikis)
    return chat.model_copy(update={"domain": f"tau-bench:reward={label}",
                                   "requires_confirmation": True})


def _chat(record: dict, ident: str, task: str | None = None, tau_bench: bool = False
          ) -> Trajectory:
    messages = _typed(record["messages"], list, "messages", ident, default=[])
    side_effects = {_typed(name, str, "a side_effects entry", ident)
                    for name in _typed(record.get("side_effects"), list, "side_effects",
                                       ident, default=[])}
    tools = [_tool(t, side_effects, ident, tau_bench)
             for t in _typed(record.get("tools"), list, "tools", ident, default=[])]
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
    defined = {t.name for t in tools}
    for name in dict.fromkeys(c.name for s in steps for c in s.calls):
        if name not in defined:  # called, never defined (τ-bench's results)
            effects, source = _effects_of(name, "", {}, side_effects, tau_bench)
            tools.append(Tool(name=name, side_effects=effects, known_by=source,
                              asks_user=inferred_asks_user(name, ""), defined=False))
    return Trajectory(
        id=ident, task=task, tools=tuple(tools), steps=tuple(steps),
        domain=_typed(record.get("domain"), str, "domain", ident, default=""),
        requires_confirmation=_typed(record.get("requires_confirmation"), bool,
                                     "requires_confirmation", ident, default=False))


def _id(value: Any, ident: str, step: int) -> str | None:
    """A call id: text or a whole number."""
    value = _typed(value, (str, int), "a call id", ident, step)
    return None if value is None else str(value)


def _tool(definition: Any, side_effects: set[str], ident: str, tau_bench: bool = False
          ) -> Tool:
    """A tool definition: OpenAI's (``function``), Anthropic's (``input_schema``) or
    MCP's (``inputSchema``, ``annotations``), with fbi's ``side_effects`` and
    ``asks_user`` where given."""
    definition = _typed(definition, dict, "a tool definition", ident, default={})
    function = _typed(definition.get("function", definition), dict, "a tool's function",
                      ident)
    name = _typed(function.get("name"), str, "a tool's name", ident, default="")
    parameters = function.get("parameters") or function.get("input_schema") or \
        function.get("inputSchema")
    description = _typed(function.get("description"), str, f"the description of {name!r}",
                         ident, default="")
    for where in (definition, function):
        _typed(where.get("side_effects"), bool, f"the side_effects of {name!r}", ident)
        _typed(where.get("asks_user"), bool, f"the asks_user of {name!r}", ident)
        _typed(where.get("annotations"), dict, f"the annotations of {name!r}", ident)
    flat = {**function, **{k: v for k, v in definition.items() if k != "function"}}
    effects, source = _effects_of(name, description, flat, side_effects, tau_bench)
    asks = flat.get("asks_user")
    return Tool(name=name, description=description,
                parameters=_typed(parameters, dict, f"the parameters of {name!r}", ident,
                                  default={}),
                side_effects=effects, known_by=source,
                asks_user=asks if isinstance(asks, bool) else
                inferred_asks_user(name, description))


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
