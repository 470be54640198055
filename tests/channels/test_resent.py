"""A trial's chat requests read where they grew (resent.ConversationReader) are read as a whole
body is: the same top-level members as read_top, the same fingerprint, the same escape answer.

Conversations are generated as agents send them (each request its history and a new round,
members before and after the messages in any order, any JSON spacing) and then spoiled where
a reader that goes on from an earlier request could be misled: new bytes that are not new
messages, a trailing comma, a second "messages" member, a changed tail, escapes, bytes that
are not UTF-8, several conversations taking turns.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.channels.model.resent import HEADS, KEEP_FROM, ConversationReader, escaped
from chaoseval.channels.model.wire import fingerprint, read_top

texts = st.text(st.sampled_from('ab "\\/é\u200b'), max_size=6)
scalars = st.none() | st.booleans() | st.integers(-5, 5) | texts
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": scalars | st.lists(texts)}
)
MEMBERS = {
    "model": st.sampled_from(["m", "gpt", "messages"]),
    "tools": st.lists(st.fixed_dictionaries({"name": texts}), max_size=2) | st.none(),
    "temperature": st.none() | st.floats(0, 2),
    "seed": st.none() | st.integers(0, 9),
    "stream": st.sampled_from([False, True]),
    "tool_choice": scalars,
    "metadata": st.dictionaries(
        st.sampled_from(["messages", "x"]), scalars | st.lists(scalars, max_size=2), max_size=2
    ),
}
# Bytes put between a request's history and its tail in place of new messages.
ODD = [b"", b" ", b", ", b",", b",,", b", 1]", b"], \"messages\": [1",
       b"], \"model\": \"z\", \"q\": [1", b", 1], \"seed\": null, \"q\": [2",
       b", \"\\u00e9\"", b", \"\xff\"", b", \"\xc3\xa9\"", b"\n  ,\n  {}", b", [1, [2]]",
       b", {\"messages\": []}", b", 1 2", b", 1], \"~\": [2", b"], \"~\": [1"]  # fmt: skip
TAILS = [b"", b", \"messages\": []", b", \"messages\": null", b", \"model\": \"t\"", b", \"z\": 1",
         b", \"tools\": [{}]", b"  "]  # fmt: skip


class _Talk:
    """One conversation's text: members ahead of its messages, its messages, members after."""

    def __init__(self, before: dict[str, Any], after: dict[str, Any], spacing: Any) -> None:
        self.before, self.after, self.items = before, after, [b"{}"]
        self.item, self.key = spacing

    def _pairs(self, members: dict[str, Any]) -> list[bytes]:
        return [json.dumps(k).encode() + self.key + json.dumps(v, ensure_ascii=False).encode()
                for k, v in members.items()]  # fmt: skip

    def body(self, middle: bytes = b"", tail: bytes = b"") -> bytes:
        """The request: ``middle`` after the history, ``tail`` after the members after it."""
        head = b"".join(p + self.item for p in self._pairs(self.before))
        after = b"".join(self.item + p for p in self._pairs(self.after))
        history = self.item.join(self.items)
        parts = [b"{", head, b'"messages"', self.key, b"[", history, middle, b"]", after, tail]
        return b"".join(parts) + b"}"


def _expected(raw: bytes) -> tuple[Any, str, bool]:
    plain = escaped(raw) is None
    return (read_top(raw) if plain else None), fingerprint(raw), plain


def _same(got: Any, want: Any) -> bool:
    """Equal, the conversation and the tools compared as their items' bytes, in order."""
    if want is None or got is None:
        return got is want
    if list(got) != list(want):
        return False
    for key, value in want.items():
        mine = got[key]
        if key in ("messages", "tools") and isinstance(value, list):
            if [bytes(x) for x in mine] != [bytes(x) for x in value]:
                return False
        elif mine != value or type(mine) is not type(value):
            return False
    return True


talks = st.builds(
    _Talk,
    st.dictionaries(st.sampled_from(sorted(MEMBERS)), st.just(None), max_size=3),
    st.dictionaries(st.sampled_from(sorted(MEMBERS)), st.just(None), max_size=3),
    st.sampled_from([(b", ", b": "), (b",", b":"), (b",\n  ", b": ")]),
)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.lists(talks, min_size=1, max_size=3))
def test_requests_read_where_they_grew_read_as_whole_bodies(data: Any, talks: list[_Talk]) -> None:
    for talk in talks:  # the members' values, drawn once: every request resends them
        for members in (talk.before, talk.after):
            for key in members:
                members[key] = data.draw(MEMBERS[key])
    reader = ConversationReader(keep_from=0)
    for _ in range(data.draw(st.integers(1, 12))):
        talk = talks[data.draw(st.integers(0, len(talks) - 1))]
        action = data.draw(st.sampled_from(["grow", "grow", "again", "odd", "fork"]))
        if action == "grow":
            new = data.draw(st.lists(messages, min_size=1, max_size=3))
            talk.items += [json.dumps(m, ensure_ascii=data.draw(st.booleans())).encode()
                           for m in new]  # fmt: skip
        elif action == "fork":  # the agent trimmed its history
            talk.items = talk.items[: data.draw(st.integers(1, len(talk.items)))]
        middle = data.draw(st.sampled_from(ODD)) if action == "odd" else b""
        tail = data.draw(st.sampled_from(TAILS)) if action == "odd" else b""
        raw = talk.body(middle, tail)
        got, want = reader.read(raw), _expected(raw)
        assert got[1:] == want[1:], raw
        assert _same(got[0], want[0]), raw


@pytest.mark.parametrize("middle", ODD)
@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("spacing", [(b", ", b": "), (b",\n ", b":")])
@pytest.mark.parametrize("before", [{"model": "m"}, {"metadata": {"messages": [{}]}}])
def test_each_odd_request_after_a_first_is_read_as_a_whole_body(
    middle: bytes, tail: bytes, spacing: Any, before: dict[str, Any]
) -> None:
    talk = _Talk(before, {"tools": [{"name": "t"}]}, spacing)
    reader = ConversationReader(keep_from=0)
    for raw in (talk.body(), talk.body(middle, tail)):
        got, want = reader.read(raw), _expected(raw)
        assert got[1:] == want[1:], raw
        assert _same(got[0], want[0]), raw


def test_a_conversation_is_read_only_where_it_grew() -> None:
    """The reader goes on from the request a body repeats (no whole read but the first), for
    as many conversations taking turns as it keeps; a request whose members after its
    messages are the earlier one's has only its new messages read."""
    talks = [_Talk({"model": "m"}, {"tools": [{"name": "t"}]}, (b", ", b": "))
             for _ in range(HEADS)]  # fmt: skip
    reader = ConversationReader(keep_from=0)
    reads: list[str] = []

    def counted(name: str) -> Any:
        method = getattr(reader, name)

        def read(*args: Any) -> Any:
            reads.append(name)
            return method(*args)

        return read

    for name in ("_fresh", "_after", "_between"):
        setattr(reader, name, counted(name))
    for turn in range(4):
        for n, talk in enumerate(talks):
            talk.items.append(json.dumps({"role": "user", "content": f"{n}.{turn}"}).encode())
            tail = b', "max_tokens": 9' if turn == 3 else b""  # a new member after: _after
            raw = talk.body(tail=tail)
            got = reader.read(raw)
            assert _same(got[0], read_top(raw)) and got[1] == fingerprint(raw)
    assert reads == ["_fresh"] * HEADS + ["_between"] * 2 * HEADS + ["_after"] * HEADS


def test_a_small_request_is_read_whole_and_not_kept() -> None:
    talk = _Talk({"model": "m"}, {}, (b", ", b": "))
    reader = ConversationReader()
    for size in (10, KEEP_FROM - 200, KEEP_FROM + 200):
        talk.items.append(json.dumps({"role": "user", "content": "x" * size}).encode())
        raw = talk.body()
        got = reader.read(raw)
        assert _same(got[0], read_top(raw)) and got[1] == fingerprint(raw)
        assert len(reader._reads) == (len(raw) >= KEEP_FROM)


def test_a_body_with_two_messages_members_is_not_gone_on_from() -> None:
    """The whole read takes the last of two "messages" members; a reader that kept the first
    one's bytes would count the next request's new messages into it."""
    talk = _Talk({"model": "m"}, {"tools": [{"name": "t"}]}, (b", ", b": "))
    reader = ConversationReader(keep_from=0)
    for grown in (b"", b', {"role": "user"}'):
        raw = talk.body(grown, b', "messages": [{}]')
        got, want = reader.read(raw), _expected(raw)
        assert got[1:] == want[1:]
        assert _same(got[0], want[0]), raw
