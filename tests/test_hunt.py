"""`fbi hunt` end to end (issues 40 and 49): loopback judges with several blind spots
planted at once — one loud, the others quiet — each confirmed and named once, by a
description true of its examples; a judge with only random misses gets nothing; a judge
that misses most edits is told so first; the describer's proposals tested like the rest;
resume, dry run, bad input and the output a person reads."""

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
    SEVERAL,
    PlantedJudge,
    SeveralSpots,
    misses_edits_in_the_last_third,
    misses_inside_quotes,
    misses_nothing,
    planted_describer,
    synthetic_gold,
)

from fbi.datasets import load_dataset, load_gold_items
from fbi.hunt import Hunt, HuntConfig
from fbi.providers import ModelClient
from fbi.settings import ModelSettings

JUDGE = "openai/planted"
BUDGET = "1200"
FOUR_SPOTS = SEVERAL["numbers, parentheses, negation, authority"]


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


def env_for(tmp_path: Path, columns: int = 200) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite"),
            "COLUMNS": str(columns)}


def fbi(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fbi", *args], env=env, capture_output=True,
                          text=True, timeout=600, cwd=OUTSIDE_CHECKOUT)


def hunt_with(judge, gold: Path, out: Path, tmp_path: Path, *extra: str,
              budget: str = BUDGET) -> tuple[subprocess.CompletedProcess, dict, int]:
    with ChatServer(judge) as server:
        done = fbi("hunt", "--judge", JUDGE, "--api-base", server.url, "--dataset", str(gold),
                   "--budget", budget, "--output", str(out), *extra, env=env_for(tmp_path))
        requests = sum(server.counts.values())
    assert done.returncode == 0, done.stderr
    return done, json.loads((out / "hunt.json").read_text()), requests


def spots_named(result: dict, spots: SeveralSpots) -> dict[str, list[str]]:
    """Each planted spot → the confirmed findings at least 80% of whose examples it
    explains."""
    named: dict[str, list[str]] = {name: [] for name in spots.spots}
    for finding in result["findings"]:
        if not finding["confirmed"]:
            continue
        examples = finding["examples"]
        for name, (spot, _) in spots.spots.items():
            share = sum(spot(e["gold_answer"], e["edited_answer"]) for e in examples)
            if examples and share >= 0.8 * len(examples):
                named[name].append(finding["description"])
    return named


# ------------------------------------------------------------------ planted blind spots


@pytest.mark.slow
def test_every_planted_blind_spot_is_confirmed_and_named_once(tmp_path, gold):
    """Four blind spots in one judge — any number changed (missed 95% of the time, a
    third of the edits), an edit inside parentheses, a negation put in or taken out, an
    authority claim added (70% each) — and one edit in ten missed at random: each is
    confirmed by a finding whose examples it explains, and by one only."""
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, FOUR_SPOTS, noise=10)
    out = tmp_path / "hunt"
    done, result, requests = hunt_with(judge, gold, out, tmp_path, budget="2000")
    named = spots_named(result, FOUR_SPOTS)
    assert all(len(found) == 1 for found in named.values()), named
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert len(confirmed) == 4, [f["description"] for f in confirmed]
    for finding in confirmed:
        assert finding["status"] == "confirmed" and len(finding["predicates"]) <= 3
        assert finding["p_value"] <= finding["p_adjusted"] < 0.05
        assert finding["interval"][0] > finding["baseline_rate"] + result["margin"]
    # the names a person reads: the text-shaped one by its place
    assert "edits inside parentheses" in {f["description"] for f in confirmed}
    # every request to the judge counted, the preflight probe's included, within budget
    assert requests <= result["calls"] <= 2000
    assert result["search_calls"] + result["confirmation_calls"] + 1 == result["calls"]
    assert result["candidates"] <= 8
    # the queue: missed edits of the confirmed findings only, each once
    queue = load_dataset(str(out / "queue.jsonl")).instances
    assert {i.category for i in queue} == {f"hunt/{f['name']}" for f in confirmed}
    assert len({i.id for i in queue}) == len(queue)
    assert all(judge.misses(i.gold_answer, i.perturbed_answer) for i in queue)
    assert "Blind spots found" in done.stdout
    assert (out / "hunt.md").read_text().startswith("# Blind-spot hunt")


@pytest.mark.slow
def test_a_blind_spot_only_a_text_predicate_can_name_is_found(tmp_path, gold):
    """A judge that misses edits inside quotation marks, beside a loud blind spot for the
    answer's last third: no operator says "inside quotes"; the place does."""
    items, _ = load_gold_items(str(gold))
    spots = SeveralSpots({"last third": (misses_edits_in_the_last_third, 0.95),
                          "quotes": (misses_inside_quotes, 0.8)})
    _, result, _ = hunt_with(PlantedJudge(items, spots, noise=10), gold, tmp_path / "h",
                             tmp_path, budget="2000")
    named = spots_named(result, spots)
    assert named["quotes"] == ["edits inside quotation marks"], named
    assert len(named["last third"]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", ["0", "1"])
def test_a_judge_with_only_random_misses_gets_nothing_confirmed(tmp_path, gold, seed):
    items, _ = load_gold_items(str(gold))
    done, result, _ = hunt_with(PlantedJudge(items, misses_nothing, noise=10), gold,
                                tmp_path / "hunt", tmp_path, "--seed", seed)
    assert not [f for f in result["findings"] if f["confirmed"]]
    assert (tmp_path / "hunt" / "queue.jsonl").read_text() == ""
    assert "no blind spot confirmed" in done.stdout
    assert result["overall"]["miss_rate"] < 0.2 and "misses most" not in done.stdout


@pytest.mark.slow
def test_a_judge_that_misses_most_edits_is_told_so_first(tmp_path, gold):
    items, _ = load_gold_items(str(gold))

    def misses_four_in_five(gold_text: str, edited: str) -> bool:
        import hashlib

        return int(hashlib.sha256(edited.encode()).hexdigest(), 16) % 5 != 0

    done, result, _ = hunt_with(PlantedJudge(items, misses_four_in_five), gold,
                                tmp_path / "hunt", tmp_path, budget="500")
    assert "misses most edits everywhere: random edits missed" in done.stdout
    assert result["overall"]["interval"][0] > 0.5


@pytest.mark.slow
def test_the_same_seed_makes_the_same_hunt_whatever_order_replies_arrive_in(tmp_path, gold):
    """A describer's edits arrive in the order its replies do (one at a time, or sixteen
    at once, under another hash seed); the hunt draws from them in call order, so the
    same seed plans the same edits and names the same findings."""
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, lambda g, edited: "Zanzibar" in edited and
                         "Zanzibar" not in g, noise=10)
    runs = []
    for concurrency, hash_seed in (("1", "1"), ("16", "2")):
        out = tmp_path / f"hunt-{concurrency}"
        with ChatServer(planted_describer("Zanzibar")) as describer:
            os.environ["PYTHONHASHSEED"], before = hash_seed, os.environ.get("PYTHONHASHSEED")
            try:
                _, result, _ = hunt_with(judge, gold, out, tmp_path, "--describer",
                                         "openai/describer", "--describer-api-base",
                                         describer.url, "--describer-edits", "30",
                                         "--concurrency", concurrency, budget="600")
            finally:
                os.environ.pop("PYTHONHASHSEED") if before is None else \
                    os.environ.__setitem__("PYTHONHASHSEED", before)
        runs.append(((out / "edits.jsonl").read_text(),
                     [(f["description"], f["confirmed"]) for f in result["findings"]]))
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_the_describer_s_proposal_is_tested_like_any_suspicion(tmp_path, gold):
    """A judge that misses edits mentioning a word nothing in fbi edits in: only the
    describer can propose it, and its proposal is confirmed on held-out edits the
    describer made for it, its calls counted in the budget."""
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, lambda g, edited: "Zanzibar" in edited and
                         "Zanzibar" not in g, noise=10)
    with ChatServer(planted_describer("Zanzibar", ("in_list_item",))) as describer:
        _, result, _ = hunt_with(judge, gold, tmp_path / "hunt", tmp_path, "--describer",
                                 "openai/describer", "--describer-api-base", describer.url,
                                 "--describer-edits", "30", budget="1500")
        asked = sum(describer.counts.values())
    assert result["describer_calls"] == asked == 1 + 30  # one description, its edits
    assert result["calls"] <= 1500
    confirmed = [f for f in result["findings"] if f["confirmed"]]
    assert [f["description"] for f in confirmed] == ["edits that mention Zanzibar"]
    assert confirmed[0]["predicates"] == ["op:proposal/1"]
    assert all("Zanzibar" in e["edited_answer"] for e in confirmed[0]["examples"])
    assert (tmp_path / "hunt" / "describer.jsonl").exists()


@pytest.mark.slow
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
    assert all(p.startswith(("op:llm/", "family:llm")) for f in confirmed
               for p in f["predicates"][:1])


def test_an_llm_operator_needs_a_perturber(tmp_path, gold):
    done = fbi("hunt", "--judge", JUDGE, "--dataset", str(gold), "--budget", "300",
               "--operator", "llm/entity", "--output", str(tmp_path / "h"),
               env=env_for(tmp_path))
    assert done.returncode == 2 and "needs --perturber" in done.stderr


# ------------------------------------------------------------------ resume, dry run, input


@pytest.mark.slow
def test_ctrl_c_then_the_same_command_finishes_the_same_hunt(tmp_path, gold):
    """Stopped by SIGINT midway, the same command resumes: the search replays its rounds
    from the log (no call made again) and ends where an uninterrupted hunt ends."""
    items, _ = load_gold_items(str(gold))
    env = env_for(tmp_path)
    uninterrupted = PlantedJudge(items, FOUR_SPOTS, noise=10)
    whole, _, _ = hunt_with(uninterrupted, gold, tmp_path / "whole", tmp_path)
    out = tmp_path / "stopped"
    process: subprocess.Popen | None = None
    sent = []

    def stop_after_300(request: dict) -> None:
        if judge.judged >= 300 and process is not None and not sent:
            sent.append(True)
            process.send_signal(signal.SIGINT)

    judge = PlantedJudge(items, FOUR_SPOTS, noise=10)
    args = ["hunt", "--judge", JUDGE, "--dataset", str(gold), "--budget", BUDGET,
            "--output", str(out)]
    env = {**env, "FBI_CACHE": str(tmp_path / "other.sqlite")}
    with ChatServer(judge, on_answer=stop_after_300) as server:
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
    assert [(f["description"], f["n"], f["misses"]) for f in result["findings"]] == \
        [(f["description"], f["n"], f["misses"]) for f in expected["findings"]]
    assert result["calls"] == expected["calls"]
    # no call was made twice: both invocations together asked what one hunt asks
    assert judge.judged == uninterrupted.judged and first < judge.judged
    assert whole.returncode == 0


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("args, said", [
    (("--budget", "0"), "--budget 0 is too small"),
    (("--operator", "number-erors"), "Did you mean 'number-errors'?"),
    (("--operator", "padding+number-errors"), "Unknown operator 'padding'"),
    (("--operator", "manipulation/padding+number-errors"), "comes last"),
    (("--strategy", "vanila"), "vanilla"),
    (("--margin", "1.5"), "--margin"),
    (("--describer", "openai/d", "--describer-edits", "1"), "--describer-edits"),
])
def test_bad_options_get_one_message_and_exit_2(tmp_path, gold, args, said):
    done = fbi("hunt", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9/v1", "--dataset",
               str(gold), "--output", str(tmp_path / "h"), *args, env=env_for(tmp_path))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "h").exists()


def test_a_manipulation_alone_is_an_operator(gold):
    """A manipulation without an error edit is searched in its own population: the
    answer stays correct, and it is missed when the judge rates it above the gold."""
    from fbi.hunt import Operator
    from fbi.hunt._space import EditSpace
    from fbi.hunt._table import Population

    items, _ = load_gold_items(str(gold))
    operator = Operator.parse("manipulation/authority-claim")
    edit = operator.apply(items[0], 3)
    assert edit.edited == items[0].gold_answer and edit.shown != edit.edited
    assert EditSpace([operator]).population_of(operator) == Population.SWAY
    assert {r.name for r in EditSpace([operator]).roots()} == {
        "op:manipulation/authority-claim", "invariant"}


def test_a_dataset_without_gold_answers_is_refused_with_its_row(tmp_path):
    data = tmp_path / "no_gold.jsonl"
    data.write_text('{"instruction": "Say hi.", "ability": "long-form"}\n')
    done = fbi("hunt", "--judge", JUDGE, "--api-base", "http://127.0.0.1:9/v1", "--dataset",
               str(data), "--budget", "100", "--output", str(tmp_path / "h"),
               env=env_for(tmp_path))
    assert done.returncode == 2
    assert "gold_answer" in done.stderr and "line 1" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_replies_the_judge_never_makes_readable_are_said(tmp_path, gold):
    """A judge whose every reply is unreadable: every edit counts as missed, and the hunt
    says the replies were unreadable instead of presenting blind spots."""
    with ChatServer(lambda request: "I cannot grade this.") as server:
        done = fbi("hunt", "--judge", JUDGE, "--api-base", server.url, "--dataset",
                   str(gold), "--budget", "200", "--output", str(tmp_path / "h"),
                   "--no-probe", env=env_for(tmp_path))
    result = json.loads((tmp_path / "h" / "hunt.json").read_text())
    assert result["unreadable_calls"] == result["probes"] > 0
    assert "replies about an edit were unreadable" in done.stdout
    assert done.returncode == 1  # nothing a person can act on: the exit code says so


@pytest.mark.slow
def test_vetted_edits_become_a_category_evaluate_and_report_use(tmp_path, gold):
    items, _ = load_gold_items(str(gold))
    judge = PlantedJudge(items, FOUR_SPOTS, noise=10)
    out = tmp_path / "hunt"
    hunt_with(judge, gold, out, tmp_path)
    rows = [json.loads(line) for line in (out / "queue.jsonl").read_text().splitlines()]
    category = rows[0]["category"]
    chosen = [row for row in rows if row["category"] == category][:12]
    vetted = tmp_path / "vetted.jsonl"  # as `fbi annotate` leaves them: vetted valid
    vetted.write_text("".join(json.dumps({**row, "label": "valid"}) + "\n"
                              for row in chosen))
    env = env_for(tmp_path)
    with ChatServer(judge) as server:
        done = fbi("evaluate", "--judge", JUDGE, "--api-base", server.url, "--dataset",
                   str(vetted), "--output", str(tmp_path / "run"), env=env)
    assert done.returncode == 0, done.stderr
    report = fbi("report", str(tmp_path / "run"), "--format", "json", env=env)
    assert report.returncode == 0, report.stderr
    rates = json.loads((tmp_path / "run" / "summary.json").read_text())["rates"]
    row = next(r for r in rates if r["level"] == "category" and r["group"] == category)
    assert category.startswith("hunt/") and row["undetected"] == row["n"] == len(chosen)
    shown = fbi("report", str(out), env=env_for(tmp_path, 80))  # a hunt folder, 80 columns
    assert shown.returncode == 0 and "Blind spots found" in shown.stdout
    table = shown.stdout.split("Blind spots found", 1)[1]
    assert "95% CI" in table and "baseline" in table and "p adj." in table
    assert all(len(line) <= 80 for line in shown.stdout.splitlines())


@pytest.mark.slow
def test_a_tampered_hunt_json_is_refused_with_its_path(tmp_path, gold):
    items, _ = load_gold_items(str(gold))
    out = tmp_path / "hunt"
    hunt_with(PlantedJudge(items, FOUR_SPOTS, noise=10), gold, out, tmp_path, budget="600")
    data = json.loads((out / "hunt.json").read_text())
    for change in ({"miss_rate": float("nan")}, {"interval": [2.0, -1.0]},
                   {"misses": 10**6}, {"p_adjusted": -0.5}):
        tampered = {**data, "findings": [{**data["findings"][0], **change}]}
        (out / "hunt.json").write_text(json.dumps(tampered))
        done = fbi("report", str(out), env=env_for(tmp_path))
        assert done.returncode == 2, change
        assert str(out / "hunt.json") in done.stderr and "Traceback" not in done.stderr


def test_hunt_md_escapes_what_the_dataset_and_the_judge_wrote():
    from fbi.findings import HuntExample, HuntFinding, HuntResult
    from fbi.report import hunt_markdown

    hostile = "<script>x</script> | [link](http://evil) `code` **bold**"
    example = HuntExample(instance_id=f"i|{hostile}", strategy="vanilla", question=hostile,
                          gold_answer=f"Line one.\nThe value is 12 {hostile}",
                          edited_answer=f"Line one.\nThe value is 13 {hostile}",
                          judge_reply=hostile)
    finding = HuntFinding(name="n", description=hostile, predicates=[hostile],
                          status="confirmed", confirmed=True, miss_rate=1.0,
                          interval=[0.8, 1.0], n=10, misses=10, unreadable=0,
                          baseline_rate=0.1, baseline_n=20, p_value=1e-6, p_adjusted=1e-4,
                          search_miss_rate=1.0, search_n=10, examples=[example])
    result = HuntResult(judge=hostile, model="m", strategies=["vanilla"], dataset="d",
                        seed=0, budget=100, calls=100, search_calls=60,
                        confirmation_calls=39, failed_calls=0, search_items=2,
                        held_out_items=2, operators=[], predicates=10, candidates=1,
                        alpha=0.05, margin=0.1, baseline="b", findings=[finding])
    page = hunt_markdown(result)
    assert "<script>" not in page and "](http://evil)" not in page
    assert "| " + hostile not in page
    assert "~~12~~**13**" in page and "> Line one.  " in page


@pytest.mark.slow
def test_confirmation_counts_what_it_shows(tmp_path, gold):
    """The held-out figures are counted over held-out probes only, apart from the
    search's, and the baseline leaves out what earlier confirmed findings explain."""
    import numpy as np

    from fbi.hunt._table import Phase

    items, _ = load_gold_items(str(gold))
    with ChatServer(PlantedJudge(items, FOUR_SPOTS, noise=10)) as server:
        stage = Hunt(items, HuntConfig(model=ModelSettings(model=JUDGE, api_base=server.url),
                                       budget=1200), tmp_path / "h", str(gold))
        stage.run(ModelClient(api_key="sk-test"))
    held_out = {i.id for i in stage.held_out}
    assert held_out.isdisjoint(i.id for i in stage.search_items)
    table = stage.table
    held = table.phase >= Phase.BASELINE
    for row in np.flatnonzero(held):
        assert table.calls[row][0].split("~", 1)[0] in held_out
    earlier = np.zeros(table.size, dtype=bool)
    by_name = {f.name: f for f in stage.result.findings}
    for decision in stage.summary.decisions:  # in the order they were tested
        if decision.status != "confirmed":
            continue
        finding = by_name[decision.name]
        covered = table.covered(tuple(finding.predicates)) & \
            (table.population == decision.found.population)
        own = held & covered & ~earlier
        assert finding.n == own.sum() and finding.misses == table.missed[own].sum()
        base = (table.phase == Phase.BASELINE) & ~covered & ~earlier & \
            (table.population == decision.found.population)
        assert finding.baseline_n == base.sum()
        earlier |= table.covered(tuple(finding.predicates))


@pytest.mark.slow
def test_each_candidate_gets_the_held_out_edits_its_search_evidence_needs(tmp_path, gold):
    """A candidate's held-out edits number what give its test 90% power at the rates its
    search evidence bounds — worked here with statsmodels' sample size (margin 0: the
    plain score test) and one-sided 95% Wilson bounds — and when every candidate has
    them, the baseline stops once that many random edits lie outside every candidate:
    the hunt ends under its budget."""
    import math

    from statsmodels.stats.proportion import (
        proportion_confint,
        samplesize_proportions_2indep_onetail,
    )

    from fbi.hunt._planner import CANDIDATE_CAP
    from fbi.hunt._table import Phase

    items, _ = load_gold_items(str(gold))
    spots = SeveralSpots({"numbers": (FOUR_SPOTS.spots["numbers"][0], 0.95)})
    with ChatServer(PlantedJudge(items, spots, noise=10)) as server:
        # two operators, one the judge misses: one candidate, well supported
        stage = Hunt(items, HuntConfig(model=ModelSettings(model=JUDGE, api_base=server.url),
                                       budget=3000, margin=0.0,
                                       operators=("number-errors", "grammar")),
                     tmp_path / "h", str(gold))
        stage.run(ModelClient(api_key="sk-test"))
    table, candidates = stage.table, stage.summary.candidates
    needs = []
    for index, found in enumerate(candidates):
        evidence = found.scored
        low = proportion_confint(evidence.misses, evidence.n, 0.1, "wilson")[0]
        high = proportion_confint(evidence.outside_misses, evidence.outside_n, 0.1,
                                  "wilson")[1]
        assert low > high, evidence
        needs.append(max(20, math.ceil(samplesize_proportions_2indep_onetail(
            low - high, high, 0.9, 1, 0.05 / len(candidates), alternative="larger"))))
        drawn = ((table.phase == Phase.CANDIDATE) & (table.candidate == index)).sum()
        assert drawn == needs[-1] < CANDIDATE_CAP, (found.description, evidence)
    outside = table.phase == Phase.BASELINE
    for found in candidates:
        outside &= ~table.covered(found.description)
    assert int(outside.sum()) == max(needs) and stage.result.calls < 3000
    assert [f.description for f in stage.result.confirmed] in (
        ["number-errors edits"], ["edits changing digits"])
