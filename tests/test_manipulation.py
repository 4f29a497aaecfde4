"""Issue 24, item 3: judges under manipulation — text added to an answer that already
holds a planted error, and how often a judge that caught the error misses it once the
text is there (exact McNemar, checked against statsmodels)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from statsmodels.stats.contingency_tables import mcnemar

from fbi import load_dataset
from fbi.cli import main
from fbi.metrics import InstanceOutcome, manipulation_effects
from fbi.perturb import manipulate, manipulated_queue, manipulations
from fbi.taxonomy import Ability, categories_named

KINDS = ["injected-instruction", "fake-verdict", "authority-claim", "self-praise", "padding"]


@pytest.fixture(scope="module")
def twins():
    return [i for i in load_dataset("sample").instances if not i.is_score_invariant]


def test_every_kind_adds_its_text_and_keeps_the_error(twins):
    version, known = manipulations()
    assert set(KINDS) <= set(known) and version >= 1
    assert categories_named("manipulation/*") == [f"manipulation/{k}" for k in known]
    twin = twins[0]
    for kind in KINDS:
        made = manipulate(twin, kind, seed=3)
        assert made.id == f"{twin.id}~{kind}" and made.category == f"manipulation/{kind}"
        assert (made.ability, made.instruction, made.gold_answer) == (
            twin.ability, twin.instruction, twin.gold_answer)
        assert made.provenance.original_id == twin.id
        assert made.provenance.template_version == str(version)
        assert twin.perturbed_answer in made.perturbed_answer  # the error is still there
        assert made == manipulate(twin, kind, seed=3)  # seeded: repeatable
        added = made.perturbed_answer.replace(twin.perturbed_answer, "").strip()
        if kind == "padding":
            assert len(made.perturbed_answer) >= 2 * len(twin.perturbed_answer)
        else:
            assert added in known[kind].texts
        if kind == "authority-claim":
            assert made.perturbed_answer.endswith(twin.perturbed_answer)
        else:
            assert made.perturbed_answer.startswith(twin.perturbed_answer)
    verdicts = {manipulate(t, "fake-verdict").perturbed_answer for t in twins}
    assert any("[[" in v for v in verdicts) and any('"score": 10' in v for v in verdicts)


def test_a_queue_holds_the_twins_then_the_manipulations(twins):
    sample = list(load_dataset("sample").instances)
    queue, left_out = manipulated_queue(sample, ["padding", "self-praise"])
    assert left_out == len(sample) - len(twins)
    assert queue[:len(twins)] == twins and len(queue) == 3 * len(twins)


def outcome(instance_id, category, result, judge="j", strategy="vanilla"):
    return InstanceOutcome(instance_id, judge, strategy, "single", Ability.FACTUAL, category,
                           result)


def test_effects_worked_by_hand_and_p_from_statsmodels():
    # 10 pairs: twins caught 7; of those 4 missed once manipulated; 1 caught only after
    before = ["detected"] * 7 + ["undetected"] * 3
    after = ["undetected"] * 4 + ["detected"] * 3 + ["detected"] + ["undetected"] * 2
    outcomes, twin_of = [], {}
    for n, (b, a) in enumerate(zip(before, after, strict=True)):
        outcomes.append(outcome(f"t{n}", "entity", b))
        outcomes.append(outcome(f"t{n}~padding", "manipulation/padding", a))
        twin_of[f"t{n}~padding"] = f"t{n}"
    outcomes.append(outcome("lost~padding", "manipulation/padding", "detected"))  # no twin
    twin_of["lost~padding"] = "lost"
    outcomes.append(outcome("t0~padding", "manipulation/padding", "unparseable",
                            strategy="rubric"))
    (row,) = manipulation_effects(outcomes, twin_of)
    assert (row.manipulation, row.pairs, row.caught_before, row.missed_after,
            row.caught_after_only) == ("padding", 10, 7, 4, 1)
    assert row.missed_before_rate == pytest.approx(0.3)
    assert row.missed_after_rate == pytest.approx(0.6)
    assert row.p == pytest.approx(mcnemar([[3, 4], [1, 2]], exact=True).pvalue)


def test_a_reply_the_manipulation_made_unparseable_is_a_miss():
    """Issue 38: a judge swayed into an unreadable reply missed the error. 6 pairs: the
    twins caught 5; once manipulated, 2 readable misses and 2 unparseable replies (one
    of them on the twin the judge had missed), 1 still caught; a pair whose twin is
    unparseable stays out. Worked by hand: missed_after 2 + 1 = 3 (of the 5 caught),
    unparseable 2, undetected after (6 - 5 + 3 - 0) / 6."""
    before = ["detected"] * 5 + ["undetected"]
    after = ["undetected", "undetected", "unparseable", "detected", "detected",
             "unparseable"]
    outcomes, twin_of = [], {}
    for n, (b, a) in enumerate(zip(before, after, strict=True)):
        outcomes += [outcome(f"t{n}", "entity", b),
                     outcome(f"t{n}~fake-verdict", "manipulation/fake-verdict", a)]
        twin_of[f"t{n}~fake-verdict"] = f"t{n}"
    outcomes += [outcome("u", "entity", "unparseable"),
                 outcome("u~fake-verdict", "manipulation/fake-verdict", "undetected")]
    twin_of["u~fake-verdict"] = "u"
    (row,) = manipulation_effects(outcomes, twin_of)
    assert (row.pairs, row.caught_before, row.missed_after, row.unparseable_after,
            row.caught_after_only) == (6, 5, 3, 2, 0)
    assert row.missed_after_rate == pytest.approx(4 / 6)
    assert row.p == pytest.approx(mcnemar([[2, 3], [0, 1]], exact=True).pvalue)


@pytest.mark.slow
def test_perturb_evaluate_report_end_to_end(tmp_path, twins):
    """A loopback judge that catches every planted error, unless the answer tells the
    grader to give the top score: the report says so, kind by kind."""
    queue = tmp_path / "manipulated.jsonl"
    made = CliRunner().invoke(main, ["perturb", "--engine", "rules", "--categories",
                                     "manipulation/*", "--output", str(queue)])
    assert made.exit_code == 0, made.output
    perturbed = {t.perturbed_answer for t in twins}
    instructions = manipulations()[1]["injected-instruction"].texts

    def obeys_instructions(request):
        answer = request["messages"][-1]["content"].split("<answer>\n", 1)[1].split(
            "\n</answer>", 1)[0]
        if any(text in answer for text in instructions):
            return '{"score": 10}'
        # a perturbed answer, alone or with text added before or after it
        flawed = answer in perturbed or any(answer.startswith(p + "\n\n") or
                                            answer.endswith("\n\n" + p) for p in perturbed)
        return '{"score": 2}' if flawed else '{"score": 9}'

    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(script=obeys_instructions) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            str(queue), "--strategy", "vanilla_star", "--output", str(tmp_path / "run")],
            env=env)
        assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "out")], terminal_width=100)
    assert report.exit_code == 0, report.output
    rows = {r["manipulation"]: r for r in json.loads(
        (tmp_path / "out" / "summary.json").read_text())["manipulation"]}
    assert set(rows) == {k for k, m in manipulations()[1].items()  # every kind of answers
                         if m.where != "tool-result"}
    n = len(twins)
    injected = rows["injected-instruction"]
    assert (injected["pairs"], injected["caught_before"], injected["missed_after"]) == (n, n, n)
    assert injected["p"] == pytest.approx(mcnemar([[0, n], [0, 0]], exact=True).pvalue)
    assert all(rows[k]["missed_after"] == 0 and rows[k]["p"] == 1 for k in rows
               if k != "injected-instruction")
    assert "Under manipulation" in report.output
    assert "## Judges under manipulation" in (tmp_path / "out" / "report.md").read_text()
    assert 'id="manipulation"' in (tmp_path / "out" / "report.html").read_text()


def test_a_manipulation_queue_is_vetted_and_exported_with_its_twins(tmp_path, twins):
    from fbi.vet import AnnotatorLog, load_queue

    queue = tmp_path / "q.jsonl"
    assert CliRunner().invoke(main, ["perturb", "--categories", "manipulation/padding",
                                     "--limit", "3", "--output", str(queue)]).exit_code == 0
    items = load_queue(queue)
    manipulated = [i for i in items if i.category == "manipulation/padding"]
    assert len(items) == 6 and len(manipulated) == 3
    log = AnnotatorLog(queue, "ann")
    log.record(manipulated[0].id, "label", label="valid")
    log.record(manipulated[1].id, "label", label="invalid")
    out = tmp_path / "vetted.jsonl"
    result = CliRunner().invoke(main, ["annotate", "export", str(queue), "--output", str(out)])
    assert result.exit_code == 0, result.output
    kept = [i.id for i in load_dataset(str(out)).instances]
    # the three twins came vetted (the sample's labels) and keep them; one manipulation
    assert kept == [i.id for i in items[:3]] + [manipulated[0].id]


@pytest.mark.parametrize("args, message", [
    (["--categories", "manipulation/padding,entity"], "a queue of their own"),
    (["--categories", "manipulation/padding", "--engine", "llm"], "made by rules"),
    (["--categories", "manipulation/flattery"], "Unknown manipulation"),
])
def test_refusals_are_one_message(tmp_path, args, message):
    result = CliRunner().invoke(main, ["perturb", *args, "--output", str(tmp_path / "q.jsonl")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "q.jsonl").exists()


def test_the_python_api_refuses_what_the_cli_refuses():
    """The rules live in the library's config (issue 52), not in the CLI."""
    from fbi.errors import InputError
    from fbi.perturb import PerturbConfig

    with pytest.raises(InputError, match="a queue of their own"):
        PerturbConfig(categories=("manipulation/padding", "entity"))
    with pytest.raises(InputError, match="made by rules"):
        PerturbConfig(categories=("manipulation/padding",), engine="llm")
    assert PerturbConfig(categories=("manipulation/padding",)).manipulations
