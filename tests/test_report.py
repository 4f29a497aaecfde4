"""The blind-spot report on a hand-written run whose numbers are computed by hand."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fbi.cli import main
from fbi.errors import InputError
from fbi.metrics import bootstrap_interval, wilson_interval
from fbi.settings import ModelSettings

FIXTURE = Path(__file__).parent / "fixtures" / "report_run"


@pytest.fixture
def summary(tmp_path) -> dict:
    result = CliRunner().invoke(main, ["report", str(FIXTURE), "--output", str(tmp_path),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / "summary.json").read_text())


def rate(summary, strategy, level, group):
    (row,) = [r for r in summary["rates"] if r["strategy"] == strategy
              and r["level"] == level and r["group"] == group]
    return row


def test_single_answer_counts_and_wilson_interval(summary):
    from statsmodels.stats.proportion import proportion_confint

    row = rate(summary, "vanilla", "category", "entity")
    # e1 detected (8 > 5), e2 and e4 undetected (ties), e3 unparseable
    assert (row["n"], row["detected"], row["undetected"], row["unparseable"]) == (4, 1, 2, 1)
    assert row["rate"] == pytest.approx(2 / 3)
    assert row["worst_case_rate"] == pytest.approx(3 / 4)
    low, high = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert row["ci_method"] == "wilson"


def test_score_invariant_retained(summary):
    row = rate(summary, "vanilla", "score-invariant", "SI")
    assert (row["n"], row["undetected"], row["detected"], row["rate"]) == (2, 1, 1, 0.5)


def test_ability_and_overall_use_the_bootstrap(summary):
    row = rate(summary, "vanilla", "ability", "F")
    assert row["ci_method"] == "bootstrap" and row["rate"] == pytest.approx(2 / 3)
    assert rate(summary, "vanilla", "overall", "all")["n"] == 4  # SI stays out


def test_pairwise_breakdown_and_position_bias(summary):
    (row,) = [r for r in summary["pairwise"] if r["strategy"] == "pairwise"
              and r["group"] == "entity"]
    assert (row["G"], row["P"], row["both_good"], row["both_bad"], row["inconsistent"]) == (
        1, 0, 1, 1, 1)
    assert row["flip_rate"] == pytest.approx(1 / 4)  # only e2's verdict changes with order
    assert row["first_slot_share"] == pytest.approx(3 / 4)  # A, B, A, A among A/B verdicts
    assert rate(summary, "pairwise", "category", "entity")["rate"] == pytest.approx(3 / 4)


def test_reference_histogram(summary):
    (row,) = [r for r in summary["reference"] if r["group"] == "entity"]
    assert (row["top"], row["top_1"], row["top_2"], row["lower"]) == (1, 1, 1, 1)
    assert rate(summary, "reference", "category", "entity")["rate"] == pytest.approx(1 / 4)


def test_wilson_edges():
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and 0.25 < high < 0.35
    low, high = wilson_interval(10, 10)
    assert high == pytest.approx(1.0) and 0.65 < low < 0.75


def test_bootstrap_interval_is_the_percentile_bootstrap_computed_exactly():
    """The ability/overall interval is the percentile bootstrap's limit: the 2.5% and
    97.5% quantiles of Binomial(n, k/n)/n, worked here from the binomial's probabilities
    by hand, and what scipy's resampling bootstrap gives within its Monte Carlo error."""
    import math

    import numpy as np
    from scipy.stats import bootstrap

    def quantile(q: float, k: int, n: int) -> float:
        p, total = k / n, 0.0
        for j in range(n + 1):  # the smallest j whose cumulative probability reaches q
            total += math.comb(n, j) * p ** j * (1 - p) ** (n - j)
            if total >= q - 1e-12:
                return j / n
        return 1.0

    for k, n in ((30, 100), (1, 12), (117, 400), (399, 400)):
        assert bootstrap_interval(k, n) == pytest.approx(
            (quantile(0.025, k, n), quantile(0.975, k, n)))
    values = np.array([1] * 30 + [0] * 70)
    theirs = bootstrap((values,), np.mean, n_resamples=20_000, method="percentile",
                       random_state=1).confidence_interval
    assert bootstrap_interval(30, 100) == pytest.approx((theirs.low, theirs.high), abs=0.011)
    assert bootstrap_interval(0, 0) is None
    assert bootstrap_interval(3, 3) == (1.0, 1.0)


def test_markdown_html_and_csv(tmp_path):
    result = CliRunner().invoke(main, ["report", str(FIXTURE), "--output", str(tmp_path)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "66.7" in result.output  # the terminal headline table
    markdown = (tmp_path / "report.md").read_text()
    assert "| strategy | LF | F | IF | R | SI retained |" in markdown
    assert "| Entity | 4 | 1 | 0 | 1 | 1 | 1 | 0 | 75.0 [30–95] | 75.0 |" in markdown  # G P ✓ ✗ ≠
    assert "| Entity | 4 | 1 | 2 | 1 | 66.7 [21–94] | 75.0 |" in markdown  # single, worst case
    # one judge, several strategies: Table 4 without the paired tests' mark and Verdict
    # (issue 39: it referred to "the Verdict above", which such a report does not have)
    assert "(paper Table 4)" in markdown and "## Verdict" not in markdown
    assert "Verdict above" not in markdown and "†" not in markdown
    html = (tmp_path / "report.html").read_text()
    assert "<h1>FBI blind-spot report</h1>" in html
    assert "Undetected rate by category and strategy" in html and "<svg" in html
    # missed errors: e1 under Reference (top score), e2 under Vanilla with its explanation
    assert "<del>Jane Austen</del><ins>Charlotte Bronte</ins>" in html
    assert "The author named is wrong." in html
    assert not re.search(r"""(src|href)=["']?https?:""", html)  # self-contained
    assert (tmp_path / "report.csv").read_text().startswith("judge,strategy,paradigm")


def test_comparison_report_of_two_runs(tmp_path):
    other = tmp_path / "other"
    shutil.copytree(FIXTURE, other)
    text = (other / "judgments.jsonl").read_text().replace("openai/hand-judge", "openai/judge-2")
    (other / "judgments.jsonl").write_text(text)
    spec = (other / "run.json").read_text().replace("openai/hand-judge", "openai/judge-2")
    (other / "run.json").write_text(spec)
    result = CliRunner().invoke(main, ["report", str(FIXTURE), str(other), "--output",
                                       str(tmp_path / "out"), "--format", "md"])
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "(paper Table 4)" in markdown and "| openai/judge-2 |" in markdown


def test_report_of_a_folder_that_is_not_a_run(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a run folder" in result.output


def test_explain_check_through_the_runner(tmp_path):
    """Undetected instances with an explanation go to the checker; the report counts them."""
    import os

    from openai_server import ChatServer

    from fbi.cache import ResponseCache
    from fbi.judge import ExplanationChecks
    from fbi.providers import ModelClient

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)

    def checker(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        return json.dumps({"points_out_error": "The author named is wrong." in prompt})

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with ChatServer(script=checker) as server:
        client = ModelClient(cache=ResponseCache(tmp_path / "cache.sqlite"))
        settings = ModelSettings(model="openai/checker", api_base=server.url)
        totals = ExplanationChecks(run, settings).run(client)
        # undetected with explanations: vanilla e2, e4; pairwise e2, e3, e4; reference e1
        assert totals.total == 6 and totals.completed == 6
        again = ExplanationChecks(run, settings).run(client)
        assert again.completed == 0 and again.already_done == 6  # resumed, nothing redone
        assert server.counts["ok"] == 6 + 1  # and the probe
        other = ExplanationChecks(run, ModelSettings(model="openai/other-checker",
                                                     api_base=server.url))
        with pytest.raises(InputError, match="model: \"openai/checker\" → "):
            other.run(client)  # another checker never relabels the stored checks
    result = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "out"),
                                       "--format", "json", "--format", "md"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (row,) = [r for r in summary["explanation_check"]
              if r["strategy"] == "vanilla" and r["group"] == "all"]
    assert (row["undetected_checked"], row["detected_in_explanation_only"]) == (2, 1)
    assert "Detected in the explanation only" in (tmp_path / "out" / "report.md").read_text()


def test_html_report_renders_in_headless_chromium(tmp_path):
    """Opens the report in Debian's chromium, as a reader would, and takes a screenshot."""
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    CliRunner().invoke(main, ["report", str(FIXTURE), "--output", str(tmp_path),
                              "--format", "html"])
    shot = tmp_path / "report.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1600",
                    f"--screenshot={shot}", (tmp_path / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_a_missing_or_invalid_judgment_is_reported_never_silent(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = (run / "judgments.jsonl").read_text().splitlines()
    dropped = json.loads(lines[0])
    kept = [line for line in lines if json.loads(line)["instance_id"] != dropped["instance_id"]
            or json.loads(line)["strategy"] != dropped["strategy"]]
    kept.insert(2, '{"call_id": "broken", "status": "ok"}')  # fails validation
    (run / "judgments.jsonl").write_text("\n".join(kept) + "\n")
    result = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "out"),
                                       "--format", "json"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "line 3: not a valid record" in result.output
    assert f"1 of 6 instances have no {dropped['strategy']} judgment" in result.output
    assert f"{dropped['instance_id']}|{dropped['strategy']}|" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (row,) = [r for r in summary["rates"] if r["strategy"] == dropped["strategy"]
              and r["group"] == dropped["category"]]
    assert row["missing"] == 1 and row["instances"] == row["n"] + 1
    strict = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "o2"),
                                       "--strict"], terminal_width=200)
    assert strict.exit_code == 1


def test_paper_convention_divides_single_answer_counts_by_every_instance():
    """Paper §5 / Table 7, Contextual: 94 instances, 45 detected, 48 undetected (one
    unparseable): the paper prints 48/94 = 0.51; fbi's own rate is 48/93."""
    from fbi.metrics import InstanceOutcome, aggregate
    from fbi.taxonomy import Ability

    def outcomes(paradigm: str) -> list[InstanceOutcome]:
        labels = ["detected"] * 45 + ["undetected"] * 48 + ["unparseable"]
        return [InstanceOutcome(f"c{n}", "j", paradigm, paradigm, Ability.FACTUAL,
                                "contextual", label) for n, label in enumerate(labels)]

    single = next(r for r in aggregate(outcomes("single")) if r.level == "category")
    assert single.paper_rate == pytest.approx(48 / 94) and single.rate == pytest.approx(48 / 93)
    assert (single.instances, single.judged, single.n) == (94, 93, 94)
    pairwise = next(r for r in aggregate(outcomes("pairwise")) if r.level == "category")
    assert pairwise.paper_rate == pytest.approx(48 / 93)  # pairwise: parseable pairs only


def test_the_paper_convention_shows_the_paper_rates(tmp_path):
    result = CliRunner().invoke(main, ["report", str(FIXTURE), "--output", str(tmp_path),
                                       "--format", "md", "--convention", "paper"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "report.md").read_text()
    assert "as the FBI paper computes them" in markdown
    # single Entity: 4 instances, 2 undetected, 1 unparseable -> the paper's 2/4
    assert "| Entity | 4 | 1 | 2 | 1 | 50.0 | 75.0 |" in markdown


def test_the_order_of_a_log_never_changes_a_number(tmp_path):
    """Bootstrap resamples run over instances sorted by id with a fixed seed: the same
    judgments in another order give the same rates and intervals, byte for byte."""
    import random

    shuffled = tmp_path / "shuffled"
    shutil.copytree(FIXTURE, shuffled)
    lines = (shuffled / "judgments.jsonl").read_text().splitlines()
    random.Random(3).shuffle(lines)
    (shuffled / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    texts = []
    for folder in (FIXTURE, shuffled):
        out = tmp_path / f"out-{folder.name}"
        result = CliRunner().invoke(main, ["report", str(folder), "--output", str(out),
                                           "--format", "json", "--format", "csv"])
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "summary.json").read_text())
        texts.append((json.dumps(summary["rates"]), (out / "report.csv").read_text()))
    assert texts[0] == texts[1]


@pytest.mark.parametrize("outcome", ["undetected", "detected"])
def test_no_interval_collapses_to_a_point_at_0_or_100_percent(outcome):
    """All-detected and all-undetected groups at every level keep an interval of honest
    width: Wilson on the pooled count, as statsmodels computes it."""
    from statsmodels.stats.proportion import proportion_confint

    from fbi.metrics import InstanceOutcome, aggregate
    from fbi.taxonomy import SCORE_INVARIANT, Ability

    def outcomes(category, ability, n, result):
        return [InstanceOutcome(f"{category}-{k}", "j", "vanilla", "single", ability,
                                category, result) for k in range(n)]

    retained = "retained" if outcome == "undetected" else "penalised"
    rows = aggregate(outcomes("entity", Ability.FACTUAL, 10, outcome)
                     + outcomes("number-errors", Ability.FACTUAL, 8, outcome)
                     + outcomes(SCORE_INVARIANT, Ability.FACTUAL, 6, retained))
    by_level = {(r.level, r.group): r for r in rows}
    expected = {("category", "entity"): 10, ("category", "number-errors"): 8,
                ("ability", "F"): 18, ("overall", "all"): 18, ("score-invariant", "SI"): 6}
    for key, n in expected.items():
        row = by_level[key]
        hits = n if outcome == "undetected" else 0
        low, high = proportion_confint(hits, n, alpha=0.05, method="wilson")
        assert row.rate == hits / n
        assert (row.ci_low, row.ci_high) == (pytest.approx(low), pytest.approx(high)), key
        assert row.ci_high - row.ci_low > 0.1
        assert row.ci_method == ("wilson" if key[0] == "category" else "wilson-pooled")


@pytest.mark.slow
def test_the_html_report_of_eleven_strategies_fits_1280_pixels(tmp_path):
    """All eleven strategies of a run, measured in headless chromium: the page is no
    wider than a 1280-pixel window; it has a table of contents, and a missed example
    shows what the judge gave the gold beside the perturbed answer."""
    import subprocess

    from openai_server import ChatServer

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite")}
    with ChatServer() as server:
        run = CliRunner().invoke(main, ["evaluate", "--judge", "openai/judge", "--api-base",
                                        server.url, "--strategy", "all", "--limit", "1",
                                        "--output", str(tmp_path / "run")], env=env)
    assert run.exit_code == 0, run.output
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--output",
                                       str(tmp_path / "out"), "--format", "html"])
    assert report.exit_code == 0, report.output
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<nav class="toc">' in html and 'href="#heatmap"' in html
    assert "gold scored" in html
    measured = tmp_path / "out" / "measured.html"
    measured.write_text(html.replace("</body>", "<script>document.body.setAttribute("
                                     "'data-width', document.documentElement.scrollWidth)"
                                     "</script></body>"), encoding="utf-8")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking",
                          f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900",
                          "--dump-dom", measured.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    width = int(re.search(r'data-width="(\d+)"', dom).group(1))
    assert width <= 1280, width


def test_a_report_reads_each_judgment_lean_and_the_same(tmp_path):
    """What the report reads (`load_run(full=False)`) equals the full records, field for
    field, with a re-tried call's last record winning in both, and no raw reply kept."""
    from dataclasses import fields

    from fbi.runs import load_run

    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    log = folder / "judgments.jsonl"
    first = json.loads(log.read_text().splitlines()[0])
    log.write_text(log.read_text() + json.dumps({**first, "score": 1, "raw_output": "again"})
                   + "\n")
    full, lean = load_run(folder), load_run(folder, full=False)
    assert len(full.judgments) == len(lean.judgments) > 0
    for whole, light in zip(full.judgments, lean.judgments, strict=True):
        assert {f.name: getattr(light, f.name) for f in fields(light)} == \
            {f.name: getattr(whole, f.name) for f in fields(light)}
        assert not hasattr(light, "raw_output")
    retried = next(j for j in lean.judgments if j.call_id == first["call_id"])
    assert retried.score == 1 and full.instances == lean.instances


def test_the_summary_is_typed_and_read_back_through_its_schema(tmp_path, summary):
    """summary.json is written and read through fbi.report.Summary: every field of every
    row documented, the file validates, and a file that does not match is one message
    naming the file and the field."""
    from pydantic import BaseModel

    from fbi.report import Summary, read_summary

    def models(model: type[BaseModel]):
        yield model
        for field in model.model_fields.values():
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                for inner in (arg, *getattr(arg, "__args__", ())):
                    if isinstance(inner, type) and issubclass(inner, BaseModel):
                        yield from models(inner)

    for model in set(models(Summary)):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"
    path = tmp_path / "summary.json"
    typed = read_summary(path)
    assert typed.rates[0].judge == summary["rates"][0]["judge"]
    assert typed.model_dump(exclude_unset=True) == summary  # nothing lost or added
    broken = json.loads(path.read_text())
    broken["rates"][0]["undetected"] = "many"
    path.write_text(json.dumps(broken))
    with pytest.raises(InputError, match=r"summary\.json.*rates\.0\.undetected"):
        read_summary(path)
