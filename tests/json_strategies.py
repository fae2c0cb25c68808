"""Hypothesis strategies for JSON values, shared by the tests of the readers and writers of JSON text."""

from __future__ import annotations

from hypothesis import strategies as st

# any JSON value the standard library writes, with integers past 64 bits and infinite floats among them
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)
