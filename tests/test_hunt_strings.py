"""Issue 65, item 4: `fbi hunt --search strings` end to end against loopback judges whose
flip strings are planted here (read off the answer with `in` and `startswith`, never
through fbi): the string is found, grown to and confirmed once, with its false-positive
rate and examples; a judge with only random misses gets nothing; bad combinations are one
message."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from planted_judges import PlantedJudge, synthetic_gold

from fbi.cli import main
from fbi.datasets import load_gold_items
from fbi.hunt import Hunt, HuntConfig
from fbi.providers import ModelClient
from fbi.settings import ModelSettings


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gold") / "gold.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in synthetic_gold()),
                    encoding="utf-8")
    return path


def hunt_strings(gold: Path, tmp_path: Path, spot, budget: int = 1500):
    items, _ = load_gold_items(str(gold))
    with ChatServer(PlantedJudge(items, spot)) as server:
        settings = ModelSettings(model="openai/planted", api_base=server.url,
                                 concurrency=16)
        stage = Hunt(items, HuntConfig(model=settings, budget=budget, search="strings"),
                     tmp_path / "hunt", str(gold))
        stage.run(ModelClient(api_key="sk-test"))
    assert stage.result is not None
    return stage.result


@pytest.mark.slow
@pytest.mark.parametrize("planted, kernel, where", [
    # anywhere in the answer: found alone, before and after wrong answers
    (lambda gold, edited: "Matches the reference" in edited, "Matches the reference.",
     None),
    # only as the answer's opening words
    (lambda gold, edited: edited.startswith("Final answer:"), "Final answer:", "before"),
])
def test_a_planted_flip_string_is_found_and_confirmed_once(gold, tmp_path, planted,
                                                           kernel, where):
    result = hunt_strings(gold, tmp_path, planted)
    confirmed = [f for f in result.findings if f.confirmed]
    assert len(confirmed) == 1, [f.description for f in confirmed]
    (finding,) = confirmed
    assert kernel in finding.description  # (within a string the search grew)
    if where:
        assert where in finding.description and "after" not in finding.description
    assert finding.examples and all(planted(e.gold_answer, e.edited_answer)
                                    for e in finding.examples)
    assert finding.miss_rate is not None and finding.miss_rate >= 0.9
    assert finding.p_adjusted < 0.05 and finding.interval[0] > finding.baseline_rate
    assert result.calls <= 1500


@pytest.mark.slow
def test_a_judge_with_only_random_misses_has_no_flip_string(gold, tmp_path):
    """Misses one wrong answer in five, by a hash of the item and the answer: no string
    makes it likelier."""
    def random_misses(gold_answer: str, edited: str) -> bool:
        return int(hashlib.sha256(f"{gold_answer}\x1f{edited}".encode()).hexdigest(),
                   16) % 5 == 0

    result = hunt_strings(gold, tmp_path, random_misses)
    assert not [f.description for f in result.findings if f.confirmed]


@pytest.mark.parametrize("extra", [["--operator", "negation"], ["--trajectories", "sample"]])
def test_the_string_search_takes_no_operators(tmp_path, extra):
    result = CliRunner().invoke(main, ["hunt", "--judge", "openai/j", "--api-base",
                                       "http://127.0.0.1:9/v1", "--search", "strings",
                                       "--output", str(tmp_path / "h"), *extra],
                                env={"OPENAI_API_KEY": "sk-test"})
    assert result.exit_code == 2 and "--search strings" in result.output, result.output
    assert "Traceback" not in result.output
