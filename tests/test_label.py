"""`fbi label` (issue 53): the planner's order (proportional at every prefix, worked by
hand; unbiased and covering by Monte Carlo), the labelling TUI through Textual's pilot,
the file `--human` reads, several annotators' agreement, and bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fbi.annotate.labelling import LabelItem, LabellingApp, gold_first
from openai_server import ChatServer
from planted_judges import PlantedJudge, misses_nothing
from statsmodels.stats.proportion import proportion_confint

from fbi import load_dataset
from fbi.cli import main
from fbi.runs import load_run
from fbi.trust import LabelFile, label_plan, read_human_labels, systematic_order

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_every_prefix_holds_each_stratum_in_proportion():
    """Strata of 6, 3 and 1 items (10 in all). Up to the key τ of its last item, a
    prefix holds ⌊τN_h − U_h⌋ + 1 items of stratum h: within one of τN_h (systematic
    sampling's keys (j + U_h)/N_h). Against n·N_h/N, the prefix's size, each stratum's
    miss of τN_h moves n too, by less than one each: less than 1 + 3·N_h/N in all — for
    these strata, under 2 (1.8 for the largest)."""
    strata = {**{f"a{k}": "A" for k in range(6)}, **{f"b{k}": "B" for k in range(3)},
              "c0": "C"}
    sizes = Counter(strata.values())
    for seed in range(50):
        order = systematic_order(strata, seed)
        assert sorted(order) == sorted(strata)
        for n in range(1, 11):
            held = Counter(strata[i] for i in order[:n])
            for stratum, size in sizes.items():
                assert abs(held[stratum] - n * size / 10) < 1 + 3 * size / 10, (seed, n)


@pytest.mark.slow
def test_the_labelled_share_is_unbiased_and_its_interval_covers():
    """A population of 1,200 items in six strata whose judge–person agreement differs
    (0.97 … 0.45). Over 2,000 seeds, the first 120 items of the stratified order: the
    mean of the labelled agreement is the population's (within three standard errors of
    the simulation), a 90% Wilson interval (statsmodels') covers it at least 90% of the
    time within simulation error, and the estimate varies less than under a uniform
    order — proportional allocation's variance never exceeds a simple random sample's."""
    rates = [0.97, 0.9, 0.8, 0.65, 0.55, 0.45]
    sizes = [400, 300, 200, 150, 100, 50]
    rng = np.random.default_rng(11)
    strata, agree = {}, {}
    for h, (rate, size) in enumerate(zip(rates, sizes, strict=True)):
        for k in range(size):
            strata[f"s{h}-{k}"] = f"stratum {h}"
            agree[f"s{h}-{k}"] = bool(rng.uniform() < rate)
    truth = sum(agree.values()) / len(agree)
    estimates, covered = [], 0
    for seed in range(2000):
        first = systematic_order(strata, seed)[:120]
        hits = sum(agree[i] for i in first)
        estimates.append(hits / 120)
        low, high = proportion_confint(hits, 120, alpha=0.1, method="wilson")
        covered += low <= truth <= high
    uniform = []
    for seed in range(2000):
        chosen = np.random.default_rng(seed).choice(list(agree), 120, replace=False)
        uniform.append(sum(agree[i] for i in chosen) / 120)
    spread = np.std(estimates)
    assert abs(np.mean(estimates) - truth) < 3 * spread / np.sqrt(2000)
    assert covered / 2000 >= 0.9 - 3 * np.sqrt(0.09 / 2000)
    assert spread < np.std(uniform)


# ------------------------------------------------------------------ the TUI

@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("label") / "run"
    data = folder.parent / "two.jsonl"
    data.write_text("".join(json.dumps({
        "id": i.id, "category": i.category, "instruction": i.instruction,
        "gold_answer": i.gold_answer, "perturbed_answer": i.perturbed_answer}) + "\n"
        for i in INSTANCES if i.category in ("entity", "spelling")))
    with ChatServer(script=PlantedJudge(INSTANCES, misses_nothing)) as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--dataset", str(data), "--output",
            str(folder), "--api-base", server.url, "--no-cache"], env=ENV)
    assert result.exit_code == 0, result.output
    return folder


async def label(run_dir: Path, output: Path, annotator: str, *keys: str):
    """Press keys in the labelling TUI; the app and what its screen shows at the end."""
    run = load_run(run_dir, full=False)
    plan = label_plan([run], "stratified", 0)
    items = [LabelItem(run.instances[i], gold_first(i, 0)) for i in plan.order]
    app = LabellingApp(items, LabelFile(output, "stratified", 0), annotator)
    async with app.run_test(size=(100, 40)) as pilot:
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        shown = {part: str(app.query_one(f"#{part}").render())
                 for part in ("status", "question", "answer1", "answer2")}
    return app, shown, plan


async def test_labels_are_saved_in_the_plan_s_order_and_read_by_human(run_dir, tmp_path):
    """Keys 1, 2, t label the first three items of the plan; the verdict depends on
    which answer was Answer 1 (a seeded coin flip): 1 on a gold-first item is "a". Space
    skips (not saved), z takes the last label back. The file is what --human reads."""
    out = tmp_path / "labels.csv"
    app, shown, plan = await label(run_dir, out, "ana", "1", "2", "t", "space", "z")
    rows = LabelFile(out, "stratified", 0).rows
    assert [r.instance_id for r in rows] == plan.order[:2]  # the third taken back
    for row, key in zip(rows, "12", strict=True):
        first = gold_first(row.instance_id, 0)
        assert row.shown_first == ("gold" if first else "perturbed")
        assert row.verdict == {("1", True): "a", ("2", True): "b", ("1", False): "b",
                               ("2", False): "a"}[(key, first)]
    assert app.added == 2
    # the item taken back is shown again, where the skip had moved on from
    third = load_run(run_dir, full=False).instances[plan.order[2]]
    assert shown["question"] == third.question
    assert {shown["answer1"], shown["answer2"]} == {third.gold_answer,
                                                     third.perturbed_answer}
    assert "2 of 6 labelled by ana" in shown["status"]
    run = load_run(run_dir, full=False)
    labels, _ = read_human_labels(out, run.instances)
    assert [(x.instance_id, x.verdict, x.annotator) for x in labels] == \
        [(r.instance_id, r.verdict, "ana") for r in rows]


async def test_a_second_session_resumes_and_two_annotators_agree(run_dir, tmp_path):
    out = tmp_path / "labels.csv"
    await label(run_dir, out, "ana", "1", "1")
    _, _, plan = await label(run_dir, out, "ana", "1")  # resumes at the third
    assert [r.instance_id for r in LabelFile(out, "stratified", 0).rows] == plan.order[:3]
    await label(run_dir, out, "ben", "1", "1", "2")  # the same order for everyone
    result = CliRunner().invoke(main, ["label", str(run_dir), "--output", str(out),
                                       "--annotator", "ana", "--agreement"],
                                terminal_width=120)
    assert result.exit_code == 0, result.output
    assert "Cohen's κ ana × ben" in result.output and "over 3 items" in result.output


def test_bad_input_is_one_message(run_dir, tmp_path):
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("id,label\nx,a\n")
    ours = tmp_path / "labels.csv"
    LabelFile(ours, "stratified", 0).add("not-in-the-run", "a", "ana", "gold")
    first = next(iter(load_run(run_dir, full=False).instances))
    other_plan = tmp_path / "uniform.csv"
    LabelFile(other_plan, "uniform", 0).add(first, "a", "ana", "gold")
    cases = [
        (theirs, [], "not a labels file"),
        (ours, [], "which no run given holds"),
        (other_plan, [], "--plan uniform --seed 0"),
    ]
    for path, extra, message in cases:
        result = CliRunner().invoke(main, ["label", str(run_dir), "--output", str(path),
                                           "--annotator", "ana", *extra],
                                    terminal_width=200)
        assert result.exit_code == 2, (path, result.output)
        assert message in " ".join(result.output.split()), result.output
    assert theirs.read_text() == "id,label\nx,a\n"  # never written over
    result = CliRunner().invoke(main, ["trust", str(run_dir), "--human", str(ours)],
                                terminal_width=200)
    assert result.exit_code == 2 and "is in no run given" in " ".join(result.output.split())
