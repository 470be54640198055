"""Same command, same seed, same journal: refactors must not change behaviour."""

from __future__ import annotations

import json

import pytest

from tests.e2e.golden_journal import AGENTS, produce, read_golden

pytestmark = pytest.mark.slow


def _first_difference(expected: list[str], got: list[str]) -> str:
    for want, have in zip(expected, got, strict=False):
        if want != have:
            w, h = json.loads(want), json.loads(have)
            keys = sorted(k for k in set(w) | set(h) if w.get(k) != h.get(k))
            return f"record {w.get('trial_id', 'manifest')}: fields {keys} differ"
    return f"{len(expected)} golden records, {len(got)} now"


@pytest.mark.parametrize("agent", AGENTS)
def test_journal_matches_golden(agent, tmp_path):
    expected = read_golden(agent)
    got = produce(agent, tmp_path)
    assert got == expected, (
        _first_difference(expected, got)
        + " — if the change is intended, regenerate with `python -m tests.e2e.golden_journal`"
        " in a commit that says which behaviour changed"
    )
