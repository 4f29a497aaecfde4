"""A hunt over agents' trajectories (issue 54): the trajectory rules as operators, and the
predicates that say where in a trajectory an edit lies.

**Operators.** Each error category of the trajectory rules (`fbi.perturb`:
``trajectory/wrong-tool``, ``trajectory/ignored-error``, ...) is an operator of the
``trajectory`` family: it edits the gold trajectory (`GoldItem.trajectory`), and the
judge reads the edited one rendered as every agent strategy reads it. A trajectory hunt
uses these alone: an answer's rules would edit the rendering's text, not the agent's
steps; two trajectory edits are not composed (the second would need the first's
trajectory) and are not placed — a suspicion such as "edits at a step with side effects"
is tested with edits drawn again until the step fits (the rules pick their step at
random where they can).

**Predicates** (group ``step``), read from the renderings the judge saw
(`fbi.trajectories.rendered_steps`): where the changed step lies (the first, middle or
last third of the trajectory, the final answer), what it is (a tool call, a tool's
result, an error result, a call made before with the same arguments), what it touches (a
tool with side effects, a read-only one, ``tool:NAME`` for each tool the trajectories
define: `Toolbox`, made per hunt) and whether the task requires a confirmation. A user's
predicate of group ``step`` joins them ([`predicate`][fbi.hunt.predicate]).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from fbi.hunt._operators import TRAJECTORY_FAMILY, hunt_rule
from fbi.hunt._predicates import PREDICATES, EditView, Predicate
from fbi.perturb import perturb_trajectory, trajectory_categories
from fbi.perturb.rules import Declined, RuleResult
from fbi.records import GoldItem
from fbi.taxonomy import TRAJECTORY_PREFIX
from fbi.trajectories import render

#: The predicates' group.
STEP = "step"  # (the group a user names in @predicate(..., group="step"))


def _operator(category: str) -> Callable[[GoldItem, random.Random], RuleResult]:
    def edit(item: GoldItem, rng: random.Random) -> RuleResult:
        if item.trajectory is None:
            raise Declined("not an agent's trajectory")
        made = perturb_trajectory(category, item.trajectory, rng.randrange(1 << 30))
        return RuleResult(render(made.trajectory), (), f"step {made.step}: {made.summary}")
    edit.__doc__ = f"The {category} rule on the gold trajectory."
    return edit


#: Rules that are not operators. ``goal-drift`` inserts, always right after the last
#: action that changes the world, a step that is at once a side effect and a call made
#: again with another argument: in trajectories of a few steps it fills the end of the
#: trajectory with misses of a judge blind to side effects, so "edits in the last third"
#: covers a final-answer blind spot and a side-effect one together and the hunt names
#: the two as one (seen on the sample: tests/test_hunt_agents.py). A judge's misses of
#: it are measured by `fbi evaluate` and found by the hunt's side-effect predicate.
NOT_OPERATORS = frozenset({f"{TRAJECTORY_PREFIX}goal-drift"})

for _category in trajectory_categories():
    # (not the score-invariant rewrites)
    if _category.startswith(TRAJECTORY_PREFIX) and _category not in NOT_OPERATORS:
        hunt_rule(_category, TRAJECTORY_FAMILY)(_operator(_category))


# ------------------------------------------------------------------ predicates

def _step(name: str, phrase: str, doc: str, test: Callable[[EditView], bool]) -> None:
    PREDICATES[name] = Predicate(name, phrase, STEP, test, doc)


def _third(view: EditView, third: int) -> bool:
    step = view.trajectory_step
    if step is None:
        return False
    number, steps = step
    return min(2, 3 * (number - 1) // max(1, len(steps))) == third


def _changed(view: EditView):
    """The changed step as rendered, or None (a removal at the end: no step to read)."""
    step = view.trajectory_step
    if step is None or step[0] > len(step[1]):
        return None
    return step[1][step[0] - 1]


def _is_final(view: EditView) -> bool:
    step = view.trajectory_step
    changed = _changed(view)
    return changed is not None and step[0] == len(step[1]) and \
        changed.role == "assistant" and not changed.tools


for _third_index, _name in enumerate(("first", "middle", "last")):
    _step(f"step:{_name}_third", f"in the {_name} third of the trajectory",
          f"The changed step lies in the {_name} third of the edited trajectory's steps.",
          lambda v, t=_third_index: _third(v, t))
_step("step:final_answer", "in the final answer",
      "The changed step is the agent's final answer (the last step, text without calls).",
      _is_final)
_step("step:tool_call", "at a tool call",
      "The changed step is an assistant step that calls tools.",
      lambda v: (c := _changed(v)) is not None and c.role == "assistant" and bool(c.tools))
_step("step:tool_result", "at a tool's result",
      "The changed step is what a tool returned.",
      lambda v: (c := _changed(v)) is not None and c.role == "tool")
_step("step:error_result", "at a tool error",
      "The changed step is a tool's result that is an error.",
      lambda v: (c := _changed(v)) is not None and c.role == "tool" and
      "returned an error" in c.body.split("\n", 1)[0])
def _calls(body: str) -> list[str]:
    """A rendered step's calls, each as its tool and arguments (its call id left out)."""
    return re.findall(r"^ {2}calls (.*) \(call [^\n]*\)$", body, re.MULTILINE)


def _repeats(view: EditView) -> bool:
    changed = _changed(view)
    if changed is None or changed.role != "assistant":
        return False
    number, steps = view.trajectory_step
    made = [c for s in steps[:number - 1] for c in _calls(s.body)]
    for call in _calls(changed.body):
        if call in made:
            return True
        made.append(call)  # (two calls of one step alike repeat too)
    return False


_step("step:repeats_a_call", "repeating a call already made",
      "The changed step calls a tool with the same arguments as an earlier call (of an "
      "earlier step, or of the same step).", _repeats)
def _sub_agent(view: EditView) -> bool:
    """The changed step was taken by an agent other than the one that answers (the
    last step's): a sub-agent of a trace."""
    changed, step = _changed(view), view.trajectory_step
    return changed is not None and changed.agent is not None and \
        changed.agent != step[1][-1].agent


_step("step:sub_agent", "at a sub-agent's step",
      "The changed step was taken by a sub-agent (a trace's agent other than the one "
      "that gives the final answer).", _sub_agent)
_step("trajectory:needs_confirmation", "in tasks that require a confirmation",
      "The task requires the agent to confirm with the user before any action that "
      "changes the world.",
      lambda v: "must confirm with the user" in v.question)


@dataclass(frozen=True)
class Toolbox:
    """The tools of a trajectory hunt's items, as their definitions say (not read back
    from the rendering, so any tool name works)."""

    names: tuple[str, ...]
    """Every tool the trajectories define."""
    effectful: dict[str, frozenset[str]]
    """By question (a task with its tools): the tools that change the world."""
    agents: tuple[str, ...] = ()
    """The agents of trajectories with several (traces with sub-agents)."""

    @classmethod
    def of(cls, items: list[GoldItem]) -> Toolbox:
        trajectories = [(i.question, i.trajectory) for i in items if i.trajectory]
        agents = set()
        for _, trajectory in trajectories:
            named = {s.agent for s in trajectory.steps if s.agent}
            agents |= named if len(named) > 1 else set()
        return cls(tuple(sorted({tool.name for _, t in trajectories for tool in t.tools})),
                   {question: frozenset(tool.name for tool in t.tools if tool.side_effects)
                    for question, t in trajectories}, tuple(sorted(agents)))

    def touches(self, view: EditView, effectful: bool) -> bool:
        """Whether the changed step calls (or is the result of) a tool that changes the
        world (``effectful``) or one that changes nothing."""
        changed = _changed(view)
        if changed is None:
            return False
        marked = self.effectful.get(view.question, frozenset())
        return any((tool in marked) == effectful for tool in changed.tools)

    def predicates(self) -> list[Predicate]:
        """The per-hunt predicates: side effects or none, ``agent:NAME`` for each agent
        of a trajectory of several, and ``tool:NAME`` for each tool."""
        found = [
            Predicate("step:side_effects", "at a step with side effects", STEP,
                      lambda v: self.touches(v, True), "The changed step calls, or is the "
                      "result of, a tool that changes the world."),
            Predicate("step:read_only", "at a read-only tool's step", STEP,
                      lambda v: self.touches(v, False), "The changed step calls, or is the "
                      "result of, a tool that changes nothing.")]
        found += [Predicate(f"agent:{name}", f"at a step of the agent {name}", STEP,
                            lambda v, n=name: (c := _changed(v)) is not None and
                            c.agent == n, f"The changed step was taken by the agent {name}.")
                  for name in self.agents]
        return found + [Predicate(f"tool:{name}", f"at a {name} step", STEP,
                                  lambda v, n=name: (c := _changed(v)) is not None and
                                  n in c.tools, f"The changed step calls {name} or is its "
                                  "result.") for name in self.names]
