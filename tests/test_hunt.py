"""`fbi hunt` (issue 40): loopback judges with blind spots planted here are found, named no
broader than their examples and confirmed on held-out items; a judge without one gets
nothing confirmed; the statistics against hand-worked numbers and statsmodels; resume,
dry run and bad input as every stage's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTSIDE_CHECKOUT
from openai_server import ChatServer
from planted_judges import (
    PlantedJudge,
    changed_span,
    misses_changed_digits_in_lists,
    misses_edits_in_the_last_third,
    misses_long_additions,
    misses_nothing,
    synthetic_gold,
)

from fbi.hunt import Hunt, HuntConfig, holm
from fbi.hunt._search import Tally, fisher_greater
from fbi.llm import ModelClient
from fbi.settings import ModelSettings
from fbi.sources import load_dataset, load_gold_items

JUDGE = "openai/planted"
BUDGET = "800"


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gold") / "gold.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in synthetic_gold()),
                    encoding="utf-8")
    return path


def as_from_a_shell() -> None:
    """In the child: SIGINT as a user's shell leaves it (see tests/test_run_harness.py)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def env_for(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite"),
            "COLUMNS": "200"}


def fbi(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fbi", *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=OUTSIDE_CHECKOUT)


def hunt_with(judge: PlantedJudge, gold: Path, out: Path, tmp_path: Path,
              *extra: str) -> tuple[subprocess.CompletedProcess, dict, int]:
    with ChatServer(judge) as server:
        done = fbi("hunt", "--judge", JUDGE, "--api-base", server.url, "--dataset", str(gold),
                   "--budget", BUDGET, "--output", str(out), *extra, env=env_for(tmp_path))
        requests = sum(server.counts.values())
    assert done.returncode == 0, done.stderr
    return done, json.loads((out / "hunt.json").read_text()), requests


# ------------------------------------------------------------------ statistics


def test_holm_by_hand_and_as_statsmodels():
    # m = 5, three tested: 5 × 0.01 = 0.05; 4 × 0.03 = 0.12; 3 × 0.04 = 0.12 (kept monotone)
    assert holm([0.01, 0.04, 0.03], 5) == pytest.approx([0.05, 0.12, 0.12])
    from statsmodels.stats.multitest import multipletests

    p = [0.001, 0.2, 0.013, 0.04, 0.0004]
    expected = multipletests([*p, 1.0, 1.0, 1.0], method="holm")[1][:5]
    assert holm(p, 8) == pytest.approx(list(expected))


def test_fisher_one_sided_by_hand():
    # 3 of 3 missed inside, 0 of 3 outside: only the observed table is as extreme, with
    # probability 1 / C(6, 3) = 1/20 under the null
    assert fisher_greater(Tally(3, 3), Tally(0, 3)) == pytest.approx(0.05)
    # 2 of 3 inside, 1 of 3 outside: tables with 2 or 3 misses inside of the 3 in all:
    # (C(3,2)·C(3,1) + C(3,3)·C(3,0)) / C(6,3) = (9 + 1) / 20
    assert fisher_greater(Tally(2, 3), Tally(1, 3)) == pytest.approx(0.5)


# ------------------------------------------------------------------ planted blind spots


@pytest.mark.parametrize("blind_spot, must_name", [
    (misses_changed_digits_in_lists, {"inside": "a list item"}),
    (misses_edits_in_the_last_third, {"where": "last"}),
    (misses_long_additions, {}),
])
def test_each_planted_blind_spot_is_confirmed_and_named_no_broader_than_its_examples(
        tmp_path, gold, blind_spot, must_name):
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, blind_spot, noise=10)  # and 1 in 10 edits missed at random
    out = tmp_path / "hunt"
    done, result, requests = hunt_with(judge, gold, out, tmp_path)
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert confirmed, done.stdout
    for finding in confirmed:
        # true of its examples: most are edits the planted blind spot names (the judge
        # also misses one edit in ten at random, and those may be among them)
        assert finding["examples"]
        named = sum(blind_spot(e["gold_answer"], e["edited_answer"])
                    for e in finding["examples"])
        assert 2 * named > len(finding["examples"]), finding["description"]
        assert finding["interval"][0] > finding["baseline_rate"]
        assert finding["p_value"] <= finding["p_adjusted"] < 0.05
    # the blind spot itself, named no broader than the evidence: a broader description
    # would take in edits the judge catches, and its miss rate would fall towards the
    # baseline
    assert any(f["miss_rate"] >= 0.8 and all(f["axes"].get(axis) == value
                                              for axis, value in must_name.items())
               for f in confirmed), [f["description"] for f in confirmed]
    # every request to the judge counted, the preflight probe's included, within budget
    # (fewer requests than calls when two operators made the same text: the cache answers)
    assert result["calls"] - 5 <= requests <= result["calls"] <= int(BUDGET)
    assert result["search_calls"] + result["confirmation_calls"] + 1 == result["calls"]
    # the confirmed edits are a vetting queue, each in its finding's category
    queue = load_dataset(str(out / "queue.jsonl")).instances
    assert queue and {i.category for i in queue} == {f"hunt/{f['name']}" for f in confirmed}
    assert "Blind spots (held-out edits)" in done.stdout
    assert (out / "hunt.md").read_text().startswith("# Blind-spot hunt")


@pytest.mark.parametrize("noise", [0, 8])
def test_a_judge_that_catches_every_edit_gets_nothing_confirmed(tmp_path, gold, noise):
    items, _ = load_gold_items(str(gold))
    _, result, _ = hunt_with(PlantedJudge(items, misses_nothing, noise=noise), gold,
                             tmp_path / "hunt", tmp_path)
    assert not [f for f in result["findings"] if f["confirmed"]]
    assert (tmp_path / "hunt" / "queue.jsonl").read_text() == ""


def test_confirmation_is_on_held_out_items_only_and_counts_what_it_shows(tmp_path, gold):
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, misses_edits_in_the_last_third)
    with ChatServer(judge) as server:
        settings = ModelSettings(model=JUDGE, api_base=server.url)
        stage = Hunt(items, HuntConfig(model=settings, budget=500), tmp_path / "h",
                     str(gold))
        stage.run(ModelClient(api_key="sk-test"))
    held_out = {i.id for i in stage.held_out}
    assert held_out.isdisjoint(i.id for i in stage.search_items)
    assert len(held_out) + len(stage.search_items) == len(items)
    for probe in stage.probes:
        assert (probe.edit.item.id in held_out) == (probe.phase != "search")
    for finding in stage.result.findings:
        held = [p for p in stage.probes if p.phase == finding.name]
        missed = [p for p in held if stage._missed(p)]
        assert finding.n == len(held) and finding.misses == len(missed)
        # the search's own figures are kept apart from the held-out ones
        assert finding.search_n == sum(
            1 for p in stage.probes if p.phase == "search"
            and all(p.facts.get(a) == v for a, v in finding.axes.items())
            and p.edit.facts["added"] == "nothing")


def test_the_perturber_s_edits_join_the_search_and_their_blind_spot_is_found(tmp_path, gold):
    """With --perturber, a pool of the perturber's edits in the categories no rule makes
    is searched like the rules' (its calls counted in the budget)."""
    from planted_judges import planted_word_perturber

    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, lambda gold_text, edited: "Zanzibar" in edited, noise=10)
    with ChatServer(planted_word_perturber("Zanzibar")) as perturber:
        _, result, _ = hunt_with(judge, gold, tmp_path / "hunt", tmp_path, "--perturber",
                                 "openai/perturber", "--perturber-api-base", perturber.url,
                                 "--perturber-edits", "12")
        asked = sum(perturber.counts.values())
    assert 0 < result["perturber_calls"] == asked <= 9 * 12
    assert result["calls"] <= int(BUDGET)
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert confirmed and all(e["edited_answer"].count("Zanzibar") for f in confirmed
                             for e in f["examples"])
    assert all(f["axes"].get("family") == "llm" or f["operator"].startswith("llm/")
               for f in confirmed)


def test_an_llm_operator_needs_a_perturber(tmp_path, gold):
    done = fbi("hunt", "--judge", JUDGE, "--dataset", str(gold), "--budget", "300",
               "--operator", "llm/entity", "--output", str(tmp_path / "h"),
               env=env_for(tmp_path))
    assert done.returncode == 2 and "needs --perturber" in done.stderr


def test_score_invariant_edits_are_never_searched(gold):
    from fbi.hunt import EditSpace

    space = EditSpace()
    assert "score-invariant" not in space.rules
    assert all("score-invariant" not in str(root) for root in space.roots())


# ------------------------------------------------------------------ resume, dry run, input


def test_ctrl_c_then_the_same_command_finishes_the_same_hunt(tmp_path, gold):
    """Stopped by SIGINT midway, the same command resumes: the search replays its rounds
    from the log (no call made again) and ends where an uninterrupted hunt ends."""
    items, _ = load_gold_items(str(gold))
    env = env_for(tmp_path)
    uninterrupted = PlantedJudge(items, misses_edits_in_the_last_third)
    whole, _, _ = hunt_with(uninterrupted, gold, tmp_path / "whole", tmp_path)
    out = tmp_path / "stopped"
    process: subprocess.Popen | None = None

    sent = []

    def stop_after_200(request: dict) -> None:
        if judge.judged >= 200 and process is not None and not sent:
            sent.append(True)
            process.send_signal(signal.SIGINT)

    judge = PlantedJudge(items, misses_edits_in_the_last_third)
    args = ["hunt", "--judge", JUDGE, "--dataset", str(gold), "--budget", BUDGET,
            "--output", str(out)]
    env = {**env, "FBI_CACHE": str(tmp_path / "other.sqlite")}
    with ChatServer(judge, on_answer=stop_after_200) as server:
        process = subprocess.Popen([sys.executable, "-m", "fbi", *args, "--api-base",
                                    server.url], env=env, cwd=OUTSIDE_CHECKOUT,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=as_from_a_shell)
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr and not (out / "hunt.json").exists()
        first = judge.judged
        resumed = fbi(*args, "--api-base", server.url, env=env)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads((out / "hunt.json").read_text())
    expected = json.loads((tmp_path / "whole" / "hunt.json").read_text())
    assert [f["description"] for f in result["findings"]] == \
        [f["description"] for f in expected["findings"]]
    assert result["calls"] == expected["calls"]
    # no call was made twice: both invocations together asked what one hunt asks
    assert judge.judged == uninterrupted.judged and first < judge.judged
    assert whole.returncode == 0


def test_dry_run_calls_nothing_and_prices_the_budget(tmp_path, gold):
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, misses_nothing)
    with ChatServer(judge) as server:
        done = fbi("hunt", "--judge", JUDGE, "--api-base", server.url, "--dataset", str(gold),
                   "--budget", "300", "--output", str(tmp_path / "h"), "--dry-run",
                   env=env_for(tmp_path))
        assert sum(server.counts.values()) == 0
    assert done.returncode == 0, done.stderr
    assert "299 calls planned" in done.stdout and "first round" in done.stdout
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("args, said", [
    (("--budget", "0"), "--budget 0 is too small"),
    (("--budget", "500", "--operator", "number-erors"), "Did you mean 'number-errors'?"),
    (("--budget", "500", "--operator", "manipulation/padding"), "after an error rule"),
    (("--budget", "500", "--strategy", "vanila"), "vanilla"),
])
def test_bad_options_get_one_message_and_exit_2(tmp_path, gold, args, said):
    done = fbi("hunt", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9/v1", "--dataset",
               str(gold), "--output", str(tmp_path / "h"), *args, env=env_for(tmp_path))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "h").exists()


def test_a_dataset_without_gold_answers_is_refused_with_its_row(tmp_path):
    data = tmp_path / "no_gold.jsonl"
    data.write_text('{"instruction": "Say hi.", "ability": "long-form"}\n')
    done = fbi("hunt", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9/v1", "--dataset",
               str(data), "--budget", "100", "--output", str(tmp_path / "h"),
               env=env_for(tmp_path))
    assert done.returncode == 2
    assert "gold_answer" in done.stderr and "line 1" in done.stderr
    assert "Traceback" not in done.stderr


def test_vetted_edits_become_a_category_evaluate_and_report_use(tmp_path, gold):
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, misses_edits_in_the_last_third)
    out = tmp_path / "hunt"
    hunt_with(judge, gold, out, tmp_path)
    rows = [json.loads(line) for line in (out / "queue.jsonl").read_text().splitlines()]
    vetted = tmp_path / "vetted.jsonl"  # as `fbi annotate` leaves them: vetted valid
    vetted.write_text("".join(json.dumps({**row, "label": "valid"}) + "\n"
                              for row in rows[:12]))
    env = env_for(tmp_path)
    with ChatServer(judge) as server:
        done = fbi("evaluate", "--judge", JUDGE, "--api-base", server.url, "--dataset",
                   str(vetted), "--output", str(tmp_path / "run"), env=env)
    assert done.returncode == 0, done.stderr
    report = fbi("report", str(tmp_path / "run"), "--format", "json", env=env)
    assert report.returncode == 0, report.stderr
    category = rows[0]["category"]
    rates = json.loads((tmp_path / "run" / "summary.json").read_text())["rates"]
    row = next(r for r in rates if r["level"] == "category" and r["group"] == category)
    assert category.startswith("hunt/") and row["undetected"] == row["n"] == 12
    shown = fbi("report", str(out), env=env)  # a hunt folder: its findings
    assert shown.returncode == 0 and "Blind spots (held-out edits)" in shown.stdout


def test_the_edits_change_the_gold_answer_where_their_facts_say(gold):
    """The facts a finding is named by are the edit's: the third and the list item."""
    import random

    from fbi.hunt import EditSpace

    items, _ = load_gold_items(str(gold))
    space, rng = EditSpace(), random.Random(1)
    checked = 0
    for root in space.roots():
        for _ in range(5):
            edit = space.draw(root, items, rng, set())
            if edit is None or edit.facts["added"] != "nothing":
                continue
            gold_text = edit.item.gold_answer
            start = changed_span(gold_text, edit.instance.perturbed_answer)[0]
            third = ("first", "middle", "last")[min(2, 3 * start // len(gold_text))]
            # (a rule's first change and the first differing character can sit in
            # neighbouring thirds only when the change straddles the boundary)
            assert edit.facts["where"] == third or abs(
                3 * start / len(gold_text) - round(3 * start / len(gold_text))) < 0.2
            checked += 1
    assert checked >= 20


def test_hunt_md_escapes_what_the_dataset_and_the_judge_wrote():
    from fbi.findings import HuntExample, HuntFinding, HuntResult
    from fbi.report import hunt_markdown

    hostile = "<script>x</script> | [link](http://evil) `code` **bold**"
    example = HuntExample(instance_id=f"i|{hostile}", strategy="vanilla", question=hostile,
                          gold_answer=f"Line one.\nThe value is 12 {hostile}",
                          edited_answer=f"Line one.\nThe value is 13 {hostile}",
                          judge_reply=hostile)
    finding = HuntFinding(name="n", description=hostile, operator=hostile, axes={},
                          confirmed=True, miss_rate=1.0, interval=[0.8, 1.0], n=10,
                          misses=10, unreadable=0, baseline_rate=0.1, baseline_n=20,
                          p_value=1e-6, p_adjusted=1e-4, search_miss_rate=1.0,
                          search_n=10, examples=[example])
    result = HuntResult(judge=hostile, model="m", strategies=["vanilla"], dataset="d",
                        seed=0, budget=100, calls=100, search_calls=60,
                        confirmation_calls=39, failed_calls=0, search_items=2,
                        held_out_items=2, operators=[], hypotheses_tested=5, alpha=0.05,
                        baseline="b", findings=[finding])
    page = hunt_markdown(result)
    assert "<script>" not in page and "](http://evil)" not in page
    assert "| " + hostile not in page
    assert "~~12~~**13**" in page and "> Line one.  " in page
