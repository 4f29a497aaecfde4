"""The perturbation generator: rules, the LLM engine through a loopback server, pre-screen."""

from __future__ import annotations

import json
import os
import re

import pytest

from fbi.datasets import load_gold_items
from fbi.perturb import (
    CHANGE_ELSEWHERE,
    ENTITIES_CHANGED,
    EXPECTED_KIND,
    FORMATTING_LOST,
    IDENTICAL,
    LENGTH_DRIFT,
    META_TEXT,
    NUMBERS_CHANGED,
    RATIONALE_NOT_IN_ANSWER,
    PerturbConfig,
    Perturber,
    parse_perturbation,
    prescreen,
)
from fbi.perturb.rules import NEEDS_LLM, RULES, Declined, GoldItem, apply_rule
from fbi.settings import ModelSettings

RULES.load()
RULE_CATEGORIES = sorted(RULES)
QUOTE = re.compile(r"«([^»\n]+)» → «([^»\n]*)» at (\d+)")


def check_result(item: GoldItem, category: str, seed: int = 0) -> bool:
    """Apply a rule; if it produced something, check the diff against its rationale."""
    try:
        result = apply_rule(category, item, seed)
    except Declined as declined:
        assert str(declined)  # a reason is always given
        return False
    assert result.perturbed != item.gold_answer
    for change in result.changes:
        # every recorded change is real: the old text was at that place in the gold answer
        assert item.gold_answer[change.position:].startswith(change.before)
        if change.after:
            assert change.after in result.perturbed
    quoted = QUOTE.findall(result.rationale)
    assert quoted, result.rationale
    for before, after, _ in quoted:
        assert before == "" or before in item.gold_answer
        assert after == "" or after in result.perturbed
    # the rule's own output passes the checks of its rationale against the diff
    flags = prescreen(category, item.gold_answer, result.perturbed, result.rationale)
    assert not {IDENTICAL, RATIONALE_NOT_IN_ANSWER} & set(flags), (category, flags)
    return True


@pytest.fixture(scope="module")
def sample_items() -> list[GoldItem]:
    return load_gold_items("sample")[0]


@pytest.mark.parametrize("category", RULE_CATEGORIES)
def test_every_rule_category_on_the_sample(sample_items, category):
    made = [check_result(item, category) for item in sample_items]
    assert sum(made) >= 3, f"{category}: the rule should apply to some sample items"


@pytest.mark.slow
@pytest.mark.parametrize("category", RULE_CATEGORIES)
def test_every_rule_category_on_the_fbi_release(fbi_original, category):
    items = load_gold_items(str(fbi_original))[0][::8]  # a slice of the 760 gold answers
    made = [check_result(item, category) for item in items]
    assert sum(made) >= 2, category


def test_rules_are_deterministic_for_a_seed(sample_items):
    item = next(i for i in sample_items if i.id == "sample-spelling-1")
    assert apply_rule("spelling", item, 3) == apply_rule("spelling", item, 3)
    variants = {apply_rule("spelling", item, seed).perturbed for seed in range(6)}
    assert len(variants) > 1


def test_categories_a_rule_cannot_do_are_declined_with_a_reason(sample_items):
    for category in NEEDS_LLM:
        with pytest.raises(Declined, match="LLM engine"):
            apply_rule(category, sample_items[0], 0)


@pytest.mark.parametrize("category, gold, expected", [
    ("calculations", "4 × 3 = 12. Then 12 + 5 = 17. The answer is 17.", "17. The answer is 17."),
    ("final-errors", "Area = 4 × 4 = 16 square metres.", "Area = 4 × 4 = "),
    ("copying-numbers", "Speed = 120 / 2 = 60 km/h.", "= 60 km/h."),
])
def test_reasoning_rules_keep_what_they_must(category, gold, expected):
    item = GoldItem("x", "reasoning", "A car goes 120 km in 2 hours. How fast?", gold)
    result = apply_rule(category, item, 0)
    assert expected in result.perturbed


# ----------------------------------------------------------------- pre-screen

GOLD = ("The Berlin Wall fell on 9 November 1989. Crowds crossed the border that night.\n\n"
        "- East Germans celebrated.\n- West Berliners welcomed them.")


@pytest.mark.parametrize("category, perturbed, rationale, flag", [
    ("number-errors", GOLD, 'Changed "1989" to "1979"', IDENTICAL),
    ("number-errors", GOLD.replace("1989", "1979"), 'Changed "1991" to "1971"',
     RATIONALE_NOT_IN_ANSWER),
    ("number-errors", GOLD.replace("1989", "1979"), 'Changed "Crowds" to "People"',
     RATIONALE_NOT_IN_ANSWER),
    ("number-errors", GOLD.replace("1989", "1979"), 'The error is in "West Berliners welcomed"',
     CHANGE_ELSEWHERE),
    ("spelling", GOLD.replace("November 1989", "Novmber 1988"), 'misspelled "November"',
     NUMBERS_CHANGED),
    ("grammar", GOLD.replace("Berlin Wall fell", "Moscow Wall fall"), 'changed "fell"',
     ENTITIES_CHANGED),
    ("entity", GOLD.replace("\n\n- ", " ").replace("\n- ", " "), 'merged', FORMATTING_LOST),
    ("grammar", GOLD + " " + GOLD, 'doubled', LENGTH_DRIFT),
    ("number-errors", "Here is the perturbed answer: " + GOLD.replace("1989", "1979"),
     'Changed "1989" to "1979"', META_TEXT),
    ("number-errors", GOLD.replace("1989", "1979 (error introduced)"), 'Changed "1989"',
     META_TEXT),
])
def test_prescreen_catches_each_kind_of_bad_candidate(category, perturbed, rationale, flag):
    assert flag in prescreen(category, GOLD, perturbed, rationale)


def test_prescreen_passes_a_good_candidate():
    assert prescreen("number-errors", GOLD, GOLD.replace("1989", "1979"),
                     'Changed "1989" to "1979"') == []


# ----------------------------------------------------------------- the LLM engine


def test_parse_perturbation_reads_json_and_refuses_garbage():
    assert parse_perturbation('{"rationale": "r", "perturbed_answer": "p"}') == ("r", "p")
    assert parse_perturbation('Sure! {"rationale": "r", "perturbed_answer": "p"} Done') == (
        "r", "p")
    assert parse_perturbation("I cannot do that.") is None
    assert parse_perturbation('{"rationale": "r"}') is None
    assert parse_perturbation('{"rationale": "r", "perturbed_answer": ""}') is None


@pytest.mark.slow
def test_llm_engine_through_the_loopback_server(tmp_path):
    from openai_server import ChatServer

    from fbi.cache import ResponseCache
    from fbi.providers import ModelClient

    def scripted(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        answer = prompt.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        if "Error type: Entity" in prompt and "Mona Lisa" in answer:
            return json.dumps({"rationale": 'Replaced "Leonardo da Vinci" with "Raphael"',
                               "perturbed_answer": answer.replace("Leonardo da Vinci",
                                                                  "Raphael")})
        if "Error type: Entity" in prompt:
            return "Sorry, here is my attempt: {not json"  # malformed
        if "Error type: Incorrect Fact" in prompt:
            return json.dumps({"rationale": 'Changed "Paris" to "Rome"',  # not in the text
                               "perturbed_answer": "Here is the perturbed answer: " + answer})
        return json.dumps({"rationale": "no change", "perturbed_answer": answer})

    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    items = [i for i in load_gold_items("sample")[0] if i.id.startswith("sample-entity-")]
    queue = tmp_path / "queue.jsonl"
    with ChatServer(script=scripted) as server:
        config = PerturbConfig(categories=("entity", "incorrect-fact"), engine="auto",
                               model=ModelSettings(model="openai/perturber",
                                                   api_base=server.url), n_per_item=2)
        perturber = Perturber(items, config, queue)
        client = ModelClient(cache=ResponseCache(tmp_path / "cache.sqlite"))
        perturber.run(client)
        result = perturber.result
        served = server.counts["ok"]
        Perturber(items, config, queue).run(client)  # resumes: no call paid twice
        assert server.counts["ok"] == served == 3 * 2 * 2 + 1  # and the probe
    records = [json.loads(line) for line in queue.read_text().splitlines()]
    by_category = {}
    for record in records:
        by_category.setdefault(record["category"], []).append(record)
    assert result.tally["entity"].failed == 4  # two items × two variants, malformed replies
    (entity,) = by_category["entity"]  # two identical variants collapse into one candidate
    assert "Raphael" in entity["perturbed_answer"] and entity["flags"] == []
    assert entity["label"] == "unvetted" and entity["generator"] == "llm:openai/perturber"
    assert entity["template_version"] == "1" and entity["seed"] == 0
    for record in by_category["incorrect-fact"]:
        assert RATIONALE_NOT_IN_ANSWER in record["flags"] and META_TEXT in record["flags"]


def test_cli_rules_engine_writes_a_queue(tmp_path):
    import subprocess
    import sys

    from conftest import OUTSIDE_CHECKOUT

    queue = tmp_path / "queue.jsonl"
    result = subprocess.run([sys.executable, "-m", "fbi", "perturb", "--engine", "rules",
                             "--categories", "spelling,number-errors", "--seed", "5",
                             "--output", str(queue)], capture_output=True, text=True,
                            cwd=OUTSIDE_CHECKOUT, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "spelling" in result.stdout and "generated" in result.stdout
    records = [json.loads(line) for line in queue.read_text().splitlines()]
    assert {r["category"] for r in records} == {"spelling", "number-errors"}
    assert all(r["label"] == "unvetted" and r["seed"] == 5 for r in records)
    assert all(r["generator"].startswith("rules:") for r in records)
    from fbi import load_dataset

    assert len(load_dataset(str(queue))) == len(records)  # the queue is a valid dataset


@pytest.mark.slow
def test_llm_engine_stops_before_its_budget(tmp_path):
    import subprocess
    import sys

    from conftest import OUTSIDE_CHECKOUT
    from openai_server import ChatServer

    def echo(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        answer = prompt.split("<answer>\n", 1)[1].split("\n</answer>", 1)[0]
        return json.dumps({"rationale": "none", "perturbed_answer": answer + " Extra."})

    queue = tmp_path / "queue.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "c.sqlite")}
    with ChatServer(script=echo) as server:
        result = subprocess.run(
            [sys.executable, "-m", "fbi", "perturb", "--engine", "llm", "--model",
             "openai/gpt-4o-mini", "--api-base", server.url, "--categories", "entity",
             "--n-per-item", "6", "--max-cost", "0.0005", "--concurrency", "1",
             "--output", str(queue)],
            env=env, capture_output=True, text=True, cwd=OUTSIDE_CHECKOUT, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "stopped before passing --max-cost $0.0005:" in result.stderr
    calls = [json.loads(line) for line in
             (tmp_path / "queue.calls.jsonl").read_text().splitlines()]
    assert 0 < len(calls) < 18 and sum(c["cost"] for c in calls) <= 0.0005
    assert queue.exists()  # what was made is kept


@pytest.mark.parametrize(("category", "gold", "perturbed", "reads_as"), [
    # the paper's own example of failure mode ii: a grammar error filed under spelling
    ("spelling", "The teams are ready and have trained.", "The teams is ready and has trained.",
     "grammar"),
    ("spelling", "Its roots go deep.", "It's roots go deep.", "grammar"),
    ("grammar", "They developed the plan.", "They developped the plan.", "spelling"),
    ("number-errors", "Gold is written Au.", "Gold is written Ag.", "entity"),
    ("entity", "The war ended in 1945.", "The war ended in 1946.", "number"),
])
def test_an_error_of_another_kind_is_flagged_with_what_it_reads_as(category, gold, perturbed,
                                                                   reads_as):
    """Issue 23, pre-screen mode ii (FBI §3.4: "an error of the wrong kind")."""
    (flag,) = [f for f in prescreen(category, gold, perturbed, None) if f.startswith("wrong")]
    assert f"reads as a{'n' if reads_as == 'entity' else ''} {reads_as} change" in flag
    assert flag.endswith(f"not {EXPECTED_KIND[category]}")


@pytest.mark.parametrize(("category", "gold", "perturbed"), [
    ("spelling", "He will receive the letter.", "He will recieve the letter."),
    ("spelling", "Access is free.", "Acces is free."),  # a misspelling, not a plural
    ("grammar", "The teams are ready.", "The teams is ready."),
    ("grammar", "She goes home.", "She go home."),
    ("number-errors", "It took 3 days.", "It took 5 days."),
    ("number-errors", "It cost millions.", "It cost billions."),
    ("entity", "Marie Curie won.", "Maria Curie won."),  # a swap that looks like a respelling
    ("entity", "Paris is in France.", "Lyon is in France."),
    ("coherence", "A. B.", "B. A."),  # no kind a word diff can show: never flagged
])
def test_an_error_of_its_own_kind_is_not_flagged(category, gold, perturbed):
    assert not [f for f in prescreen(category, gold, perturbed, None)
                if f.startswith("wrong-kind")]
