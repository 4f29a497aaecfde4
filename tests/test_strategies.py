from __future__ import annotations

import pytest

from fbi import InputError, UnknownName
from fbi.judge import StrategyRegistry, judge_kind

PAPER = {  # name: (display name, paradigm, explanation, default score range)
    "vanilla_star": ("Vanilla*", "single", False, (1, 10)),
    "vanilla": ("Vanilla", "single", True, (1, 10)),
    "rubric": ("Rubric", "single", True, (1, 3)),
    "axis": ("Axis", "single", True, (0, 2)),  # hallucination 0–1: see test_judge_prompts
    "axis_rubric": ("Axis+Rubric", "single", True, (0, 2)),
    "pairwise_star": ("Pairwise*", "pairwise", False, None),
    "pairwise": ("Pairwise", "pairwise", True, None),
    "pairwise_rules": ("Rules (pairwise)", "pairwise", True, None),
    "pairwise_axis": ("Axis (pairwise)", "pairwise", True, None),
    "pairwise_axis_rules": ("Axis+Rules (pairwise)", "pairwise", True, None),
    "reference": ("Reference", "reference", True, (1, 10)),
}
SINGLE = {"instruction": "Name a colour.", "answer": "Blue.", "axis": "task quality",
          "ability": "instruction-following", "score_min": 1, "score_max": 10}


@pytest.fixture(scope="module")
def registry():
    return StrategyRegistry()


def test_the_eleven_strategies_of_the_paper(registry):
    """The paper's eleven, and the reward models' strategies beside them (issue 41, and
    pairwise: issue 52) and the agents' (issue 54): 'all' is the eleven for a chat
    judge, and only the reward ones for a reward model."""
    assert sorted(registry.names()) == sorted([*PAPER, "reward", "reward_pairwise",
                                               "agent", "agent_pairwise",
                                               "agent_reference", "agent_step", "agent_prm"])
    assert sorted(s.name for s in registry.resolve(["all"])) == sorted(PAPER)
    assert [s.name for s in registry.resolve(["all"], judge_kind("reward/rm"))] == [
        "reward", "reward_pairwise"]
    for name, (display, paradigm, explanation, score_range) in PAPER.items():
        meta = registry.get(name).meta
        assert (meta.display_name, meta.paradigm, meta.explanation, meta.score_range) == (
            display, paradigm, explanation, score_range), name


def test_lookup_by_display_name_and_did_you_mean(registry):
    assert registry.get("Axis+Rubric").name == "axis_rubric"
    assert registry.get("vanilla*").name == "vanilla_star"
    with pytest.raises(UnknownName, match="Did you mean 'rubric'"):
        registry.get("rubrik")
    assert len(registry.resolve(["all"])) == 11


def test_render_fills_the_answer_and_the_range(registry):
    text = registry.render(registry.get("vanilla"), **SINGLE)
    assert "Blue." in text and "an integer from 1 to 10" in text and "explanation" in text
    star = registry.render(registry.get("vanilla_star"), **SINGLE)
    assert "no explanation" in star and '"explanation"' not in star


def test_axis_strategies_name_the_ability_axis(registry):
    text = registry.render(registry.get("axis_rubric"), **{**SINGLE, "score_max": 3})
    assert "Task quality:" in text and "- 3: the response shows a precise" in text
    assert "- 1: the response ignores the instructions" in text
    pair = registry.render(registry.get("pairwise_axis"), instruction="i", answer_a="x",
                           answer_b="y", axis="reasoning accuracy", ability="reasoning")
    assert "Reasoning accuracy: how logically sound" in pair and \
        "Choose the response whose reasoning" in pair and "<answer_b>\ny\n</answer_b>" in pair


def test_missing_variable_is_an_error_not_an_empty_string(registry):
    with pytest.raises(InputError, match="'answer' is undefined"):
        registry.render(registry.get("vanilla"), **{k: v for k, v in SINGLE.items()
                                                     if k != "answer"})


def test_response_schema_puts_the_explanation_first_and_enumerates_scores(registry):
    schema = registry.get("vanilla").response_schema((1, 5))
    assert list(schema["properties"]) == ["explanation", "score"]
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert schema["properties"]["explanation"]["maxLength"] == 600
    assert registry.get("vanilla").response_schema((1, 5), 90)["properties"][
        "explanation"]["maxLength"] == 90
    pairwise = registry.get("pairwise_star").response_schema(None)
    assert list(pairwise["properties"]) == ["verdict"]


def test_user_folder_adds_a_strategy(tmp_path):
    (tmp_path / "strict.jinja").write_text(
        '---\ndisplay_name: "Strict"\nparadigm: single\nexplanation: false\n'
        "score_range: [1, 5]\nversion: 2\n---\n"
        '{% extends "_single.jinja" %}\n{% block criteria %}Be strict.\n{% endblock %}\n',
        encoding="utf-8")
    registry = StrategyRegistry(tmp_path)
    strategy = registry.get("strict")
    assert strategy.version == "2" and strategy.origin == str(tmp_path)
    assert "Be strict." in registry.render(strategy, **{**SINGLE, "score_max": 5})
    assert len(registry.names()) == 19  # the paper's 11, 2 reward, 5 agent, the user's


def test_templates_cannot_run_code(tmp_path):
    (tmp_path / "evil.jinja").write_text(
        '---\ndisplay_name: "Evil"\nparadigm: single\nexplanation: false\n'
        "score_range: [1, 5]\nversion: 1\n---\n"
        "{{ ''.__class__.__mro__[1].__subclasses__() }}\n", encoding="utf-8")
    registry = StrategyRegistry(tmp_path)
    with pytest.raises(InputError, match=r"unsafe|access to attribute"):
        registry.render(registry.get("evil"), **SINGLE)


def test_bad_front_matter_names_the_file(tmp_path):
    (tmp_path / "broken.jinja").write_text("---\nparadigm: sideways\n---\nx\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.jinja: bad front matter"):
        StrategyRegistry(tmp_path)
    with pytest.raises(InputError, match="no such folder"):
        StrategyRegistry(tmp_path / "missing")
