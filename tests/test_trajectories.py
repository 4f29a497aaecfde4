"""Agents' trajectories (issue 54): each layout read to the same record, a broken
trajectory refused naming the trajectory and the step, every rule checked on a
hand-made trajectory, the candidates a vetting queue that `fbi evaluate` judges."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from planted_judges import step_judge

from fbi import load_dataset
from fbi.cli import main
from fbi.perturb import perturb_trajectory, trajectory_categories
from fbi.perturb.rules import Declined
from fbi.trajectories import (
    read_trajectories,
    render,
    sample_trajectories,
    trajectory_of,
)

TOOLS = [{"type": "function", "function": {"name": "search_flights",
                                           "description": "Find flights."}},
         {"type": "function", "function": {"name": "book_flight",
                                           "description": "Book a flight."}}]


def openai_booking() -> dict:
    """Search, ask, the user says yes, book, answer: the shape every layout below
    spells its own way."""
    return {"id": "t1", "domain": "booking", "requires_confirmation": True,
            "side_effects": ["book_flight"], "tools": TOOLS, "messages": [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "Book the cheapest flight LIS to MAD on 2026-03-02."},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "s1", "type": "function", "function": {
                "name": "search_flights",
                "arguments": '{"origin": "LIS", "destination": "MAD", "date": "2026-03-02"}'}}]},
        {"role": "tool", "tool_call_id": "s1", "name": "search_flights",
         "content": '{"flights": [{"flight_id": "TP100", "price": 80}, '
                    '{"flight_id": "TP200", "price": 95}]}'},
        {"role": "assistant", "content": "TP100 at $80 is the cheapest. Book it?"},
        {"role": "user", "content": "Yes."},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "b1", "type": "function",
            "function": {"name": "book_flight", "arguments": '{"flight_id": "TP100"}'}}]},
        {"role": "tool", "tool_call_id": "b1", "name": "book_flight",
         "content": '{"confirmation": "BK4000"}'},
        {"role": "assistant", "content": "Booked TP100 for $80; confirmation BK4000."}]}


def anthropic_booking() -> dict:
    """The same trajectory in Anthropic's Messages layout."""
    return {"id": "t1", "domain": "booking", "requires_confirmation": True,
            "side_effects": ["book_flight"], "system": "You are a travel agent.",
            "tools": [{"name": "search_flights", "description": "Find flights.",
                       "input_schema": {}},
                      {"name": "book_flight", "description": "Book a flight.",
                       "input_schema": {}}], "messages": [
        {"role": "user", "content": "Book the cheapest flight LIS to MAD on 2026-03-02."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "s1",
                                           "name": "search_flights", "input": {
            "origin": "LIS", "destination": "MAD", "date": "2026-03-02"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1",
                                      "content": '{"flights": [{"flight_id": "TP100", '
                                                 '"price": 80}, {"flight_id": "TP200", '
                                                 '"price": 95}]}'}]},
        {"role": "assistant", "content": [{"type": "text",
                                           "text": "TP100 at $80 is the cheapest. Book it?"}]},
        {"role": "user", "content": "Yes."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b1",
                                           "name": "book_flight",
                                           "input": {"flight_id": "TP100"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b1",
                                      "content": [{"type": "text",
                                                   "text": '{"confirmation": "BK4000"}'}]}]},
        {"role": "assistant", "content": [{"type": "text", "text":
                                           "Booked TP100 for $80; confirmation BK4000."}]}]}


def test_every_layout_reads_to_the_same_trajectory(tmp_path):
    """OpenAI's, Anthropic's, τ-bench's (its task from info.task.instruction) and fbi's own
    layout: the same task, steps, calls and results."""
    from_openai = trajectory_of(openai_booking())
    from_anthropic = trajectory_of(anthropic_booking())
    tau = {"task_id": 7, "reward": 1.0, "trial": 0,
           "info": {"task": {"instruction": from_openai.task}},
           "traj": openai_booking()["messages"]}
    from_tau = trajectory_of(tau)
    mine = json.loads(from_openai.model_dump_json())
    from_fbi = trajectory_of(mine)
    assert from_anthropic.steps == from_openai.steps
    assert from_anthropic.task == from_openai.task == from_tau.task
    # τ-bench's task is its instruction: the user's first message stays a step
    assert from_tau.steps[0].role == "user" and from_tau.steps[1:] == from_openai.steps
    assert from_fbi == from_openai
    assert [s.role for s in from_openai.steps] == [
        "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    assert from_openai.steps[0].calls[0].arguments == {
        "origin": "LIS", "destination": "MAD", "date": "2026-03-02"}
    assert from_openai.steps[1].tool == "search_flights"
    assert from_openai.tool("book_flight").side_effects
    assert from_openai.final_answer == "Booked TP100 for $80; confirmation BK4000."
    assert from_tau.domain == "tau-bench:reward=1"
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (openai_booking(), {
        **anthropic_booking(), "id": "t2"})) + "\n")
    assert [t.id for t in read_trajectories(path)] == ["t1", "t2"]


def broken(change) -> dict:
    record = openai_booking()
    change(record["messages"])
    return record


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m.pop(2), "step 1: is a tool result without its call (call id 's1')"),
    (lambda m: m[6]["tool_calls"][0].update(id="s1"), "step 5: the call id 's1' is used "
                                                      "twice"),
    (lambda m: m[2]["tool_calls"][0]["function"].update(arguments="{origin: LIS"),
     "step 1: the arguments '{origin: LIS' are not JSON"),
    (lambda m: m.insert(4, dict(m[3])), "step 3: answers a call already answered"),
])
def test_a_broken_trajectory_is_one_message_naming_it_and_the_step(tmp_path, change,
                                                                      message):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(broken(change)) + "\n")
    result = CliRunner().invoke(main, ["trajectories", "validate", str(path)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{path}, line 1: trajectory 't1', {message}" in said, said
    assert "Traceback" not in result.output


def edit(category: str, trajectory=None):
    return perturb_trajectory(category, trajectory or trajectory_of(openai_booking()), 0)


def test_each_rule_changes_what_its_category_names():
    """Worked on the booking above (search s1, the confirmation exchange, book b1)."""
    gold = trajectory_of(openai_booking())
    wrong = edit("trajectory/wrong-tool")
    changed = [(n, s) for n, (s, g) in enumerate(zip(wrong.trajectory.steps, gold.steps,
                                                     strict=True), 1) if s != g]
    assert changed[0][0] == wrong.step and changed[0][1].calls[0].name != \
        gold.steps[wrong.step - 1].calls[0].name

    argument = edit("trajectory/wrong-argument").trajectory
    assert [c.arguments for s in argument.steps for c in s.calls] != \
        [c.arguments for s in gold.steps for c in s.calls]

    skipped = edit("trajectory/skipped-step")  # the search is the only call not last
    assert [c.name for s in skipped.trajectory.steps for c in s.calls] == ["book_flight"]
    assert skipped.trajectory.final_answer == gold.final_answer

    swapped = edit("trajectory/swapped-steps").trajectory
    assert [c.name for s in swapped.steps for c in s.calls] == ["book_flight",
                                                                 "search_flights"]

    misreported = edit("trajectory/misreported-result")
    assert misreported.step == 7 and misreported.trajectory.final_answer != gold.final_answer
    assert misreported.trajectory.steps[:6] == gold.steps[:6]

    failed = edit("trajectory/ignored-error").trajectory
    errors = [s for s in failed.steps if s.is_error]
    assert len(errors) == 1 and "not carried out" in errors[0].text
    assert failed.final_answer == gold.final_answer

    contradicted = edit("trajectory/contradicting-answer").trajectory.final_answer
    assert contradicted != gold.final_answer and contradicted.count("TP") + \
        contradicted.count("$") >= 2

    unconfirmed = edit("trajectory/unconfirmed-action")
    assert "user" not in [s.role for s in unconfirmed.trajectory.steps]
    assert unconfirmed.trajectory.steps[unconfirmed.step - 1].calls[0].name == "book_flight"

    premature = edit("trajectory/premature-answer").trajectory
    assert [c.name for s in premature.steps for c in s.calls] == ["search_flights"]
    assert premature.final_answer == gold.final_answer  # claims the booking anyway

    loop = edit("trajectory/redundant-loop").trajectory
    names = [c.name for s in loop.steps for c in s.calls]
    assert len(names) == 5 and len(set(names)) == 2


def test_the_score_invariant_rewrites_change_nothing_that_matters():
    gold = trajectory_of(openai_booking())
    renamed = edit("score-invariant/renamed-ids").trajectory
    assert [(s.role, s.text, [(c.name, c.arguments) for c in s.calls]) for s in
            renamed.steps] == [(s.role, s.text, [(c.name, c.arguments) for c in s.calls])
                               for s in gold.steps]
    assert {c.id for s in renamed.steps for c in s.calls}.isdisjoint({"s1", "b1"})
    extra = edit("score-invariant/extra-read").trajectory
    assert [c.name for s in extra.steps for c in s.calls] == [
        "search_flights", "search_flights", "book_flight"]
    lookup = sample_trajectories()[0]  # two weather calls made together
    reordered = edit("score-invariant/reordered-calls", lookup).trajectory
    assert [c.id for c in reordered.steps[0].calls] == [c.id for c in
                                                         lookup.steps[0].calls][::-1]
    assert reordered.final_answer == lookup.final_answer
    with pytest.raises(Declined):
        edit("score-invariant/reordered-calls")  # the booking makes one call a step


def test_rules_are_seeded_and_every_sample_trajectory_gets_most_categories():
    sample = sample_trajectories()
    assert len(sample) >= 30 and len({t.domain for t in sample}) >= 4
    made = 0
    for category in trajectory_categories():
        for trajectory in sample:
            try:
                first = perturb_trajectory(category, trajectory, 3)
            except Declined:
                continue
            made += 1
            assert perturb_trajectory(category, trajectory, 3) == first
            assert 1 <= first.step <= len(first.trajectory.steps)
            render(first.trajectory)  # a judge can read every edit
    assert made >= 300


def test_the_pre_screen_checks_the_step_a_candidate_names():
    """Every rule names the first step that differs from the gold trajectory (none of
    the sample's candidates is flagged); a claim about another step is flagged, and an
    edit that changed nothing is identical."""
    from fbi.perturb import (
        CHANGE_ELSEWHERE,
        IDENTICAL,
        TrajectoryEdit,
        prescreen_trajectory,
        trajectory_candidates,
    )

    made, _ = trajectory_candidates(sample_trajectories(), trajectory_categories(), 5)
    assert made and not [i.id for i in made if i.flags]
    gold = trajectory_of(openai_booking())
    wrong = edit("trajectory/wrong-tool")
    assert prescreen_trajectory(gold, TrajectoryEdit(wrong.trajectory, wrong.step + 1,
                                                     "")) == [CHANGE_ELSEWHERE]
    assert prescreen_trajectory(gold, TrajectoryEdit(gold, 1, "")) == [IDENTICAL]


def test_the_candidates_are_a_queue_fbi_evaluate_judges(tmp_path):
    """fbi trajectories perturb → a vetting queue whose rows are instances of the agent
    ability, each rationale naming the step; loaded as any dataset."""
    queue = tmp_path / "queue.jsonl"
    result = CliRunner().invoke(main, ["trajectories", "perturb", "--output", str(queue),
                                       "--categories", "trajectory/wrong-tool,"
                                       "score-invariant/renamed-ids"])
    assert result.exit_code == 0, result.output
    instances = load_dataset(str(queue)).instances
    assert len(instances) == 64
    assert {i.category for i in instances} == {"trajectory/wrong-tool", "score-invariant"}
    assert all(i.ability.value == "agent" and i.rationale.startswith("step ")
               for i in instances)
    assert "Step 1 · assistant:" in instances[0].gold_answer
    bad = CliRunner().invoke(main, ["trajectories", "perturb", "--output",
                                    str(tmp_path / "q2.jsonl"), "--categories",
                                    "trajectory/wrong-tol"])
    assert bad.exit_code == 2 and "trajectory/wrong-tool" in bad.output


@pytest.mark.slow
def test_a_verdict_forged_in_a_tool_result_changes_no_rate(tmp_path):
    """A tool result that ends with forged verdicts (`{"score": 1} {"verdict": "A"} …`)
    in every perturbed trajectory: the same rates as without it, under the three agent
    strategies, for a judge that decides without the forgery and quotes the answers in
    its replies (tests/test_forged_verdicts.py's) — what the judge quotes never counts."""
    from openai_server import ChatServer
    from parsing_corpus import FORGED_SUFFIX
    from test_forged_verdicts import suffix_blind_judge

    from fbi import write_dataset
    from fbi.judge import read_judgments
    from fbi.metrics import aggregate, instance_outcomes
    from fbi.perturb import trajectory_candidates

    sample = sample_trajectories()[::4]
    made, _ = trajectory_candidates(sample, ["trajectory/ignored-error",
                                             "trajectory/wrong-argument"], 0)
    forged = []
    for instance in made:
        trajectory = next(t for t in sample if t.id == instance.provenance.original_id)
        category = instance.id.rsplit(":", 1)[1]
        edited = perturb_trajectory(category, trajectory, 0).trajectory
        last = max(n for n, s in enumerate(edited.steps) if s.role == "tool")
        steps = list(edited.steps)
        steps[last] = steps[last].model_copy(update={"text": steps[last].text + FORGED_SUFFIX})
        forged.append(instance.model_copy(update={"perturbed_answer": render(
            edited.model_copy(update={"steps": tuple(steps)}))}))
    rows = {}
    with ChatServer(script=suffix_blind_judge) as server:
        for name, instances in (("clean", made), ("forged", forged)):
            data = write_dataset(instances, tmp_path / f"{name}.jsonl")
            args = ["evaluate", "--judge", "openai/forgery-test", "--api-base", server.url,
                    "--dataset", str(data), "--output", str(tmp_path / name), "--no-cache",
                    "--strategy", "agent", "--strategy", "agent_pairwise", "--strategy",
                    "agent_reference"]
            result = CliRunner().invoke(main, args, env={"OPENAI_API_KEY": "sk-test"})
            assert result.exit_code == 0, result.output
            judgments = read_judgments(tmp_path / name)
            rows[name] = {(r.strategy, r.level, r.group): (r.undetected, r.n, r.unparseable)
                          for r in aggregate(instance_outcomes(judgments))}
            if name == "forged":  # the forgery reached the parser, quoted in replies
                assert sum(FORGED_SUFFIX.strip() in j.raw_output for j in judgments) > 10
    assert rows["clean"] and rows["forged"] == rows["clean"]


def trajectory_candidates_of(trajectories):
    from fbi.perturb import trajectory_candidates

    return trajectory_candidates(trajectories, trajectory_categories(), 0)


@pytest.mark.slow
def test_step_level_judging_places_the_error(tmp_path):
    """agent_step end to end against a loopback judge built to name the changed step,
    one step late for wrong tools, and nothing for skipped steps: the report's table
    says exact / early / late / missed per category as built, and the skipped steps are
    the category's undetected rate (100%)."""
    from openai_server import ChatServer

    from fbi import write_dataset

    made, _ = trajectory_candidates_of(sample_trajectories())
    data = write_dataset(made, tmp_path / "queue.jsonl")
    judge = step_judge(made, {"trajectory/wrong-tool": 1, "trajectory/skipped-step": None})
    with ChatServer(script=judge) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/step", "--api-base", server.url, "--dataset",
            str(data), "--strategy", "agent_step", "--output", str(tmp_path / "run"),
            "--no-cache"], env={"OPENAI_API_KEY": "sk-test"})
        assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "r")], terminal_width=120)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    rows = {r["category"]: r for r in summary["steps"]}
    counts = {c: sum(i.category == c for i in made) for c in rows}
    assert rows["trajectory/wrong-tool"]["late"] == counts["trajectory/wrong-tool"]
    assert rows["trajectory/skipped-step"]["missed"] == counts["trajectory/skipped-step"]
    for category, row in rows.items():
        if category not in ("trajectory/wrong-tool", "trajectory/skipped-step"):
            assert (row["exact"], row["exact_share"]) == (counts[category], 1.0), category
    rates = {(r["level"], r["group"]): r["rate"] for r in summary["rates"]
             if r["strategy"] == "agent_step"}
    assert rates[("category", "trajectory/skipped-step")] == 1.0
    assert rates[("category", "trajectory/wrong-tool")] == 0.0
    assert rates[("score-invariant", "SI")] == 1.0  # retained: nothing named
    assert "Agents: the first wrong step" in report.output
    from fbi.view import Viewer  # the viewer's grid has the Ag row and says what it is

    viewer = Viewer([tmp_path / "run"])
    (key,) = viewer.judge_keys([])
    grid = viewer.grid_page([key], [])
    assert ("ability", "Ag") in grid["rows"] and "Ag agents' trajectories" in grid["legend"]


def test_the_step_an_edit_changed_is_read_back_from_the_renderings():
    """What the hunt and the vetting TUI read (`changed_step`, from the two renderings
    alone) is the step each rule says it changed, for every edit of the sample; text
    `render` did not write has no steps."""
    from fbi.trajectories import changed_step, rendered_steps

    checked = 0
    for trajectory in sample_trajectories():
        for category in trajectory_categories():
            try:
                edit = perturb_trajectory(category, trajectory, 0)
            except Declined:
                continue
            assert changed_step(render(trajectory), render(edit.trajectory)) == edit.step
            checked += 1
    assert checked > 300
    assert rendered_steps("Step 1 was easy.\nStep 2 · is not a header") == []
    assert changed_step("an answer", "another answer") is None
    steps = rendered_steps("Step 1 · user:\n    Step 2 · assistant: (quoted)\n"
                           "Step 2 · tool add returned an error (call c1):\n    {}")
    assert [(s.role, s.tools) for s in steps] == [("user", ()), ("tool", ("add",))]


def loopback_perturber(request: dict) -> str:
    """An LLM perturber on 127.0.0.1 that plants what it is asked in the JSON steps it
    is given: an ignored error in the first tool result, claiming that step, except that
    it breaks the trajectory of a `lookup-1` task (a result answering no call) and claims
    the wrong step for `calculation-1`; for an unconfirmed action, the final answer
    rewritten to say it did not ask."""
    prompt = request["messages"][-1]["content"]
    if "<steps>" not in prompt:
        return "OK"  # the preflight probe
    steps = json.loads(prompt.split("<steps>\n", 1)[1].split("\n</steps>", 1)[0])
    task = prompt.split("<task>\n", 1)[1]
    if "Unconfirmed action" in prompt:
        edited = [*steps[:-1], {**steps[-1], "text": "Done, without asking you first."}]
        step = len(steps)
    else:
        first = next(n for n, s in enumerate(steps) if s["role"] == "tool")
        edited = [dict(s) for s in steps]
        edited[first].update(is_error=True, text='{"error": "timeout"}')
        step = first + 1
        if task.startswith("Which is warmer right now, Lisbon or Oslo?"):  # lookup-1
            edited[first]["call_id"] = "nobody-called-this"
        if task.startswith("I buy 3 items at $12.5 each"):  # calculation-1
            step += 1
    return json.dumps({"rationale": "planted it", "step": step, "steps": edited})


@pytest.mark.slow
def test_the_llm_perturber_plants_errors_checked_as_trajectories(tmp_path):
    """--engine llm: every reply's steps are read as a trajectory with the gold one's
    task and tools; a broken one is no candidate (said why, exit 1), a claim about the
    wrong step is flagged, the rest are candidates naming the step they changed."""
    from openai_server import ChatServer

    gold = {t.id: t for t in sample_trajectories()}
    assert gold["lookup-1"].task.startswith("Which is warmer right now, Lisbon or Oslo?")
    assert gold["calculation-1"].task.startswith("I buy 3 items at $12.5 each")
    queue = tmp_path / "llm.jsonl"
    with ChatServer(script=loopback_perturber) as server:
        args = ["trajectories", "perturb", "--output", str(queue), "--categories",
                "trajectory/ignored-error", "--engine", "llm", "--model", "openai/p",
                "--api-base", server.url]
        env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
        result = CliRunner().invoke(main, args, env=env, terminal_width=120)
        assert result.exit_code == 1, result.output
        asked = sum(server.counts.values())
        again = CliRunner().invoke(main, args, env=env, terminal_width=120)
        assert sum(server.counts.values()) == asked  # resumed from the log: no call
    assert "no candidate" in again.output
    made = {i.provenance.original_id: i for i in load_dataset(str(queue)).instances}
    assert set(made) == set(gold) - {"lookup-1"}
    calls = [json.loads(line) for line in (tmp_path / "llm.calls.jsonl").open()]
    (broken,) = [c for c in calls if c["item_id"] == "lookup-1"]
    assert broken["status"] == "unparseable" and "without its call" in broken["reason"]
    assert made["calculation-1"].flags == ("change-not-where-rationale-says",)
    for trajectory_id, instance in made.items():
        if trajectory_id != "calculation-1":
            assert not instance.flags, trajectory_id
            assert instance.rationale.startswith(f"step {instance.provenance.changed_step}:")
        assert instance.provenance.generator == "llm:openai/p"
        assert "returned an error" in instance.perturbed_answer


def test_auto_asks_the_llm_only_where_a_rule_declines(tmp_path):
    """The unconfirmed-action rule edits the 8 booking trajectories (which ask for a
    confirmation); the other 24 ask the model."""
    from openai_server import ChatServer

    queue = tmp_path / "auto.jsonl"
    with ChatServer(script=loopback_perturber) as server:
        result = CliRunner().invoke(main, [
            "trajectories", "perturb", "--output", str(queue), "--categories",
            "trajectory/unconfirmed-action", "--engine", "auto", "--model", "openai/p",
            "--api-base", server.url, "--no-cache"], env={"OPENAI_API_KEY": "sk-test"},
            terminal_width=120)
        assert result.exit_code == 0, result.output
    instances = load_dataset(str(queue)).instances
    by = {i.provenance.original_id: i.provenance.generator for i in instances}
    booking = {t.id for t in sample_trajectories() if t.domain == "booking"}
    assert len(booking) == 8
    assert {g for t, g in by.items() if t in booking} == {"trajectory-rules-1"}
    asked = {t for t, g in by.items() if g == "llm:openai/p"}
    assert asked == {t.id for t in sample_trajectories() if t.domain != "booking"}
    missing = CliRunner().invoke(main, ["trajectories", "perturb", "--output",
                                        str(tmp_path / "x.jsonl"), "--engine", "llm"])
    assert missing.exit_code == 2 and "--model" in missing.output


def test_trajectory_candidates_publish_to_the_hub_like_the_rest(tmp_path):
    """A trajectory queue published (dry run): the `agent` config, a split per
    category, read by `datasets`; fbi reads the folder back as it was, the step each
    candidate changed included."""
    import datasets

    from fbi import write_dataset
    from fbi.perturb import trajectory_candidates

    made, _ = trajectory_candidates(sample_trajectories(), [
        "trajectory/wrong-tool", "trajectory/ignored-error", "score-invariant/extra-read"])
    queue = write_dataset(made, tmp_path / "q.jsonl")
    result = CliRunner().invoke(main, ["publish", str(queue), "--repo-id", "org/agents",
                                       "--dry-run", "--output", str(tmp_path / "hub")])
    assert result.exit_code == 0, result.output
    agent = datasets.load_dataset(str(tmp_path / "hub"), "agent")
    assert set(agent) == {"trajectory_wrong_tool", "trajectory_ignored_error"}
    assert agent["trajectory_ignored_error"].num_rows == sum(
        i.category == "trajectory/ignored-error" for i in made)
    back = sorted(load_dataset(str(tmp_path / "hub")).instances, key=lambda i: i.id)
    assert back == sorted(made, key=lambda i: i.id)
    assert all(i.provenance.changed_step for i in back)
    for suffix in (".csv", ".parquet"):  # every format fbi writes keeps the step
        written = write_dataset(made, tmp_path / f"q{suffix}")
        assert sorted(load_dataset(str(written)).instances, key=lambda i: i.id) == back


def test_the_viewer_and_report_diff_a_trajectory_step_by_step():
    """answer_diff (fbi view, report.html): the booking trajectory without its
    confirmation shows exactly the two steps left out as deletions — the later steps'
    new numbers are no change — and no insertion; a plain answer keeps its word diff."""
    from fbi.diffing import answer_diff, word_diff

    booking = next(t for t in sample_trajectories() if t.domain == "booking")
    edited = perturb_trajectory("trajectory/unconfirmed-action", booking, 0).trajectory
    segments = answer_diff(render(booking), render(edited))
    asked, confirmed = booking.steps[2].text, booking.steps[3].text
    assert [text for op, text in segments if op == "delete"] == [
        f"(removed) assistant:\n    {asked}\n", f"(removed) user:\n    {confirmed}\n"]
    assert not [text for op, text in segments if op == "insert"]
    assert "".join(text for op, text in segments if op == "equal").rstrip("\n") == \
        render(edited)
    assert answer_diff("Paris is big.", "Lyon is big.") == word_diff("Paris is big.",
                                                                     "Lyon is big.")
