from __future__ import annotations

import pytest

from fbi import PERTURBATION_CATEGORIES, Ability, UnknownName, get_category
from fbi.taxonomy import FBI_ABILITIES, SCORE_INVARIANT, categories_of, get_ability


def test_twenty_two_categories_in_four_abilities():
    assert len(PERTURBATION_CATEGORIES) == 22
    counts = {a: len(categories_of(a)) for a in FBI_ABILITIES}
    assert counts == {
        Ability.LONG_FORM: 6, Ability.FACTUAL: 6,
        Ability.INSTRUCTION_FOLLOWING: 5, Ability.REASONING: 5,
    }
    # a preference set's subsets are categories of their own ability, never among the 22
    assert categories_of(Ability.PREFERENCE) == []
    subset = get_category("preference/chat-hard")
    assert (subset.ability, subset.display_name, subset.extra) == (
        Ability.PREFERENCE, "chat-hard", False)
    assert all(c.lowers_score and c.description and c.display_name
               for c in PERTURBATION_CATEGORIES)


def test_score_invariant_does_not_lower_the_score():
    category = get_category(SCORE_INVARIANT)
    assert not category.lowers_score and category.ability is None


def test_axes_follow_the_paper():
    assert Ability.FACTUAL.axis == "hallucination"
    assert Ability.INSTRUCTION_FOLLOWING.axis == "task quality"
    assert Ability.LONG_FORM.axis == "content quality"
    assert Ability.REASONING.axis == "reasoning accuracy"


def test_unknown_category_gets_valid_names_and_a_suggestion():
    with pytest.raises(UnknownName) as caught:
        get_category("spleling")
    message = str(caught.value)
    assert "Did you mean 'spelling'?" in message
    assert "wrong-formula" in message  # the valid names are listed


def test_unknown_ability_is_rejected():
    with pytest.raises(UnknownName, match="Did you mean 'reasoning'"):
        get_ability("reasonin")
