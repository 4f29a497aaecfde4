"""Rules that plant one error in a trajectory that did its task (issue 54), one rule a
category (``trajectory/KIND``, `fbi.taxonomy`), and the score-invariant rewrites a good
judge must not penalise. Each rule takes the gold trajectory and a seeded
``random.Random`` and returns the edited trajectory with the step it changed (numbered
in the edited trajectory, as `fbi.trajectories.render` numbers it) and what it did, or
raises `Declined` saying why this trajectory offers nothing to change — never a fake.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from fbi.perturb._prescreen import CHANGE_ELSEWHERE, IDENTICAL
from fbi.perturb.rules import Declined
from fbi.records import Instance, Provenance
from fbi.registry import Registry
from fbi.taxonomy import SCORE_INVARIANT, TRAJECTORY_PREFIX, Ability
from fbi.trajectories import (
    RENDER_VERSION,
    Step,
    ToolCall,
    Trajectory,
    changed_step,
    confirmations,
    render,
    task_text,
    windowed,
)

#: The rules' version: another version may plant other edits.
TRAJECTORY_RULES_VERSION = "1"


@dataclass(frozen=True)
class TrajectoryEdit:
    """A rule's edit of a trajectory."""

    trajectory: Trajectory
    """The edited trajectory."""
    step: int
    """The step changed, numbered in the edited trajectory (from 1)."""
    summary: str
    """What was changed, in words."""


TrajectoryRule = Callable[[Trajectory, random.Random], TrajectoryEdit]
#: Every trajectory rule by the kind it makes: a [`Registry`][fbi.registry.Registry]
#: whose ``fbi.trajectory_rules`` entry points are the modules defining them (fbi's own:
#: this one), a plug-in package's the same.
TRAJECTORY_RULES: Registry[TrajectoryRule] = Registry("trajectory rule",
                                                      "fbi.trajectory_rules")


def _rule(kind: str) -> Callable[[TrajectoryRule], TrajectoryRule]:
    return TRAJECTORY_RULES.register(kind)


def perturb_trajectory(category: str, trajectory: Trajectory, seed: int) -> TrajectoryEdit:
    """Plant ``category``'s error (``trajectory/KIND``, or ``score-invariant/KIND`` for a
    rewrite) in ``trajectory``; the seed, category and trajectory decide every choice."""
    kind = category.removeprefix(TRAJECTORY_PREFIX)
    if kind not in TRAJECTORY_RULES:
        raise Declined(f"no trajectory rule for {category!r}; the rules: "
                       f"{', '.join(sorted(TRAJECTORY_RULES))}")
    edit = TRAJECTORY_RULES.get(kind)(trajectory,
                                      random.Random(f"{seed}:{kind}:{trajectory.id}"))
    if edit.trajectory.steps == trajectory.steps:
        raise Declined("the rule found nothing to change")
    return edit


def trajectory_categories() -> list[str]:
    """The categories and rewrites the rules make, as `perturb_trajectory` takes them."""
    return [f"{TRAJECTORY_PREFIX}{k}" if not k.startswith(SCORE_INVARIANT) else k
            for k in TRAJECTORY_RULES.names()]


# ------------------------------------------------------------------ helpers

def _steps(trajectory: Trajectory) -> list[Step]:
    return list(trajectory.steps)


def _with(trajectory: Trajectory, steps: list[Step], step: int, summary: str
          ) -> TrajectoryEdit:
    return TrajectoryEdit(trajectory.model_copy(update={"steps": tuple(steps)}), step, summary)


def _call_steps(steps: list[Step]) -> list[int]:
    """Indexes of the assistant steps that call tools and whose every call has its
    result: a call never answered (a run cut short, BrowserGym's several actions observed
    once) is left as it is."""
    answered = {s.call_id for s in steps if s.role == "tool"}
    return [n for n, s in enumerate(steps)
            if s.calls and all(c.id in answered for c in s.calls)]


def _result_of(steps: list[Step], call_id: str) -> int:
    return next(n for n, s in enumerate(steps) if s.role == "tool" and s.call_id == call_id)


def _final(steps: list[Step]) -> int | None:
    """The index of the final answer: the last assistant step with text and no call."""
    for n in range(len(steps) - 1, -1, -1):
        if steps[n].role == "assistant" and steps[n].text and not steps[n].calls:
            return n
    return None


def _values(steps: list[Step]) -> list[str]:
    """Every number and code a tool returned (``23``, ``12.5``, ``LI100``)."""
    found: list[str] = []
    for step in steps:
        if step.role == "tool":
            for token in re.findall(r"[A-Z]{2,}\d+|\d+(?:\.\d+)?", step.text):
                if token not in found:
                    found.append(token)
    return found


def _in(text: str, token: str) -> list[re.Match]:
    return list(re.finditer(rf"(?<![\w.]){re.escape(token)}(?![\w]|\.\d)", text))


# ------------------------------------------------------------------ the errors

@_rule("wrong-tool")
def wrong_tool(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    names = [t.name for t in trajectory.tools]
    choices = [(n, k) for n in _call_steps(steps) for k, c in enumerate(steps[n].calls)
               if any(other != c.name for other in names)]
    if not choices:
        raise Declined("no other tool to call instead")
    n, k = rng.choice(choices)
    call = steps[n].calls[k]
    other = rng.choice([name for name in names if name != call.name])
    calls = list(steps[n].calls)
    calls[k] = call.model_copy(update={"name": other})
    steps[n] = steps[n].model_copy(update={"calls": tuple(calls)})
    result = _result_of(steps, call.id)
    steps[result] = steps[result].model_copy(update={"tool": other})
    return _with(trajectory, steps, n + 1, f"{call.name} called as {other}")


def _changed(value, rng: random.Random):
    """Another value of the same kind: a number moved, the digits of a code changed."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        delta = max(1, round(abs(value) * rng.uniform(0.2, 0.6)))
        return value + delta if rng.random() < 0.5 or value - delta < 0 else value - delta
    if isinstance(value, str):
        date = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", value)
        if date:
            return f"{date[1]}-{date[2]}-{int(date[3]) % 28 + 1:02d}"
        if re.search(r"\d", value):
            return re.sub(r"\d+", lambda m: str(int(m[0]) + rng.randint(1, 9)), value, count=1)
        if value.isupper() and 2 <= len(value) <= 4:
            return value[::-1] if value[::-1] != value else value + "X"
    return None


@_rule("wrong-argument")
def wrong_argument(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    calls = [(n, k, c) for n in _call_steps(steps) for k, c in enumerate(steps[n].calls)]

    def others(call: ToolCall, key: str) -> list:
        """The values other calls give the same argument (another city, another id)."""
        return [c.arguments[key] for _, _, c in calls if key in c.arguments
                and c.arguments[key] != call.arguments[key]]

    choices = [(n, k, key) for n, k, c in calls for key, value in c.arguments.items()
               if others(c, key) or _changed(value, random.Random(0)) is not None]
    if not choices:
        raise Declined("no argument whose value could be changed by a rule")
    n, k, key = rng.choice(choices)
    call = steps[n].calls[k]
    alternatives = others(call, key)
    new = rng.choice(alternatives) if alternatives else _changed(call.arguments[key], rng)
    edited = list(steps[n].calls)
    edited[k] = call.model_copy(update={"arguments": {**call.arguments, key: new}})
    steps[n] = steps[n].model_copy(update={"calls": tuple(edited)})
    return _with(trajectory, steps, n + 1, f"{call.name}'s {key} "
                 f"{json.dumps(call.arguments[key])} → {json.dumps(new)}")


def _drop_call(steps: list[Step], n: int, k: int) -> list[Step]:
    """Without call k of step n and its result (and step n, when it held nothing else)."""
    call = steps[n].calls[k]
    result = _result_of(steps, call.id)
    kept = [s for i, s in enumerate(steps) if i != result]
    rest = steps[n].calls[:k] + steps[n].calls[k + 1:]
    if rest or steps[n].text:
        kept[n] = steps[n].model_copy(update={"calls": rest})
    else:
        kept.pop(n)
    return kept


@_rule("skipped-step")
def skipped_step(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    calls = _call_steps(steps)
    # any call but a lone last one: the rest of the trajectory builds on it, or the
    # final answer reports what it would have returned
    choices = [(n, k) for n in calls for k in range(len(steps[n].calls))
               if n != calls[-1] or len(steps[n].calls) > 1]
    if not choices:
        raise Declined("a single call: skipping it leaves no attempt")
    n, k = rng.choice(choices)
    call = steps[n].calls[k]
    edited = _drop_call(steps, n, k)
    return _with(trajectory, edited, min(n + 1, len(edited)),
                 f"the {call.name} call ({call.id}) and its result left out")


@_rule("swapped-steps")
def swapped_steps(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    calls = [n for n in _call_steps(steps) if len(steps[n].calls) == 1]
    pairs = [(a, b) for a, b in pairwise(calls)
             if _result_of(steps, steps[a].calls[0].id) < b]
    if not pairs:
        raise Declined("no two dependent calls in sequence")
    a, b = rng.choice(pairs)
    b_result = _result_of(steps, steps[b].calls[0].id)
    moved = [steps[b], steps[b_result]]
    rest = [s for i, s in enumerate(steps) if i not in (b, b_result)]
    edited = rest[:a] + moved + rest[a:]
    return _with(trajectory, edited, a + 1, f"{steps[b].calls[0].name} moved before "
                 f"{steps[a].calls[0].name}, whose result it needs")


@_rule("misreported-result")
def misreported_result(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    final = _final(steps)
    if final is None:
        raise Declined("no final answer")
    text = steps[final].text
    found = [t for t in _values(steps) if _in(text, t) and _changed(
        _number(t), random.Random(0)) is not None]
    if not found:
        raise Declined("the final answer reports no value a tool returned")
    token = rng.choice(found)
    new = str(_changed(_number(token), rng))
    match = rng.choice(_in(text, token))
    edited = text[:match.start()] + new + text[match.end():]
    steps[final] = steps[final].model_copy(update={"text": edited})
    return _with(trajectory, steps, final + 1, f"the reported {token} → {new}")


def _number(token: str):
    try:
        return float(token) if "." in token else int(token)
    except ValueError:
        return token


@_rule("ignored-error")
def ignored_error(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    results = [n for n, s in enumerate(steps) if s.role == "tool" and not s.is_error]
    if not results:
        raise Declined("no tool result")
    n = rng.choice(results)
    failure = rng.choice(_FAILURES)
    steps[n] = steps[n].model_copy(update={
        "is_error": True, "text": json.dumps({"error": f"{failure}: the request was not "
                                                       "carried out"})})
    return _with(trajectory, steps, n + 1, f"{steps[n].tool} failed ({failure}); the agent "
                 "goes on as if it had succeeded")


#: How a call fails: TRAIL's system-execution errors (API issues: a service error, rate
#: limiting, authentication, a resource not found; resource management: resource
#: exhaustion, a timeout).
_FAILURES = ("service unavailable", "rate limit exceeded (429)",
             "resource exhausted: quota used up", "timed out after 30 s",
             "authentication failed (401)", "not found (404)")


@_rule("contradicting-answer")
def contradicting_answer(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    final = _final(steps)
    if final is None:
        raise Declined("no final answer")
    text = steps[final].text
    values = _values(steps)
    shown = [t for t in values if _in(text, t)]
    kinds = {t: bool(re.match(r"[A-Z]", t)) for t in values}
    pairs = [(a, b) for a in shown for b in values if b != a and kinds[a] == kinds[b]
             and not _in(text, b)] + [(a, b) for a in shown for b in shown
                                      if a < b and kinds[a] == kinds[b]]
    if not pairs:
        raise Declined("no two values of the results to confuse in the final answer")
    a, b = rng.choice(pairs)
    swapped = re.sub(rf"(?<![\w.])({re.escape(a)}|{re.escape(b)})(?![\w]|\.\d)",
                     lambda m: b if m[0] == a else a, text)
    steps[final] = steps[final].model_copy(update={"text": swapped})
    return _with(trajectory, steps, final + 1, f"the final answer puts {b} where the "
                 f"results give {a}" + (" and the other way round" if _in(text, b) else ""))


@_rule("unconfirmed-action")
def unconfirmed_action(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    """The user's approval before an irreversible action left out: of the confirmations
    (`fbi.trajectories.confirmations`: an assistant question the user answers, or a call
    of a tool that asks the user) the last before a call of a tool with side effects,
    after any earlier such call."""
    steps = _steps(trajectory)
    effects = {t.name for t in trajectory.tools if t.side_effects}
    if not effects:
        raise Declined("no tool changes the world: none declared (a side_effects list, "
                       "MCP's readOnlyHint/destructiveHint, τ-bench's write tools) or "
                       "named by a verb such as book, cancel, send (--tools FILE declares "
                       "them)")
    asked = confirmations(trajectory)
    acting = [n for n in _call_steps(steps) if any(c.name in effects
                                                   for c in steps[n].calls)]
    if not acting:
        raise Declined("no call of a tool that changes the world "
                       f"({', '.join(sorted(effects))})")
    for previous, n in zip([-1, *acting], acting, strict=False):
        before = [c for c in asked if previous < c.first and c.last < n]
        if not before:
            continue
        chosen = before[-1]
        action = next(c.name for c in steps[n].calls if c.name in effects)
        if chosen.kind == "question":
            edited = steps[:chosen.first] + steps[chosen.last + 1:]
        else:
            asking = steps[chosen.first]
            kept = tuple(c for c in asking.calls if c.id != chosen.call_id)
            edited = [s for k, s in enumerate(steps) if k != chosen.last]
            if kept or asking.text:
                edited[chosen.first] = asking.model_copy(update={"calls": kept})
            else:
                del edited[chosen.first]
        return _with(trajectory, edited, min(chosen.first + 1, len(edited)),
                     f"the user's approval before {action} left out ("
                     + ("the question and the reply" if chosen.kind == "question" else
                        f"the {steps[chosen.first].calls[0].name} call and its result")
                     + ")")
    called = sorted({c.name for n in acting for c in steps[n].calls if c.name in effects})
    raise Declined(f"no confirmation before the irreversible action(s) ({', '.join(called)}"
                   "): an assistant question the user answers, or a call of a tool that "
                   "asks the user")


@_rule("premature-answer")
def premature_answer(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    calls = _call_steps(steps)
    final = _final(steps)
    if len(calls) < 2 or final is None:
        raise Declined("fewer than two calls: nothing to stop short of")
    cut = _result_of(steps, steps[calls[0]].calls[-1].id) + 1
    edited = [*steps[:cut], steps[final]]
    return _with(trajectory, edited, len(edited), f"the final answer given after "
                 f"{steps[calls[0]].calls[0].name}, before the remaining "
                 f"{len(calls) - 1} call(s)")


@_rule("redundant-loop")
def redundant_loop(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    calls = _call_steps(steps)
    if not calls:
        raise Declined("no tool call to repeat")
    n = rng.choice(calls)
    call = steps[n].calls[0]
    result = _result_of(steps, call.id)
    loop: list[Step] = []
    for k in range(1, 4):
        again = call.model_copy(update={"id": f"{call.id}-again{k}"})
        loop += [Step(role="assistant", text="Let me check that again.", calls=(again,)),
                 steps[result].model_copy(update={"call_id": again.id})]
    edited = steps[:result + 1] + loop + steps[result + 1:]
    return _with(trajectory, edited, result + 2, f"{call.name} asked three more times with "
                 "the same arguments")


@_rule("phantom-tool")
def phantom_tool(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    """The final answer says a tool it never called checked the result (TRAIL's
    tool-related hallucination): one the trajectory offered and did not call."""
    steps = _steps(trajectory)
    final = _final(steps)
    if final is None:
        raise Declined("no final answer")
    called = {c.name for s in steps for c in s.calls}
    uncalled = [t.name for t in trajectory.tools if t.defined and t.name not in called
                and not t.side_effects and not t.asks_user]
    if not uncalled:
        raise Declined("no offered read-only tool left uncalled to cite")
    tool = rng.choice(uncalled)
    text = steps[final].text.rstrip()
    steps[final] = steps[final].model_copy(update={
        "text": f"{text}{'' if text.endswith(('.', '!', '?')) else '.'} I double-checked "
                f"this with {tool}."})
    return _with(trajectory, steps, final + 1, f"the final answer says {tool}, never "
                 "called, checked it")


@_rule("stale-result")
def stale_result(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    """The answer reports a value a later call of the same read-only tool changed: the
    call is made again before the answer and returns another value, which the answer
    ignores (TRAIL's context handling failure)."""
    steps = _steps(trajectory)
    final = _final(steps)
    if final is None:
        raise Declined("no final answer")
    reads = {t.name for t in trajectory.tools if not t.side_effects}
    text = steps[final].text
    options = []
    for n, step in enumerate(steps[:final]):
        if step.role != "tool" or step.tool not in reads:
            continue
        for token in _values([step]):
            if _in(text, token) and _changed(_number(token), random.Random(0)) is not None:
                options.append((n, token))
    if not options:
        raise Declined("the final answer reports no value a read-only tool returned")
    n, token = rng.choice(options)
    result = steps[n]
    call = next(c for s in steps for c in s.calls if c.id == result.call_id)
    new = str(_changed(_number(token), rng))
    again = call.model_copy(update={"id": f"{call.id}-later"})
    changed = re.sub(rf"(?<![\w.]){re.escape(token)}(?![\w]|\.\d)", new, result.text)
    later = [Step(role="assistant", text="Let me refresh that before answering.",
                  calls=(again,)),
             result.model_copy(update={"call_id": again.id, "text": changed})]
    edited = steps[:final] + later + steps[final:]
    return _with(trajectory, edited, final + 1, f"{call.name} called again returns {new} "
                 f"where it had {token}; the answer still says {token}")


@_rule("goal-drift")
def goal_drift(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    """The agent goes beyond its task (TRAIL's goal deviation): after its last action
    that changes the world it takes the same action again on a target the task never
    named — one argument changed as `wrong-argument` changes it. The final answer is left
    as it was, so the edit is in one place: the unasked action, which only a judge that
    reads the path sees."""
    steps = _steps(trajectory)
    final = _final(steps)
    effects = {t.name for t in trajectory.tools if t.side_effects}
    acting = [c for n in _call_steps(steps) if final is None or n < final
              for c in steps[n].calls if c.name in effects]
    if not acting:
        raise Declined("no action that changes the world to take again beyond the task")
    call = acting[-1]
    keys = [k for k, v in call.arguments.items() if _changed(v, random.Random(0))
            is not None]
    if not keys:
        raise Declined(f"no argument of {call.name} whose value a rule could change")
    key = rng.choice(keys)
    new = _changed(call.arguments[key], rng)
    if _in(trajectory.task, str(new)):
        raise Declined(f"the other {key}, {new}, is one the task names")
    again = call.model_copy(update={"id": f"{call.id}-beyond",
                                    "arguments": {**call.arguments, key: new}})
    result = _result_of(steps, call.id)
    old = call.arguments[key]
    echoed = steps[result].text.replace(str(old), str(new)) if isinstance(old, str) \
        else steps[result].text
    beyond = [Step(role="assistant", text=f"I will also do this for {new}.", calls=(again,)),
              steps[result].model_copy(update={"call_id": again.id, "text": echoed})]
    edited = steps[:result + 1] + beyond + steps[result + 1:]
    return _with(trajectory, edited, result + 2, f"{call.name} taken again, unasked, with "
                 f"{key} {json.dumps(new, ensure_ascii=False)}")


# ------------------------------------------------------------------ score-invariant

@_rule(f"{SCORE_INVARIANT}/reordered-calls")
def reordered_calls(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    parallel = [n for n in _call_steps(steps) if len(steps[n].calls) >= 2]
    if not parallel:
        raise Declined("no step makes independent calls together")
    n = rng.choice(parallel)
    calls = steps[n].calls[::-1]
    results = [_result_of(steps, c.id) for c in steps[n].calls]
    slots = sorted(results)
    reordered = [steps[_result_of(steps, c.id)] for c in calls]
    for slot, step in zip(slots, reordered, strict=True):
        steps[slot] = step
    steps[n] = steps[n].model_copy(update={"calls": calls})
    return _with(trajectory, steps, n + 1, "independent calls (and their results) in the "
                 "other order")


@_rule(f"{SCORE_INVARIANT}/renamed-ids")
def renamed_ids(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    names: dict[str, str] = {}
    for step in steps:
        for call in step.calls:
            names[call.id] = f"call_{rng.getrandbits(40):010x}"
    if not names:
        raise Declined("no tool call")
    edited = [s.model_copy(update={
        "calls": tuple(c.model_copy(update={"id": names[c.id]}) for c in s.calls),
        "call_id": names.get(s.call_id or "", s.call_id)}) for s in steps]
    first = _call_steps(edited)[0]
    return _with(trajectory, edited, first + 1, "every call id renamed")


@_rule(f"{SCORE_INVARIANT}/extra-read")
def extra_read(trajectory: Trajectory, rng: random.Random) -> TrajectoryEdit:
    steps = _steps(trajectory)
    reads = {t.name for t in trajectory.tools if not t.side_effects}
    found = [c for n in _call_steps(steps) for c in steps[n].calls if c.name in reads]
    if not found:
        raise Declined("no read-only call to repeat harmlessly")
    call = found[0]
    result = steps[_result_of(steps, call.id)]
    again = ToolCall(id=f"{call.id}-check", name=call.name, arguments=call.arguments)
    extra = [Step(role="assistant", text="Let me make sure I have that right.",
                  calls=(again,)), result.model_copy(update={"call_id": again.id})]
    at = _result_of(steps, call.id) + 1
    while at < len(steps) and steps[at].role == "tool":  # after the step's results
        at += 1
    edited = steps[:at] + extra + steps[at:]
    return _with(trajectory, edited, at + 1, f"one harmless extra {call.name} call")


# ------------------------------------------------------------------ candidates

def trajectory_flags(gold: str, edited: str, claimed: int | None) -> list[str]:
    """The pre-screen of a trajectory's candidate, from the two renderings: `IDENTICAL`
    when nothing changed, `CHANGE_ELSEWHERE` when the first step that differs from the
    gold is not the step the rule or the model says it changed (a claim the vetter
    should not take on trust)."""
    if gold == edited:
        return [IDENTICAL]
    return [] if changed_step(gold, edited) == claimed else [CHANGE_ELSEWHERE]


def prescreen_trajectory(gold: Trajectory, edit: TrajectoryEdit) -> list[str]:
    """`trajectory_flags` of a rule's edit."""
    return trajectory_flags(render(gold), render(edit.trajectory), edit.step)


def trajectory_instance(trajectory: Trajectory, category: str, edited: str, claimed: int | None,
                        summary: str, generator: str, seed: int, variant: int = 1,
                        version: str = RENDER_VERSION, window: int | None = None
                        ) -> Instance:
    """A candidate: the task with the tools as the question, the gold and ``edited``
    renderings as the answers, the rationale naming the step ``claimed`` (``step N:
    …``), the step that really differs as ``changed_step``, pre-screened. ``window``: at
    most so many characters of each rendering, cut around the changed step
    (`fbi.trajectories.windowed`: the numbers kept, the rationale saying which steps the
    judge sees)."""
    gold = render(trajectory)
    if window is not None:
        gold, edited, kept = windowed(gold, edited, window)
        summary += f" (the judge sees {kept})" if kept else ""
    return Instance(
        id=f"{trajectory.id}:{category}" + (f":{variant}" if variant > 1 else ""),
        ability=Ability.AGENT,
        category=SCORE_INVARIANT if category.startswith(SCORE_INVARIANT) else category,
        instruction=task_text(trajectory), gold_answer=gold, perturbed_answer=edited,
        rationale=f"step {claimed}: {summary}" if claimed else summary,
        flags=tuple(trajectory_flags(gold, edited, claimed)),
        provenance=Provenance(source="trajectory", original_id=trajectory.id,
                              generator=generator, template_version=version, seed=seed,
                              changed_step=changed_step(gold, edited)))


def trajectory_candidates(trajectories: list[Trajectory], categories: list[str],
                          seed: int = 0, window: int | None = None
                          ) -> tuple[list[Instance], list[str]]:
    """One candidate instance per trajectory and category the rules could make, and a
    line for each they declined (what and why)."""
    made, declined = [], []
    for trajectory in trajectories:
        for category in categories:
            try:
                edit = perturb_trajectory(category, trajectory, seed)
            except Declined as why:
                declined.append(f"{trajectory.id} × {category}: {why}")
                continue
            made.append(trajectory_instance(
                trajectory, category, render(edit.trajectory), edit.step, edit.summary,
                f"trajectory-rules-{TRAJECTORY_RULES_VERSION}", seed, window=window))
    return made, declined
