"""`fbi trust` (issue 43) end to end: runs made against loopback judges whose doubt is
planted here, human labels whose truth is known, and every figure of trust.json checked
against one worked by hand from judgments.jsonl (the paper's procedure by hand, scipy's
binomial for the bounds); a jury and a cascade; bad input gets one message, exit 2."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from scipy.stats import binom

from fbi import load_dataset
from fbi.cli import main

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def section(prompt: str, name: str) -> str | None:
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return found.group(1) if found else None


def doubtful_judge(salt: str = "", doubt: int = 3):
    """Right on most instances; on one in ``doubt`` (by the instance) right only when a
    hash of the prompt, the asking's seed and ``salt`` says so — so its --samples
    disagree exactly where it is unreliable. ``doubt`` 0: always right."""
    golds = {i.instruction: i.gold_answer for i in INSTANCES}
    hard = {i.instruction for i in INSTANCES
            if doubt and int(hashlib.sha256(i.id.encode()).hexdigest(), 16) % doubt == 0}

    def script(request: dict) -> str:
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        question = section(prompt, "question")
        if question not in golds:
            return "OK"
        luck = hashlib.sha256(f"{prompt}|{request.get('seed')}|{salt}".encode()).digest()
        right = question not in hard or luck[0] % 2 == 0
        if "<answer_a>" in prompt:
            gold_slot = "A" if section(prompt, "answer_a") == golds[question] else "B"
            verdict = gold_slot if right else {"A": "B", "B": "A"}[gold_slot]
            return json.dumps({"explanation": "Compared.", "verdict": verdict})
        low, high = (int(x) for x in re.findall(r"an integer from (\d+) to (\d+)",
                                                  prompt)[-1])
        is_gold = section(prompt, "answer") == golds[question]
        return json.dumps({"explanation": "Checked.",
                           "score": (high if is_gold else low) if right else
                           (low if is_gold else high)})
    return script


def evaluate(folder: Path, script, judge: str = "openai/judge", samples: int = 5,
             strategy: str = "vanilla") -> Path:
    with ChatServer(script=script) as server:
        done = CliRunner().invoke(main, [
            "evaluate", "--judge", judge, "--api-base", server.url, "--dataset", "sample",
            "--strategy", strategy, "--samples", str(samples), "--output", str(folder),
            "--no-cache", "--label", folder.name], env=ENV)
    assert done.exit_code == 0, done.output
    return folder


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> Path:
    """People say the gold answer is better on every planted error."""
    path = tmp_path_factory.mktemp("labels") / "labels.csv"
    path.write_text("instance_id,verdict,annotator\n" + "".join(
        f"{i.id},a,ann\n" for i in INSTANCES if i.category != "score-invariant"))
    return path


@pytest.fixture(scope="module")
def doubtful(tmp_path_factory) -> Path:
    return evaluate(tmp_path_factory.mktemp("runs") / "doubtful", doubtful_judge())


def records(folder: Path) -> list[dict]:
    latest = {}
    for line in (folder / "judgments.jsonl").read_text().splitlines():
        record = json.loads(line)
        latest[record["call_id"]] = record
    return list(latest.values())


def items_by_hand(folder: Path) -> dict[str, tuple[str, float]]:
    """Instance → (majority verdict of the K askings, the share giving it), the verdict
    of an asking a when the gold answer scored higher, b lower, tie equal; verdicts tied
    for the majority go to the first of a, b, tie."""
    scores: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for r in records(folder):
        if r["status"] == "ok":
            scores[(r["instance_id"], r["sample"])][r["role"]] = r["score"]
    verdicts: dict[str, list[str]] = defaultdict(list)
    for (instance, _), roles in scores.items():
        if len(roles) == 2:
            gold, perturbed = roles["gold"], roles["perturbed"]
            verdicts[instance].append("a" if gold > perturbed else "b" if gold < perturbed
                                      else "tie")
    items = {}
    for instance, votes in verdicts.items():
        counts = Counter(votes)
        top = max(("a", "b", "tie"), key=lambda v: (counts[v], -("a", "b", "tie").index(v)))
        items[instance] = (top, counts[top] / len(votes))
    return items


def trust(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["trust", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.mark.slow
def test_the_guarantee_on_a_run_worked_by_hand(doubtful, labels, tmp_path):
    code, output = trust(str(doubtful), "--human", str(labels), "--target", "0.8",
                         "--delta", "0.1", "--test-share", "0", "--min-items", "5",
                         "--output", str(tmp_path / "out"))
    assert code == 0, output
    report = json.loads((tmp_path / "out" / "trust.json").read_text())
    (result,) = report["results"]
    for field in ("certified", "threshold", "coverage", "agreement_lower_bound", "target",
                  "delta", "n_calibration"):
        assert field in result
    items = items_by_hand(doubtful)
    truth = {i.id: "a" for i in INSTANCES if i.category != "score-invariant"}
    labelled = sorted(((c, v != truth[i]) for i, (v, c) in items.items() if i in truth),
                      key=lambda x: -x[0])
    assert result["n_calibration"] == len(labelled)
    # the steps: each distinct confidence from the top, with its count and errors
    thresholds = sorted({c for c, _ in labelled}, reverse=True)
    expected_steps = []
    for threshold in thresholds:
        chosen = [wrong for c, wrong in labelled if c >= threshold]
        if len(chosen) >= 5:
            expected_steps.append((threshold, len(chosen), sum(chosen)))
    steps = [(s["threshold"], s["n"], s["errors"]) for s in result["steps"]]
    assert steps == expected_steps[:len(steps)]
    for step in result["steps"]:
        if step["errors"] < step["n"]:
            assert binom.cdf(step["errors"], step["n"], step["risk_upper"]) == \
                pytest.approx(0.1)
        assert step["passed"] == (step["risk_upper"] <= 0.2 + 1e-12)
    assert result["steps"][-1]["passed"] is False or len(steps) == len(expected_steps)
    assert result["certified"]  # the easy instances are right at full confidence
    certified = [s for s in result["steps"] if s["passed"]][-1]
    assert result["threshold"] == certified["threshold"]
    assert result["agreement_lower_bound"] == pytest.approx(1 - certified["risk_upper"])
    covered = sum(c >= result["threshold"] for _, c in items.values())
    assert result["coverage"] == pytest.approx(covered / len(items))
    assert f"may be used without review on {100 * result['coverage']:.0f}% of items" in \
        result["sentence"]
    assert "may be used without review" in " ".join(output.split())
    assert result["grid"] == "distinct"  # samples of 5: a discrete confidence
    # every label says "a": said in one sentence (issue 53)
    (one_sided,) = [n for n in report["notes"] if "every labelled instance" in n]
    assert "human verdict is 'a'" in one_sided and "both kinds" in one_sided


@pytest.mark.slow
def test_a_jury_of_three_judges(tmp_path, labels):
    """Three judges doubtful on the same instances, each with its own luck: an item's
    confidence is the share of the three giving the majority verdict."""
    runs = [evaluate(tmp_path / f"judge-{salt}", doubtful_judge(salt), samples=1)
            for salt in "xyz"]
    code, output = trust(*map(str, runs), "--human", str(labels), "--test-share", "0",
                         "--min-items", "5", "--output", str(tmp_path / "out"))
    assert code == 0, output
    (result,) = json.loads((tmp_path / "out" / "trust.json").read_text())["results"]
    assert result["confidence"] == "jury" and result["judge"].startswith("jury: ")
    first = {}
    for run in runs:
        for instance, (verdict, _) in items_by_hand(run).items():
            first.setdefault(instance, []).append(verdict)
    shares = sorted({Counter(v).most_common(1)[0][1] / 3 for v in first.values()},
                    reverse=True)
    assert {s["threshold"] for s in result["steps"]} <= set(shares)


@pytest.mark.slow
def test_a_cascade_saves_against_the_strongest_judge(tmp_path, labels):
    """A cheap doubtful judge, then a strong one always right: the cheap one takes the
    items it is sure of, the strong one the rest; the cost against the strong judge
    alone, from the runs' own call costs."""
    cheap = evaluate(tmp_path / "cheap", doubtful_judge(), judge="openai/gpt-4o-mini")
    strong = evaluate(tmp_path / "strong", doubtful_judge(doubt=0), judge="openai/gpt-4o")
    code, output = trust("--judge", str(cheap), "--judge", str(strong), "--human",
                         str(labels), "--test-share", "0", "--min-items", "5",
                         "--output", str(tmp_path / "out"))
    assert code == 0, output
    (result,) = json.loads((tmp_path / "out" / "trust.json").read_text())["results"]
    cheap_stage, strong_stage = result["stages"]
    assert cheap_stage["certified"] and strong_stage["certified"]
    cheap_items = items_by_hand(cheap)
    takes = {i for i, (_, c) in cheap_items.items() if c >= cheap_stage["threshold"]}
    assert cheap_stage["share"] == pytest.approx(len(takes) / len(cheap_items))
    costs = defaultdict(lambda: defaultdict(float))
    for name, folder in (("cheap", cheap), ("strong", strong)):
        for r in records(folder):
            costs[name][r["instance_id"]] += r["cost"]
    total = sum(costs["cheap"][i] + (0 if i in takes else costs["strong"][i])
                for i in cheap_items)
    alone = sum(costs["strong"][i] for i in cheap_items)
    assert result["cost_per_item"] == pytest.approx(total / len(cheap_items))
    assert result["cost_saved"] == pytest.approx(1 - total / alone)
    assert result["cost_saved"] > 0


@pytest.mark.parametrize("args, message", [
    (["--target", "1.2"], "--target 1.2: must lie strictly between 0 and 1"),
    (["--delta", "0"], "--delta 0.0: must lie strictly between 0 and 1"),
    (["--min-items", "500"], "too few labels"),
])
def test_bad_input_gets_one_message(doubtful, labels, args, message):
    code, output = trust(str(doubtful), "--human", str(labels), *args)
    assert code == 2, output
    assert message in output and "Traceback" not in output


def test_a_run_without_a_confidence_signal_is_refused(tmp_path, labels):
    plain = evaluate(tmp_path / "plain", doubtful_judge(), samples=1)
    code, output = trust(str(plain), "--human", str(labels))
    assert code == 2 and "no confidence signal" in output and "--samples" in output


@pytest.mark.slow
def test_the_report_certifies_each_judge_in_every_format(doubtful, labels, tmp_path):
    plain = evaluate(tmp_path / "plain", doubtful_judge(), samples=1)
    result = CliRunner().invoke(main, ["report", str(doubtful), str(plain), "--human",
                                       str(labels), "--output", str(tmp_path / "out"),
                                       "--target", "0.8"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_judge = {c["judge"]: c for c in summary["certificates"]}
    certified = by_judge["doubtful"]
    assert certified["trust"]["certified"]
    # every labelled instance calibrates: the steps' counts by hand, as above
    items = items_by_hand(doubtful)
    labelled = [i for i in items if i in {x.id for x in INSTANCES
                                          if x.category != "score-invariant"}]
    assert certified["trust"]["n_calibration"] == len(labelled)
    coverage = certified["trust"]["coverage"]
    assert (f"this judge may be used without review on {100 * coverage:.0f}% of items "
            "with ≥ 80% agreement, δ = 0.1") in certified["sentence"]
    assert by_judge["plain"]["trust"] is None
    assert "nothing is certified" in by_judge["plain"]["sentence"]
    assert "no confidence signal" in by_judge["plain"]["sentence"]
    markdown = (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    assert "## Certificate: what the figures allow" in markdown
    assert 'id="certificate"' in html and "may be used without review" in html
    assert "may be used without review" in " ".join(result.output.split())
    # issue 53: what is certified is "agreement ≥ target", never the bound at the chosen
    # threshold (chosen by the same data, it is no guarantee)
    assert "agreement ≥ 80.0% (δ = 0.1)" in markdown
    assert "certified agreement" not in markdown + html + result.output


def test_blind_spots_are_categories_missed_more_often_than_not():
    """A category is a blind spot when its miss rate's 95% interval lies above one half:
    12 of 12 missed (Wilson [0.757, 1]) is, 3 of 3 ([0.438, 1]) is not."""
    from types import SimpleNamespace

    from fbi.metrics import GroupRate, wilson_interval
    from fbi.trust._certificate import _blind_spots

    def row(group, missed, n):
        low, high = wilson_interval(missed, n)
        return GroupRate(judge="J", strategy="vanilla", paradigm="single", level="category",
                         group=group, instances=n, judged=n, n=n, detected=n - missed,
                         undetected=missed, unparseable=0, missing=0, rate=missed / n,
                         ci_low=low, ci_high=high, ci_method="wilson", worst_case_rate=None,
                         paper_rate=None)

    run = SimpleNamespace(label="J", spec=SimpleNamespace(model="openai/j"))
    spots = _blind_spots(run, "vanilla", [row("entity", 12, 12), row("spelling", 3, 3),
                                          row("grammar", 1, 12)], [])
    assert [s.name for s in spots] == ["entity"]
    assert spots[0].low == pytest.approx(0.7575, abs=1e-3)


def test_logprob_confidence_worked_by_hand(tmp_path, labels):
    """With --logprobs the loopback server makes each score token uncertain (the score 0.6,
    one below it 0.3): an item's confidence is the probability of its most probable
    verdict, P(a) = Σ p_gold(i)·p_perturbed(j) over i > j (b: i < j, tie: i = j)."""
    with ChatServer(script=doubtful_judge()) as server:
        done = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/judge", "--api-base", server.url, "--dataset",
            "sample", "--strategy", "vanilla", "--logprobs", "--output",
            str(tmp_path / "run"), "--no-cache"], env=ENV)
    assert done.exit_code == 0, done.output
    code, output = trust(str(tmp_path / "run"), "--human", str(labels), "--confidence",
                         "logprob", "--test-share", "0", "--min-items", "5", "--output",
                         str(tmp_path / "out"))
    assert code == 0, output
    (result,) = json.loads((tmp_path / "out" / "trust.json").read_text())["results"]
    assert result["confidence"] == "logprob"
    roles = defaultdict(dict)
    for r in records(tmp_path / "run"):
        roles[r["instance_id"]][r["role"]] = {int(k): v for k, v in
                                             r["score_probabilities"].items()}
    truth = {i.id for i in INSTANCES if i.category != "score-invariant"}
    labelled = []
    for instance, pair in roles.items():
        p = {"a": 0.0, "b": 0.0, "tie": 0.0}
        for g, pg in pair["gold"].items():
            for q, pq in pair["perturbed"].items():
                p["a" if g > q else "b" if g < q else "tie"] += pg * pq
        verdict = max(("a", "b", "tie"), key=lambda v: (p[v], -("a", "b", "tie").index(v)))
        if instance in truth:
            labelled.append((p[verdict], verdict != "a"))
    labelled.sort(key=lambda x: -x[0])
    # the first threshold tried: the highest confidence with at least 5 items at or above
    first_threshold = next(c for c, _ in labelled
                           if sum(d >= c - 1e-12 for d, _ in labelled) >= 5)
    first = result["steps"][0]
    top = [wrong for c, wrong in labelled if c >= first_threshold - 1e-12]
    assert first["threshold"] == pytest.approx(first_threshold)
    assert (first["n"], first["errors"]) == (len(top), sum(top))
    assert result["n_calibration"] == len(labelled)


@pytest.mark.slow
def test_a_hunts_confirmed_findings_are_blind_spots_of_the_same_judge(tmp_path):
    """A judge blind to long additions: `fbi hunt` confirms the blind spot; given to the
    report beside a run of the same judge, its findings join the certificate's blind
    spots with their miss rates."""
    from planted_judges import PlantedJudge, misses_long_additions, synthetic_gold

    from fbi.datasets import load_gold_items

    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(row) + "\n" for row in synthetic_gold()),
                    encoding="utf-8")
    judge = PlantedJudge(load_gold_items(str(gold))[0], misses_long_additions)
    env = {**ENV, "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(judge) as server:
        hunt = CliRunner().invoke(main, [
            "hunt", "--judge", "openai/planted", "--api-base", server.url, "--dataset",
            str(gold), "--budget", "900", "--output", str(tmp_path / "hunt")], env=env)
        run = CliRunner().invoke(main, [
            "evaluate", "--judge", "openai/planted", "--api-base", server.url,
            "--dataset", "sample", "--strategy", "vanilla", "--output",
            str(tmp_path / "run")], env=env)
    assert hunt.exit_code == 0 and run.exit_code == 0, hunt.output + run.output
    findings = [f for f in json.loads((tmp_path / "hunt" / "hunt.json").read_text())[
        "findings"] if f["confirmed"]]
    assert findings
    labels = tmp_path / "labels.csv"
    labels.write_text("instance_id,verdict\n" + "".join(
        f"{i.id},a\n" for i in INSTANCES if i.category != "score-invariant"))
    done = CliRunner().invoke(main, ["report", str(tmp_path / "hunt"), str(tmp_path / "run"),
                                     "--human", str(labels), "--output",
                                     str(tmp_path / "out")], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    (certificate,) = json.loads((tmp_path / "out" / "summary.json").read_text())[
        "certificates"]
    spots = {s["name"]: s for s in certificate["blind_spots"] if s["source"] == "hunt"}
    assert set(spots) == {f["name"] for f in findings}
    for finding in findings:
        assert spots[finding["name"]]["rate"] == pytest.approx(finding["miss_rate"])
    assert "Blind spots: " in certificate["sentence"]


@pytest.mark.parametrize("width", [80, 120])
def test_every_trust_table_keeps_its_numbers_at_80_and_120_columns(doubtful, labels,
                                                                   tmp_path, width):
    """Issue 51: no column of `fbi trust` is cropped at 80 columns — a table too wide is
    continued below with its names repeated — and the figures printed are trust.json's."""
    result = CliRunner().invoke(main, [
        "trust", str(doubtful), "--human", str(labels), "--target", "0.8", "--delta",
        "0.1", "--min-items", "5", "--output", str(tmp_path / "out")],
        env={"COLUMNS": str(width)}, terminal_width=width)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    words = set(result.output.split())
    for column in ("confidence", "threshold", "coverage", "cal", "test", "saved", "judge",
                   "alone", "people", "PPI++", "worth", "plug-in", "labelled", "needed",
                   "more"):
        assert column in words, column
    assert "threshold*" in result.output.split()  # the bound's column, wrapped or not
    assert "and is no guarantee" in " ".join(result.output.split())
    report = json.loads((tmp_path / "out" / "trust.json").read_text())
    (certified,) = report["results"]
    for share in (certified["coverage"], certified["agreement_lower_bound"]):
        assert f"{100 * share:.1f}%" in words
    assert str(certified["n_calibration"]) in words
    for step in report["plan"]:
        assert str(step["labelled"]) in words
        assert step["needed"] is None or str(step["needed"]) in words


@pytest.mark.slow
def test_the_certificate_and_the_leaderboard_cost_the_same(tmp_path, labels):
    """Issue 53: the certificate said $1.15 per 1,000 judgments where the leaderboard
    said $0.82 for the same run. Both are now every paid call — each judgment's and its
    further samples' — over the judgments, worked here from judgments.jsonl."""
    run = evaluate(tmp_path / "priced", doubtful_judge(), judge="gpt-4o-mini", samples=2)
    lines = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    assert all(r["cost"] is not None and r["cost"] > 0 for r in lines)
    firsts = {r["call_id"] for r in lines if r.get("sample", 0) == 0}
    by_hand = 1000 * sum(r["cost"] for r in lines) / len(firsts)
    result = CliRunner().invoke(main, ["report", str(run), "--human", str(labels),
                                       "--output", str(tmp_path / "out")],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (row,) = summary["leaderboard"]
    (certificate,) = summary["certificates"]
    assert row["cost_per_1000"] == pytest.approx(by_hand)
    assert certificate["cost_per_1000"] == pytest.approx(by_hand)


def test_penalising_harmless_rewrites_is_a_blind_spot_too():
    """Issue 53: the certificate said "blind spots: none found" beside score-invariant
    rewrites retained 0.0%. A judge that changes its score on harmless rewrites more
    often than not (the retained share's 95% interval below one half) has that as a
    blind spot, its rate the share penalised."""
    from types import SimpleNamespace

    from fbi.metrics import GroupRate
    from fbi.metrics._rates import wilson_interval
    from fbi.trust._certificate import _blind_spots, _sentence

    def si(retained: int, n: int) -> GroupRate:
        low, high = wilson_interval(retained, n)
        return GroupRate(judge="j", strategy="vanilla", paradigm="single",
                         level="score-invariant", group="SI", rate=retained / n,
                         ci_low=low, ci_high=high, ci_method="wilson", instances=n,
                         judged=n, n=n, detected=n - retained, undetected=retained,
                         unparseable=0, missing=0, worst_case_rate=retained / n,
                         paper_rate=retained / n)

    run = SimpleNamespace(label="j", spec=SimpleNamespace(model="m"))
    (spot,) = _blind_spots(run, "vanilla", [si(0, 6)], [])
    assert (spot.source, spot.rate) == ("score-invariant", 1.0)
    assert spot.low == pytest.approx(1 - wilson_interval(0, 6)[1])  # 1 − 0.390 = 0.610
    assert _blind_spots(run, "vanilla", [si(3, 6)], []) == []  # not more often than not
    # 1 of 6 kept: its interval [0.030, 0.564] reaches one half, so not said
    assert _blind_spots(run, "vanilla", [si(1, 6)], []) == []
    sentence = _sentence("j", "vanilla", None, "no labels", [spot], [], None, None)
    assert "Blind spots: score-invariant rewrites (100% penalised)." in sentence


def test_too_few_instances_to_tell_is_never_none_found():
    """Issue 63: a category missed 7 of 9 times (78%: Wilson interval [45%, 94%] reaches
    one half) is no blind spot proven — and no evidence of none: the certificate says
    too few instances to tell, naming it, where it said "none found"."""
    from types import SimpleNamespace

    from fbi.metrics import GroupRate
    from fbi.metrics._rates import wilson_interval
    from fbi.report._certificate import _spots
    from fbi.trust import Certificate
    from fbi.trust._certificate import _blind_spots, _undecided

    low, high = wilson_interval(7, 9)
    assert low < 0.5 < high
    rate = GroupRate(judge="j", strategy="vanilla", paradigm="single", level="category",
                     group="entity", rate=7 / 9, ci_low=low, ci_high=high,
                     ci_method="wilson", instances=9, judged=9, n=9, detected=2,
                     undetected=7, unparseable=0, missing=0, worst_case_rate=7 / 9,
                     paper_rate=7 / 9)
    run = SimpleNamespace(label="j", spec=SimpleNamespace(model="m"))
    assert _blind_spots(run, "vanilla", [rate], []) == []
    (unsure,) = _undecided(run, "vanilla", [rate])
    assert (unsure.name, round(unsure.rate, 3)) == ("entity", 0.778)
    certificate = Certificate(judge="j", strategy="vanilla", trust=None, blind_spots=[],
                              undecided=[unsure], cost_per_1000=None, sentence="")
    assert _spots(certificate) == "too few instances to tell (1 category)"


def test_a_judge_given_no_weight_is_said_to_add_nothing():
    """Issue 53: on FBI-layout data nearly every label is "a"; PPI++ then gives the
    judge λ = 0, and "labels worth 177" read as a gain. Worked by hand: the people all
    say 1, so cov(Y, Ŷ) = 0 and λ = 0; the estimate is the people's alone."""
    from fbi.report._trust_output import labels_worth
    from fbi.trust._estimates import _estimate

    row = _estimate("j", "vanilla", "share", [1.0] * 4 + [0.0], [1.0] * 4 + [0.0],
                    [1.0, 0.0, 1.0, 1.0, 0.0])  # the judge tracks the people: λ > 0
    assert row.ppi_lambda and "λ = 0" not in row.ppi.note
    assert "no gain" not in labels_worth(row)
    flat = _estimate("j", "vanilla", "share", [1.0] * 5, [1.0, 0.0, 1.0, 0.0, 1.0],
                     [1.0, 0.0, 1.0, 1.0, 0.0])
    assert flat.ppi_lambda == 0 and "λ = 0" in flat.ppi.note
    assert flat.ppi.value == pytest.approx(1.0)  # the people's mean, nothing of the judge
    if flat.effective_labels is not None:
        assert labels_worth(flat).endswith("(no gain)")


def test_the_python_api_refuses_the_judges_the_cli_refuses(tmp_path):
    """One judge, a jury or a cascade of two or more — checked in the library (issue 52),
    before any label is read."""
    from fbi.errors import InputError
    from fbi.trust import TrustSettings, trust_runs

    missing = tmp_path / "no-labels.csv"
    for runs, cascade, message in (([], [], "which runs"), ([object()], [object()] * 2,
                                   "not both"), ([], [object()], "at least two")):
        with pytest.raises(InputError, match=message):
            trust_runs(runs, missing, TrustSettings(), cascade)


def test_labels_of_one_verdict_are_said_once_and_mixed_ones_not_at_all():
    from fbi.metrics import HumanLabel
    from fbi.trust import one_sided_labels

    same = [HumanLabel(instance_id=f"i{k}", verdict="a", annotator="p") for k in range(4)]
    assert "human verdict is 'a'" in one_sided_labels(same, "labels.csv")
    mixed = [*same, HumanLabel(instance_id="i9", verdict="b", annotator="p")]
    assert one_sided_labels(mixed, "labels.csv") is None
    # a split vote is no verdict: it neither makes nor breaks the one-sidedness
    split = [*same, HumanLabel(instance_id="i8", verdict="b", annotator="p"),
             HumanLabel(instance_id="i8", verdict="a", annotator="q")]
    assert one_sided_labels(split, "labels.csv") is not None
    assert one_sided_labels([], "labels.csv") is None
