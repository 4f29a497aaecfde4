"""A trajectory: a task, the tools an agent may call, and the messages of its attempt —
what a judge of agents reads (issue 54).

One record for every layout read (`_read`): the task as the user gave it, the tools, and
the steps in order — a user message, an assistant message (its text and the tool calls
it made) or a tool's result (which call it answers, what it returned, whether it was an
error). Checked when made: every result answers a call made before it and not answered
yet, every call id is used once, arguments are a JSON object; a broken trajectory is a
`TrajectoryError` naming the trajectory and the step.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fbi.errors import InputError
from fbi.trajectories._effects import Source

TRAJECTORY_SCHEMA_VERSION = 1


class TrajectoryError(InputError):
    """A trajectory that breaks the rules above: its id, the step, what is wrong."""

    def __init__(self, trajectory: str, step: int | None, problem: str, fix: str):
        where = f"trajectory {trajectory!r}" + (f", step {step}" if step else "")
        super().__init__(f"{where}: {problem}. Fix: {fix}")


class Tool(BaseModel):
    """A tool the agent may call."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """The name calls use."""
    description: str = ""
    """What it does, as its definition says."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Its JSON Schema of arguments, when the layout gives one."""
    side_effects: bool = False
    """It changes the world (a booking, a file written): an irreversible action."""
    asks_user: bool = False
    """It asks the user (a human-in-the-loop tool): its call and result are a
    confirmation when it asks for approval."""
    known_by: Source = "declared"
    """Where ``side_effects`` was learnt (`fbi.trajectories._effects`): an override, the
    record, MCP's annotations, τ-bench's write tools, its name or description, or
    nowhere (``unknown``: counted as none)."""
    defined: bool = True
    """The source defines it; False: only the trajectory's calls show it (τ-bench's
    results carry no definitions), so the judge is not told it was on offer."""


class ToolCall(BaseModel):
    """One call an assistant message makes."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    id: str = Field(min_length=1)
    """The call's id, which its result names."""
    name: str = Field(min_length=1)
    """The tool called."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments, a JSON object."""

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)


class Step(BaseModel):
    """One message of the trajectory."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    role: Literal["user", "assistant", "tool"]
    """Who speaks: the user, the agent, or a tool's result."""
    text: str = ""
    """The message's text (a tool's result: what it returned)."""
    calls: tuple[ToolCall, ...] = ()
    """An assistant message's tool calls."""
    call_id: str | None = None
    """A tool result: the call it answers."""
    tool: str | None = None
    """A tool result: the tool that returned it."""
    is_error: bool = False
    """A tool result: the tool failed."""
    agent: str | None = None
    """The agent that took the step, when the source says (a trace's sub-agents)."""
    started: float | None = None
    """When it began, in seconds since the epoch (a trace's span start)."""
    duration: float | None = None
    """How long it took, in seconds (its span's)."""


class Trajectory(BaseModel):
    """A task and an agent's attempt at it (see the module docstring)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    schema_version: Literal[1] = TRAJECTORY_SCHEMA_VERSION
    """The record's version."""
    id: str = Field(min_length=1)
    """Unique within its file."""
    task: str = Field(min_length=1)
    """What the user asked the agent to do."""
    tools: tuple[Tool, ...] = ()
    """The tools it could call."""
    steps: tuple[Step, ...]
    """The messages, in order (the task's own user message not repeated)."""
    domain: str = ""
    """The kind of task (lookup, calculation, booking, files, …)."""
    requires_confirmation: bool = False
    """The task asks the agent to confirm with the user before an irreversible action."""

    @model_validator(mode="after")
    def _calls_and_results_pair(self) -> Trajectory:
        issued: set[str] = set()
        open_calls: dict[str, str] = {}
        for number, step in enumerate(self.steps, 1):
            for call in step.calls:
                if call.id in issued:
                    raise TrajectoryError(self.id, number, f"the call id {call.id!r} is "
                                          "used twice", "give every tool call its own id")
                issued.add(call.id)
                open_calls[call.id] = call.name
            if step.role == "tool":
                if step.call_id not in open_calls:
                    problem = ("answers a call already answered" if step.call_id in issued
                               else "is a tool result without its call")
                    raise TrajectoryError(self.id, number, f"{problem} "
                                          f"(call id {step.call_id!r})",
                                          "each tool result must answer one earlier call")
                open_calls.pop(step.call_id)
            elif step.calls and step.role != "assistant":
                raise TrajectoryError(self.id, number, f"a {step.role} message makes tool "
                                      "calls", "only the assistant calls tools")
        if not self.steps:
            raise TrajectoryError(self.id, None, "no step", "give the agent's messages")
        return self

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def final_answer(self) -> str:
        """The last assistant message's text: what the agent told the user."""
        last = [s for s in self.steps if s.role == "assistant" and s.text]
        return last[-1].text if last else ""
