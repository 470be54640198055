"""The label sheet's formula guard (OWASP "CSV injection"): no guarded cell starts a formula,
and reading a cell back gives exactly the text that was guarded, whatever it was."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chaoseval.investigate.sheet import guard_cell, unguard_cell

TRIGGERS = tuple("=+-@\t\r\uff1d\uff0b\uff0d\uff20")
# Texts made mostly of what matters here: triggers, quotes and blanks at the start.
texts = (
    st.text(alphabet=st.sampled_from([*TRIGGERS, "'", " ", "\n", "a", "1", '"', ","])) | st.text()
)


@given(texts)
def test_a_guarded_cell_starts_no_formula_and_reads_back_as_written(text: str) -> None:
    cell = guard_cell(text)
    assert not cell.startswith(TRIGGERS)
    assert not cell.lstrip(" \n\x0b\x0c").startswith(TRIGGERS)
    assert unguard_cell(cell) == text


def test_the_owasp_examples() -> None:
    assert guard_cell('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert guard_cell("@SUM(1)") == "'@SUM(1)"
    assert guard_cell("-2+3") == "'-2+3"
    assert guard_cell("\tx") == "'\tx"
    assert guard_cell("plain text, = inside") == "plain text, = inside"
    assert unguard_cell("'-2 refunds") == "-2 refunds"  # a reviewer's typed note
    assert unguard_cell("'quoted") == "'quoted"  # not a guard's quote: kept
