"""chaoseval.redact: redacting twice is redacting once (the view redacts each text, then the
whole page: the second pass must not take the marker and the markup after it for a value)."""

from __future__ import annotations

from chaoseval.redact import MARKER, Redactor


def test_a_redacted_value_followed_by_markup_is_left_as_it_is() -> None:
    r = Redactor()
    for text in (
        "api_key=sk-live-PlantedKey0042</pre>",
        "x-api-key: sk-live-PlantedKey0042",
        "Authorization: Bearer sk-live-PlantedKey0042",
        "authorization: token abcdefgh12",
    ):
        once = r.text(text)
        assert "PlantedKey" not in once and "abcdefgh12" not in once and MARKER in once
        page = f"<pre>{once}</pre></div><div class='x'>"
        assert r.text(page) == page
    # A value that only starts with the marker is still a value.
    assert r.text(f"api_key={MARKER}sk-live-PlantedKey0042") == f"api_key={MARKER}"
