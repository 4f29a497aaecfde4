"""A trajectory as a judge reads it: plain numbered lines, a tool call as its name and
its JSON arguments, a tool's result as what it returned (issue 54).

Every step is one numbered block, so a step-level judge can name it and fbi can check the
number; a result's text is quoted data — the templates put the whole trajectory inside
the answer's own section, where text that imitates a verdict counts for nothing, as in
any answer (`fbi.judge` reads only the judge's reply).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from fbi.trajectories._model import Step, Trajectory

#: The rendering's version: another rendering asks the judge another prompt.
RENDER_VERSION = "1"


def render_step(number: int, step: Step, agent: bool = False) -> str:
    """One step as numbered lines; ``agent``: with the agent that took it (a trajectory
    of several agents: a sub-agent's steps say so)."""
    head = f"Step {number} · " + (f"agent {step.agent.replace('·', '-')} · "
                                  if agent and step.agent else "")
    if step.role == "tool":
        what = "returned an error" if step.is_error else "returned"
        return f"{head}tool {step.tool or '?'} {what} (call {step.call_id}):\n" \
            f"{_indent(step.text)}"
    lines = [f"{head}{step.role}:" + (f"\n{_indent(step.text)}" if step.text else "")]
    lines += [f"  calls {call.name}({call.arguments_json()}) (call {call.id})"
              for call in step.calls]
    return "\n".join(lines)


def render(trajectory: Trajectory) -> str:
    """The agent's attempt: every step, numbered from 1."""
    agents = len({s.agent for s in trajectory.steps if s.agent}) > 1
    return "\n".join(render_step(n, s, agents) for n, s in enumerate(trajectory.steps, 1))


def task_text(trajectory: Trajectory) -> str:
    """The task and the tools, as the question a judge of the trajectory is given."""
    tools = [f"- {t.name}: {t.description or '(no description)'}"
             + (" [changes the world]" if t.side_effects else "") for t in trajectory.tools
             if t.defined]
    parts = [trajectory.task]
    if tools:
        parts.append("Tools the agent could call:\n" + "\n".join(tools))
    if trajectory.requires_confirmation:
        parts.append("The agent must confirm with the user before any action that "
                     "changes the world.")
    return "\n\n".join(parts)


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in (text or "(empty)").split("\n"))


def into_tool_result(text: str, added: str, choose=lambda steps: steps[-1]) -> str | None:
    """``text`` (a `render` output) with ``added`` as more lines of one of its tool
    results (``choose`` picks it from the tool steps' headers; the last by default) —
    what a tool whose output an attacker controls returns; None without a tool step."""
    headers = list(_HEADER.finditer(text))
    tools = [h for h in headers if h['tool']]
    if not tools:
        return None
    header = choose(tools)
    following = next((h for h in headers if h.start() > header.start()), None)
    end = following.start() if following else len(text)
    at = header.start() + len(text[header.start():end].rstrip("\n"))
    return text[:at] + "\n" + _indent(added) + text[at:]


# ------------------------------------------------------------------ reading a rendering

_HEADER = re.compile(r"^Step (?P<number>\d+) · (?:agent (?P<agent>[^·\n]+) · )?"
                     r"(?:(?P<role>user|assistant):|tool (?P<tool>\S+) returned)",
                     re.MULTILINE)
_CALL = re.compile(r"^  calls ([^\s(]+)\(", re.MULTILINE)


@dataclass(frozen=True)
class RenderedStep:
    """One step of a rendered trajectory, as `render` wrote it."""

    role: str
    """``user``, ``assistant`` or ``tool``."""
    tools: tuple[str, ...]
    """The tools the step calls (assistant) or whose result it is (tool)."""
    body: str
    """The step's lines without its number (two steps compare equal when only their
    numbers differ)."""
    agent: str | None = None
    """The agent that took it, when the rendering names agents (a trajectory of
    several)."""
    number: int = 0
    """Its number as the rendering shows it (a window keeps the trajectory's
    numbers)."""


def rendered_steps(text: str) -> list[RenderedStep]:
    """The steps of a `render` output, in order (none for text `render` did not
    write): what lets the hunt describe a trajectory edit from the texts the judge read
    (`fbi.hunt`), with no copy of the trajectory kept per probe. A step's text is
    indented, so no line of it is taken for a step's header."""
    headers = list(_HEADER.finditer(text))
    if not headers:
        return []
    steps = []
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        block = text[header.start():following.start() if following else len(text)]
        role = header["role"] or "tool"
        tools = (header["tool"],) if header["tool"] else tuple(_CALL.findall(block))
        body = _OMITTED.sub("", block.split(" · ", 1)[1]).rstrip("\n")
        steps.append(RenderedStep(role, tools, body, header["agent"],
                                  int(header["number"])))
    return steps


def changed_step(gold: str, edited: str) -> int | None:
    """The first step of the ``edited`` rendering that differs from the ``gold`` one, by
    the number the rendering shows (a window's numbers are the trajectory's); None when
    neither is a rendering or nothing differs."""
    before, after = rendered_steps(gold), rendered_steps(edited)
    if not after:
        return None
    for a, b in zip(before, after, strict=False):
        if a != b:
            return b.number
    if len(after) > len(before):
        return after[len(before)].number
    return after[-1].number if len(after) < len(before) else None


# ------------------------------------------------------------------ windows

#: The line a window puts where it leaves steps out (not a step's header: no judge
#: reads it as one, and `rendered_steps` skips it).
_OMITTED = re.compile(r"^\[… steps \d+–\d+ left out …\]\n?", re.MULTILINE)


@dataclass(frozen=True)
class Window:
    """The steps a windowed rendering kept: ``first`` to ``last`` of ``total`` (the
    trajectory's numbers)."""

    first: int
    last: int
    total: int

    def __str__(self) -> str:
        return f"steps {self.first}–{self.last} of {self.total}"


def _blocks(text: str) -> list[tuple[int, str]]:
    headers = list(_HEADER.finditer(text))
    return [(int(h["number"]), text[h.start():following.start() if following else
                                    len(text)].rstrip("\n"))
            for h, following in zip(headers, [*headers[1:], None], strict=True)]


def _joined(blocks: list[tuple[int, str]], first: int, last: int) -> str:
    kept = [b for n, b in blocks if first <= n <= last]
    total = blocks[-1][0] if blocks else 0
    lines = ([f"[… steps 1–{first - 1} left out …]"] if first > 1 else []) + kept + \
        ([f"[… steps {last + 1}–{total} left out …]"] if last < total else [])
    return "\n".join(lines)


def _around(blocks: list[tuple[int, str]], changed: int, room: int) -> tuple[int, int]:
    """The stretch of steps kept around ``changed``: it, then its neighbours
    alternately (later first: what followed the change), while they fit in ``room``
    characters."""
    size = {n: len(b) + 1 for n, b in blocks}
    first = last = changed
    used = size.get(changed, 0)
    grew = True
    while grew:
        grew = False
        for candidate in (last + 1, first - 1):
            if candidate in size and not first <= candidate <= last and \
                    used + size[candidate] <= room:
                used += size[candidate]
                first, last = min(first, candidate), max(last, candidate)
                grew = True
    return first, last


def windowed(gold: str, edited: str, budget: int) -> tuple[str, str, Window | None]:
    """Both renderings cut to at most ``budget`` characters each, around the step the
    edit changed: the changed step always kept, then its neighbours alternately (later
    first), every step keeping its number, a line saying which were left out; the same
    stretch of the gold trajectory from the same step (the steps before the change are
    alike). Unchanged, with no window, when both fit."""
    if len(gold) <= budget and len(edited) <= budget:
        return gold, edited, None
    before, after = _blocks(gold), _blocks(edited)
    changed = changed_step(gold, edited) or 1
    # each side: its steps and the two "left out" lines
    room = budget - 2 * len(f"[… steps {len(before) + len(after)}–{len(before)} left out "
                            "…]\n")
    gold_first, gold_last = _around(before, min(changed, len(before)), room)
    first, last = _around(after, min(changed, len(after)), room)
    first = max(first, gold_first)  # one start for both: the steps before it are alike
    return _joined(before, first, gold_last), _joined(after, first, last), \
        Window(first, last, len(after))


@dataclass(frozen=True)
class StepChange:
    """One step of a trajectory's edit, aligned with the gold trajectory's by text."""

    kind: str
    """``equal``, ``replace``, ``delete`` (a gold step left out) or ``insert``."""
    number: int | None
    """Its number in the edited trajectory (None: a removed step)."""
    before: str | None
    """The gold step's text without its number (None: an added step)."""
    after: str | None
    """The edited step's text without its number (None: a removed step)."""


def step_changes(gold: str, edited: str) -> list[StepChange] | None:
    """The edit step by step, aligned by the steps' text (their numbers aside, so a
    step put in or taken out does not make every later step look changed); None when
    the texts are not renderings of trajectories. What the vetting TUI, the viewer and
    report.html show of an agent's candidate."""
    before, after = rendered_steps(gold), rendered_steps(edited)
    if not before or not after:
        return None
    found: list[StepChange] = []
    matcher = difflib.SequenceMatcher(None, [s.body for s in before],
                                      [s.body for s in after], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        paired = min(i2 - i1, j2 - j1) if op in ("equal", "replace") else 0
        found += [StepChange(op, j + 1, before[i1 + j - j1].body, after[j].body)
                  for j in range(j1, j1 + paired)]
        found += [StepChange("delete", None, before[i].body, None)
                  for i in range(i1 + paired, i2)]
        found += [StepChange("insert", j + 1, None, after[j].body)
                  for j in range(j1 + paired, j2)]
    return found
