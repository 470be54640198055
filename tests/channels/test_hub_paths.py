"""The tool hub's and the HTTP tools' shortcuts give what the general paths give: the same
trial and rest (hub.trial_path against TRIAL_PATH), the same tool name (ToolsApp's table of
its tools' paths against TOOL_PATH), for any path; a tool result's header bytes."""

from __future__ import annotations

import secrets
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chaoseval.channels.hub import TRIAL_PATH, trial_path
from chaoseval.engine.http import _TOOL_PATH, ToolsApp
from chaoseval.model.scenario import ToolSpec, tool

TOKENS = [secrets.token_urlsafe(16) for _ in range(3)] + ["a-b_c", "x"]
PIECES = st.sampled_from(
    ["/", "/trials/", "/trials", "trials", "/mcp", "/tools", "/tools/", "ping", "\n", "?", "//",
     "%2F", "é", "", *TOKENS]
)  # fmt: skip
PATHS = st.lists(PIECES | st.text(max_size=4), max_size=6).map("".join)


@given(PATHS)
def test_a_trial_s_token_and_rest_are_the_pattern_s(path: str) -> None:
    live = {token: object() for token in TOKENS}
    token, rest = trial_path(path)
    match = TRIAL_PATH.match(path)
    assert live.get(token) is (live.get(match["token"]) if match else None)
    if match and match["token"] in live:
        assert (token, rest) == (match["token"], match["rest"] or "/")


def _spec(name: str) -> ToolSpec:
    def fn(world: Any) -> dict[str, Any]:
        return {}

    return tool(name=name)(fn)


class _Tools:
    """What ToolsApp reads of a tool channel to make its table: the tools by name (a name the
    pattern refuses too, as a hand-made mapping may hold one)."""

    def __init__(self) -> None:
        self.specs = {name: _spec("ping") for name in ("ping", "lookup_order", "x9", "Bad-Name")}


@given(st.lists(PIECES | st.sampled_from(["lookup_order", "x9", "Bad-Name"]), max_size=5))
def test_a_tool_s_name_is_the_pattern_s(pieces: list[str]) -> None:
    app = ToolsApp(_Tools())  # type: ignore[arg-type]
    for path in ("".join(pieces), "/tools/" + "".join(pieces)):
        match = _TOOL_PATH.match(path)
        assert app._tool_name(path) == (match["name"] if match else None)


def test_a_json_answer_s_header_bytes_are_its_headers_encoded() -> None:
    """_write sends _JSON_RAW for a tool result's headers: the bytes it makes of any other."""
    from chaoseval.engine.http import _JSON, _JSON_RAW, encode_result

    assert encode_result({"ok": True}).headers is _JSON
    assert [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in _JSON.items()] == [
        _JSON_RAW
    ]
