"""The words a value is found by (`projections.pending_search.terms`): taken from all its
texts at once, they are the words its texts give one by one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.pending_search import MAX_TERMS, terms, words

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def one_text_at_a_time(*values: Any) -> set[str]:
    """The words, text by text: what `terms` must give."""
    found: set[str] = set()
    for text in texts(values):
        found.update(words(text))
        if len(found) >= MAX_TERMS:
            return set(sorted(found)[:MAX_TERMS])
    return found


def texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, dict):
        return [t for key, item in value.items() for t in [str(key), *texts(item)]]
    return [t for item in value for t in texts(item)]


@settings(max_examples=500, deadline=None)
@given(st.lists(json_values, max_size=4))
def test_the_words_of_all_texts_at_once_are_those_of_each_text(values):
    assert terms(*values) == one_text_at_a_time(*values)


def test_a_value_of_more_words_than_kept_keeps_those_of_its_first_texts():
    # Given a payload of 600 distinct words, in 600 texts
    payload = [f"w{n:04d}" for n in range(600)]
    # Then the words kept are those the texts give one by one, up to the cap
    assert terms(payload) == one_text_at_a_time(payload)
    assert len(terms(payload)) == MAX_TERMS


def test_a_final_sigma_lowers_as_at_the_end_of_its_own_text():
    assert terms("ΟΔΟΣ", "ΣΑΣ") == one_text_at_a_time("ΟΔΟΣ", "ΣΑΣ") == {"οδος", "σας"}


def test_subclasses_of_json_types_give_their_texts():
    class Name(str):
        pass

    class Count(int):
        pass

    assert terms({Name("key"): [Count(7), Name("Value")]}) == {"key", "7", "value"}
