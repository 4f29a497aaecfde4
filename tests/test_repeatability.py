"""Issue 15, item 3: each call asked K times; repeatability figures in the report."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from statsmodels.stats.inter_rater import fleiss_kappa

from fbi.cli import main


def chancy_judge(request: dict) -> str:
    """A judge whose score depends on the prompt and on the request's seed."""
    prompt = request["messages"][-1]["content"]
    digest = hashlib.sha256(f"{prompt}|{request.get('seed')}".encode()).hexdigest()
    low, high = (int(x) for x in re.findall(r"an integer from (\d+) to (\d+)", prompt)[-1])
    return json.dumps({"score": low + int(digest, 16) % (high - low + 1)})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("samples")
    env = {"OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(folder / "c.sqlite")}
    with ChatServer(script=chancy_judge) as server:
        args = ["evaluate", "--judge", "openai/chancy", "--api-base", server.url,
                "--dataset", "sample", "--strategy", "vanilla_star", "--temperature", "0.7"]
        three = CliRunner().invoke(main, [*args, "--samples", "3", "--output",
                                          str(folder / "three")], env=env)
        assert three.exit_code == 0, three.output
        served = server.counts["ok"]
        again = CliRunner().invoke(main, [*args, "--samples", "3", "--output",
                                          str(folder / "three")], env=env)
        one = CliRunner().invoke(main, [*args, "--output", str(folder / "one")], env=env)
        assert again.exit_code == 0 and one.exit_code == 0
        assert server.counts["ok"] == served  # every sample is its own cache entry
    return folder


def records(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]


def report(folder, out) -> dict:
    result = CliRunner().invoke(main, ["report", str(folder), "--output", str(out),
                                       "--format", "json", "--format", "md"])
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_every_call_is_asked_three_times_with_its_own_id(run):
    rows = records(run / "three")
    assert len(rows) == 3 * 144 and len({r["call_id"] for r in rows}) == 3 * 144
    assert {r["sample"] for r in rows} == {0, 1, 2}
    assert any(r["call_id"].endswith("|s2") for r in rows)
    assert json.loads((run / "three" / "run.json").read_text())["parameters"]["samples"] == 3
    assert "samples" not in json.loads((run / "one" / "run.json").read_text())["parameters"]


def test_the_tables_read_the_first_sample_like_a_run_without_samples(run, tmp_path):
    with_samples = report(run / "three", tmp_path / "a")
    without = report(run / "one", tmp_path / "b")
    assert with_samples["rates"] == without["rates"]
    assert without["repeatability"] == []


def test_repeatability_worked_out_from_the_log(run, tmp_path):
    summary = report(run / "three", tmp_path / "r")
    (row,) = summary["repeatability"]
    scores: dict[tuple[str, int], dict[str, int]] = {}
    categories = {}
    for r in records(run / "three"):
        scores.setdefault((r["instance_id"], r["sample"]), {})[r["role"]] = r["score"]
        categories[r["instance_id"]] = r["category"]
    instances = sorted(categories)
    flaws = [[scores[(i, k)]["perturbed"] < scores[(i, k)]["gold"] for k in range(3)]
             for i in instances]
    changed = sum(len(set(f)) > 1 for f in flaws) / len(flaws)
    table = np.array([[sum(f), 3 - sum(f)] for f in flaws])
    assert row["instances"] == len(instances) and row["samples"] == 3
    assert row["changed_share"] == pytest.approx(changed)
    assert row["fleiss_kappa"] == pytest.approx(fleiss_kappa(table))
    errors = [n for n, i in enumerate(instances) if categories[i] != "score-invariant"]
    rates = [sum(not flaws[n][k] for n in errors) / len(errors) for k in range(3)]
    assert row["sample_rates"] == pytest.approx(rates)
    assert (row["rate_min"], row["rate_max"]) == (pytest.approx(min(rates)),
                                                  pytest.approx(max(rates)))
    assert "## Repeatability" in (tmp_path / "r" / "report.md").read_text()
