"""The judge prompts ask what the FBI paper's strategies ask (§4; the content of the
authors' released prompts, AI4Bharat/FBI llm_evaluators/prompts), and none of them tells
the judge which errors the benchmark plants.

Each test names the paper's content for one strategy — criteria, facets, axis
definitions, rules, scale, verdict options, the order of explanation and verdict — and
checks that the rendered prompt carries it, on every axis.
"""

from __future__ import annotations

import re

import pytest

from fbi.judge import StrategyRegistry
from fbi.taxonomy import CATEGORIES, Ability

AXES = [ability.axis for ability in Ability]


@pytest.fixture(scope="module")
def registry():
    return StrategyRegistry()


def render(registry, name: str, axis: str = "task quality", score_range=None) -> str:
    strategy = registry.get(name)
    variables = {"instruction": "INSTRUCTION", "axis": axis, "ability": "x"}
    if strategy.paradigm == "pairwise":
        variables.update(answer_a="ANSWER-A", answer_b="ANSWER-B")
    else:
        low, high = score_range or strategy.meta.range_for(axis)
        variables.update(answer="ANSWER", score_min=low, score_max=high)
    if strategy.paradigm == "reference":
        variables["reference"] = "REFERENCE"
    return registry.render(strategy, **variables)


def explanation_then(text: str, field: str) -> bool:
    return text.index('"explanation"') < text.index(f'"{field}"')


def test_vanilla_asks_mt_bench_s_criteria_on_1_to_10(registry):
    for name in ("vanilla", "vanilla_star"):
        text = render(registry, name)
        for factor in ("helpful", "relevant", "accurate", "deep", "creative", "detail",
                       "objective", "impartial judge", "scale of 1 to 10"):
            assert factor in text, (name, factor)
    assert explanation_then(render(registry, "vanilla"), "score")
    assert "short explanation" in render(registry, "vanilla")
    star = render(registry, "vanilla_star")
    assert '"explanation"' not in star and "no explanation" in star


def test_rubric_has_three_levels_over_the_paper_s_five_facets(registry):
    text = render(registry, "rubric")
    facets = ["grounding in the input", "language", "harmful content",
              "following the instruction", "originality and generation artifacts"]
    for facet in facets:
        assert facet in text
    levels = re.findall(r"^- (\d+):\n((?:  \(\w\).*\n?)+)", text, re.M)
    assert [int(level) for level, _ in levels] == [1, 2, 3]
    for _, block in levels:
        assert re.findall(r"\((\w)\)", block) == ["a", "b", "c", "d", "e"]
    for content in ("counterfactual", "syntactic structure", "offensive, harmful or "
                    "inappropriate", "ignores the instructions", "machine translation",
                    "stereotypes"):
        assert content in text
    assert explanation_then(text, "score")
    # the §5.5 ablation: the same three levels on 1–5
    wide = render(registry, "rubric", score_range=(1, 5))
    assert [int(m) for m in re.findall(r"^- (\d+):$", wide, re.M)] == [1, 3, 5]


DEFINITIONS = {
    "hallucination": ["anchored to", "additions, omissions or distortions"],
    "task quality": ["specific directives", "nuances and subtleties"],
    "content quality": ["relevance, clarity, originality and linguistic fluency",
                        "grammatically sound", "plagiarism, redundancy or artificiality"],
    "reasoning accuracy": ["logically sound and mathematically correct",
                           "deductive and inductive reasoning"],
}


@pytest.mark.parametrize("axis", AXES)
def test_axis_defines_its_axis_and_scores_it_on_the_paper_s_scale(registry, axis):
    text = render(registry, "axis", axis)
    for words in DEFINITIONS[axis]:
        assert words in text
    if axis == "hallucination":  # 1 grounded and correct, 0 hallucinated
        assert "Give 1 if the response is factually correct and grounded in the input, " \
               "and 0 if" in text and "an integer from 0 to 1" in text
    else:
        assert "an integer from 0 to 2" in text
    assert explanation_then(text, "score")


#: The authors' reasons per level (single_axes_rubrics.py), a phrase of each in fbi's words.
RUBRIC_REASONS = {
    "hallucination": ["counterfactual information", "strictly aligned with"],
    "task quality": ["ignores the instructions entirely", "miss finer details",
                     "every part of the instruction is addressed"],
    "content quality": ["poor machine translation", "unnatural or awkward",
                        "natural flow and rhythm"],
    "reasoning accuracy": ["logical fallacies", "basic principles of logic or mathematics",
                           "deeper or more complex logical implications", "minor errors",
                           "clear, correct and coherent", "applies logical principles"],
}


@pytest.mark.parametrize("axis", AXES)
def test_axis_rubric_has_the_authors_levels_and_reasons(registry, axis):
    """Issue 23: hallucination 0–1 with two levels, the other axes 0–2 with three, each
    level with the authors' reasons (reasoning accuracy too)."""
    text = render(registry, "axis_rubric", axis)
    for words in DEFINITIONS[axis] + RUBRIC_REASONS[axis]:
        assert words in text, words
    levels = [int(m) for m in re.findall(r"^- (\d+): ", text, re.M)]
    if axis == "hallucination":
        assert levels == [1, 0] and "an integer from 0 to 1" in text
    else:
        assert levels == [2, 1, 0] and "an integer from 0 to 2" in text
    for level in re.findall(r"^- \d+: (.*)$", text, re.M):
        assert level.count("; ") >= 2  # three reasons or more per level


def test_pairwise_asks_mt_bench_s_comparison(registry):
    for name in ("pairwise", "pairwise_star"):
        text = render(registry, name)
        for content in ("correctness and helpfulness", "solve the user question yourself",
                        "step by step", "identifying and correcting any mistakes",
                        "position bias", "length", "name", "objective"):
            assert content in text, (name, content)
        for option in ('"A" if', '"B" if', '"tie" if', '"both_bad" if both answers are '
                       'unacceptable'):
            assert option in text
    assert explanation_then(render(registry, "pairwise"), "verdict")
    assert "Output only your final verdict" in render(registry, "pairwise_star")


def test_rules_are_the_seven_llmbar_rules(registry):
    text = render(registry, "pairwise_rules")
    rules = re.findall(r"^(\d)\. (.*)$", text, re.M)
    assert [int(n) for n, _ in rules] == list(range(1, 8))
    for n, words in ((1, "follows and completes the specific instructions"),
                     (2, "correct and factual"), (3, "clearly and logically"),
                     (4, "grammar, vocabulary and style"), (5, "stereotypes, biases"),
                     (6, "engaging and original"), (7, "objective")):
        assert words in rules[n - 1][1].replace("Stay objective", "objective")
    assert explanation_then(text, "verdict")


@pytest.mark.parametrize("axis", AXES)
def test_pairwise_axis_rules_has_the_axis_s_own_five_rules(registry, axis):
    plain = render(registry, "pairwise_axis", axis)
    ruled = render(registry, "pairwise_axis_rules", axis)
    assert axis.capitalize() + ": choose" in ruled
    # Axis alone (issue 23): the axis's full description, then which to choose
    for words in DEFINITIONS[axis]:
        assert words in plain
    assert re.search(r"^Choose the response .*\.$", plain, re.M)
    assert not re.search(r"^\d\. ", plain, re.M)
    rules = re.findall(r"^(\d)\. ", ruled, re.M)
    assert rules == ["1", "2", "3", "4", "5"]
    others = [a for a in AXES if a != axis]
    own = {"hallucination": "adds, leaves out or distorts facts",
           "task quality": "omits nothing that was",
           "content quality": "linguistic fluency: accurate grammar",
           "reasoning accuracy": "formulas, computations and deductions"}
    assert own[axis] in ruled and not any(own[a] in ruled for a in others)


def test_reference_asks_mt_bench_s_reference_grading(registry):
    text = render(registry, "reference")
    for content in ("reference answer", "REFERENCE", "identifying and correcting any "
                    "mistakes", "length", "scale of 1 to 10", "short explanation"):
        assert content in text
    assert text.index("<reference_answer>") < text.index("<answer>")
    assert explanation_then(text, "score")


# The old prompts' test-specific lists, which told the judge what the benchmark plants.
LEAKS = ["correctly spelled", "every number copied from the question",
         "the units and the final answer", "in a sensible order", "consistent with itself",
         "errors of fact, reasoning, calculation", "wrong fact, a wrong step"]


def test_no_prompt_lists_or_describes_the_planted_error_types(registry):
    names = [c.display_name.lower() for c in CATEGORIES if not c.extra]
    for name in registry.names():
        if registry.get(name).meta.reward:
            continue  # sends no text: a reward model reads the conversation alone
        for axis in AXES:
            text = render(registry, name, axis)
            lowered = text.lower()
            for category in CATEGORIES:
                assert category.description.lower() not in lowered, (name, category.name)
            for leak in LEAKS:
                assert leak not in lowered, (name, axis, leak)
            mentioned = {n for n in names if re.search(rf"\b{re.escape(n)}\b", lowered)}
            # the paper's own quality words may coincide with a category name ("clarity
            # and coherence", "grammar"); a list of error types would name several
            assert len(mentioned) <= 2, (name, axis, mentioned)
