"""What the column reader reads again after its pass over a journal, by byte offset.

``b`` is the reader's builder and ``t`` its :class:`chaoseval.store.columns.Trials` (not
imported: columns imports this).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import numpy as np

from chaoseval.model.records import TrialRecord
from chaoseval.store.lite import DECODER, summarize

__all__ = ["remeasure", "retally"]


def retally(b: Any, t: Any) -> None:
    """The sums per tool again over the rows' final lines: a re-run trial counts once, where
    its first line was (as read_journal orders it)."""
    t.by_tool = {}
    t.sampling = Counter()
    with b.path.open("rb") as fh:
        for offset in t.offsets.tolist():
            fh.seek(offset)
            line = fh.readline()
            try:
                r: Any = DECODER.decode(line)
            except msgspec.DecodeError:
                r = TrialRecord.model_validate_json(line)
            b._tally(summarize(r, {}), r)


def remeasure(b: Any, t: Any, names: list[str]) -> None:
    """Trials written before the manifest were read without its reference calls: measure
    their correctness again (``names``: the numeric columns in TrialSummary.values order)."""
    with b.path.open("rb") as fh:
        for offset, _, _ in b.early:
            rows = np.flatnonzero(t.offsets == offset)
            if not len(rows):  # re-run later: its later line was read with the manifest
                continue
            fh.seek(offset)
            values = summarize(TrialRecord.model_validate_json(fh.readline()), b.refs).values
            for name in ("correct", "right_tool", "coverage"):
                t.col[name][rows[0]] = values[names.index(name)]
