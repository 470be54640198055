"""A journal line is written as it was serialized unless it holds a secret or may hold a string
over TEXT_LIMIT: a long line of short strings (a trial of thousands of steps) is not
re-encoded through Python, and a long string is still cut wherever it lies and whatever its
characters' escapes."""

from __future__ import annotations

import json

import pytest

from chaoseval.redact import TEXT_LIMIT, clean_json

MARK = "cut by chaoseval"


def _never() -> object:
    raise AssertionError("the line was re-encoded")


def test_a_long_line_of_short_strings_is_written_as_it_came() -> None:
    steps = [{"kind": "model", "args": {"model": "m", "n": i}, "result": "ok \\ \" fine"}
             for i in range(12_000)]  # fmt: skip
    line = json.dumps({"steps": steps}, separators=(",", ":"))
    assert len(line) > 2 * TEXT_LIMIT
    assert clean_json(line, _never) is line


# Quotes and backslashes are escaped in the line's text; 'a"' alternates.
OVER = ['"' * (TEXT_LIMIT + 1), "\\" * (TEXT_LIMIT + 1), 'a"' * (TEXT_LIMIT // 2 + 1),
        "z" * (TEXT_LIMIT + 1)]  # fmt: skip


@pytest.mark.parametrize("text", OVER)
@pytest.mark.parametrize("before", [0, 1, TEXT_LIMIT // 2 - 1, TEXT_LIMIT // 2, TEXT_LIMIT - 7])
def test_a_string_over_the_limit_is_cut_wherever_it_lies(text: str, before: int) -> None:
    # Escaped quotes (every other character of the line's text for the first) must not read
    # as the string's end, whatever block of the line the string starts in.
    value = {"pad": "p" * before, "long": text, "after": ["short"] * 5000}
    line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    written = json.loads(clean_json(line, lambda: value))
    assert MARK in written["long"] and len(written["long"]) < TEXT_LIMIT + 100
    assert written["pad"] == value["pad"] and written["after"] == value["after"]


def test_a_string_at_the_limit_is_kept_whole() -> None:
    value = {"long": "z" * TEXT_LIMIT, "after": ["short"] * 5000}
    line = json.dumps(value, separators=(",", ":"))
    assert json.loads(clean_json(line, lambda: value)) == value


def test_a_secret_in_a_long_line_is_still_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "planted-Secret-value-0042-abcdefghij"
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)  # (the redactor reads the environment)
    value = {"steps": ["short"] * 60_000, "answer": f"the key is {secret}"}
    line = json.dumps(value, separators=(",", ":"))
    assert len(line) > TEXT_LIMIT
    assert secret not in clean_json(line, lambda: value)
