"""Issue 24, item 2: a judge against human labels — agreement with and without ties as
MT-Bench counts it, Cohen's κ (sklearn), Spearman and Kendall (scipy), bootstrap
intervals, and the people's own agreement as the ceiling."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import cohen_kappa_score

from fbi.cli import main
from fbi.judge._read import JudgmentVerdict
from fbi.metrics import HumanLabel, human_agreement
from fbi.taxonomy import get_category


def single(instance_id, category, gold, perturbed, judge="j", strategy="vanilla"):
    ability = get_category(category).ability
    return [JudgmentVerdict(instance_id, judge, strategy, "single", role, ability, category,
                            "ok", score, None, (1, 10), 0)
            for role, score in (("gold", gold), ("perturbed", perturbed))]


def pairwise(instance_id, category, gold_first, perturbed_first):
    ability = get_category(category).ability
    return [JudgmentVerdict(instance_id, "j", "pairwise", "pairwise", role, ability,
                            category, "ok", None, verdict, None, 0)
            for role, verdict in (("gold-first", gold_first),
                                  ("perturbed-first", perturbed_first))]


@pytest.mark.slow
def test_agreement_kappa_and_correlations_against_hand_sklearn_and_scipy():
    rng = random.Random(5)
    judgments, labels, judge_votes, human_votes = [], [], [], []
    judge_scores, human_scores = [], []
    for n in range(60):
        category = ("entity", "grammar")[n % 2]
        gold, perturbed = rng.randint(1, 10), rng.randint(1, 10)
        judgments += single(f"i{n}", category, gold, perturbed)
        verdict = "a" if gold > perturbed else "b" if gold < perturbed else "tie"
        for annotator in ("ann", "ben")[: 1 + n % 2]:  # odd instances: two people
            said = rng.choice(["a", "a", "b", "tie", verdict])
            labels.append(HumanLabel(f"i{n}", annotator, said))
            judge_votes.append(verdict)
            human_votes.append(said)
        human = rng.randint(1, 10)
        labels.append(HumanLabel(f"i{n}", "ann", None, human, "perturbed"))
        judge_scores.append(perturbed)
        human_scores.append(human)
    result = human_agreement(judgments, labels, resamples=2000)
    (overall,) = [r for r in result.judge if r.level == "overall"]
    pairs = list(zip(judge_votes, human_votes, strict=True))
    assert overall.n_with_ties == len(pairs)
    assert overall.agreement_with_ties == pytest.approx(
        sum(a == b for a, b in pairs) / len(pairs))
    no_ties = [(a, b) for a, b in pairs if "tie" not in (a, b)]
    assert overall.n_without_ties == len(no_ties)
    assert overall.agreement_without_ties == pytest.approx(
        sum(a == b for a, b in no_ties) / len(no_ties))
    assert overall.kappa == pytest.approx(cohen_kappa_score(judge_votes, human_votes))
    assert overall.spearman == pytest.approx(spearmanr(judge_scores, human_scores).statistic)
    assert overall.kendall == pytest.approx(kendalltau(judge_scores, human_scores).statistic)
    for name in ("agreement_with_ties", "kappa", "spearman", "kendall"):
        low, value, high = (getattr(overall, f) for f in (f"{name}_ci_low", name,
                                                          f"{name}_ci_high"))
        assert low <= value <= high
    # the interval is the instance bootstrap: check κ's against one done the slow way
    ids = sorted({label.instance_id for label in labels})
    by_instance = {i: [(a, b) for (a, b), label in zip(pairs, [x for x in labels if x.verdict],
                                                          strict=True)
                       if label.instance_id == i] for i in ids}
    draws = []
    generator = np.random.default_rng(1)
    for _ in range(2000):
        picked = [p for k in generator.integers(0, len(ids), len(ids))
                  for p in by_instance[ids[k]]]
        draws.append(cohen_kappa_score([a for a, _ in picked], [b for _, b in picked]))
    low, high = np.percentile(draws, [2.5, 97.5])
    assert overall.kappa_ci_low == pytest.approx(low, abs=0.05)
    assert overall.kappa_ci_high == pytest.approx(high, abs=0.05)
    # people against each other: the odd instances' two votes, compared by hand
    (ceiling,) = [r for r in result.humans if r.level == "overall"]
    twice = [(x.verdict, y.verdict) for x, y in itertools.pairwise(labels)
             if x.verdict and y.verdict and x.instance_id == y.instance_id]
    assert ceiling.n_with_ties == len(twice) == 30
    assert ceiling.agreement_with_ties == pytest.approx(
        sum(a == b for a, b in twice) / len(twice))
    assert {r.group for r in result.judge} == {"all", "F", "LF", "entity", "grammar"}


def test_pairwise_verdicts_map_as_mt_bench_counts_them():
    """G → a, P → b, anything else (both good, both bad, inconsistent) a tie, which
    agrees with a human tie; reference-guided strategies give no verdict."""
    judgments = (pairwise("g", "entity", "gold", "gold") + pairwise("p", "entity",
                 "perturbed", "perturbed") + pairwise("x", "entity", "gold", "perturbed"))
    labels = [HumanLabel("g", verdict="a"), HumanLabel("p", verdict="a"),
              HumanLabel("x", verdict="tie")]
    (overall,) = [r for r in human_agreement(judgments, labels).judge
                  if r.level == "overall"]
    assert overall.n_with_ties == 3 and overall.agreement_with_ties == pytest.approx(2 / 3)
    assert overall.n_without_ties == 2 and overall.agreement_without_ties == 0.5


@pytest.mark.slow
def test_report_human_through_the_cli(tmp_path):
    """A loopback judge over the sample; labels in a CSV with two annotators: the report
    holds the agreement (worked out here from judgments.jsonl), a table in report.md and
    a chart in report.html; a bad row is one message naming the file and line."""
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer() as server:
        result = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/j", "--api-base", server.url, "--dataset",
            "sample", "--strategy", "vanilla", "--output", str(tmp_path / "run")], env=env)
        assert result.exit_code == 0, result.output
    scores: dict[str, dict[str, int]] = {}
    for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines():
        record = json.loads(line)
        scores.setdefault(record["instance_id"], {})[record["role"]] = record["score"]
    rows, pairs = ["instance_id,annotator,verdict"], []
    for n, (instance_id, roles) in enumerate(sorted(scores.items())):
        verdict = "a" if roles["gold"] > roles["perturbed"] else \
            "b" if roles["gold"] < roles["perturbed"] else "tie"
        said = ("a", "b", "tie")[n % 3]
        rows.append(f"{instance_id},ann,{said}")
        rows.append(f"{instance_id},ben,a")
        pairs += [(verdict, said), (verdict, "a")]
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(rows) + "\n")
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "out"), "--human", str(labels)],
                                terminal_width=200)
    assert report.exit_code == 0, report.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (overall,) = [r for r in summary["human_agreement"]["judge"] if r["level"] == "overall"]
    assert overall["n_with_ties"] == len(pairs)
    assert overall["agreement_with_ties"] == pytest.approx(
        sum(a == b for a, b in pairs) / len(pairs))
    assert overall["kappa"] == pytest.approx(cohen_kappa_score(*zip(*pairs, strict=True)))
    assert "Judges against people" in report.output
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## People against each other (the ceiling)" in markdown
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="human"' in html and "dashed: people with each other" in html

    labels.write_text(rows[0] + "\n" + rows[1] + "\n" + rows[1].replace(",ann,a", ",ann,maybe")
                      .replace(",ann,b", ",ann,maybe").replace(",ann,tie", ",ann,maybe") + "\n")
    refused = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                        str(tmp_path / "out2"), "--human", str(labels)])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert f"{labels}, line 3" in refused.output and "give a, b or tie" in refused.output


INSTANCE = type("Instance", (), {"instruction": "q", "perturbed_answer": "p", "id": "x"})()


@pytest.mark.parametrize("rows, said", [
    (["i1,ann,tiebreaker-b,"], "verdict 'tiebreaker-b'"),
    (["i1,ann,tie-ish,"], "verdict 'tie-ish'"),
    (["i1,ann,,nan"], "not a finite number"),
    (["i1,ann,,inf"], "not a finite number"),
    (["i1,ann,,-Infinity"], "not a finite number"),
    (["i1,ann,a,", "i2,ann,b,", "i1,ann,b,"], "annotator 'ann' labels instance 'i1' again "
                                              "(first at line 2)"),
    (["i1,,a,", "i1,,a,"], "annotator 'human' labels instance 'i1' again"),
    (["i1,ann,,7", "i1,ann,,8"], "labels instance 'i1' again"),
])
def test_hostile_human_labels_are_refused_with_their_line(tmp_path, rows, said):
    """Issue 38: labels are read exactly: known verdict words only (a prefix of "tie" is
    not a tie), finite scores only (one NaN turns a correlation), and one label per person,
    instance and kind (a person's duplicated rows would make a 100% human ceiling)."""
    from fbi.errors import InputError
    from fbi.trust import read_human_labels

    path = tmp_path / "labels.csv"
    path.write_text("instance_id,annotator,verdict,score\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError) as refused:
        read_human_labels(path, {"i1": INSTANCE, "i2": INSTANCE})
    assert said in str(refused.value) and str(path) in str(refused.value)


def test_one_persons_verdict_and_score_of_an_instance_are_both_kept(tmp_path):
    from fbi.trust import read_human_labels

    path = tmp_path / "labels.csv"
    path.write_text("instance_id,annotator,verdict,score,scored\ni1,ann,a,,\n"
                    "i1,ann,,3,perturbed\ni1,ann,,9,gold\ni1,ben,tie (bothbad),,\n")
    labels, _ = read_human_labels(path, {"i1": INSTANCE})
    assert [(x.annotator, x.verdict, x.score, x.answer) for x in labels] == [
        ("ann", "a", None, "perturbed"), ("ann", None, 3.0, "perturbed"),
        ("ann", None, 9.0, "gold"), ("ben", "tie", None, "perturbed")]


@pytest.mark.parametrize("row, said", [
    ({"instance_id": "i1", "annotator": True, "verdict": "a"}, "annotator true is not text"),
    ({"instance_id": "i1", "annotator": "ann", "verdict": ["a"]}, "verdict [\"a\"] is not"),
    ({"instance_id": True, "verdict": "a"}, "instance_id true is not text"),
])
def test_a_label_field_that_is_no_text_is_refused_not_coerced(tmp_path, row, said):
    """Issue 50: JSON true is no annotator named "True", a list no verdict."""
    import json

    from fbi.errors import InputError
    from fbi.trust import read_human_labels

    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError) as refused:
        read_human_labels(path, {"i1": INSTANCE})
    assert said in str(refused.value) and "line 1" in str(refused.value)
