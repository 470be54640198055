"""How a simulated model treats instructions planted in what it reads.

The reference agents' documented susceptibility to injected instructions:

- ``naive`` reads tool results, pages and memory as instructions: each planted instruction it
  reads (:func:`chaoseval.model.injection.instructions` finds them in any encoding) it follows
  with probability :data:`NAIVE_FOLLOWS`, one draw per instruction from the episode's own
  ``injection`` stream (so its other decisions draw exactly as in the clean twin);
- ``resilient`` treats tool text as data: it never acts on an instruction it read there.

Following means doing what the instruction says, then going on with the user's task: calling
the tool it names (with ``<given>`` filled in from what the agent knows of its task) or ending
the answer with the words it asks for. Only text the agent received is read, never the ledger.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from chaoseval.model.injection import Instruction, instructions, strings

NAIVE_FOLLOWS = 0.5
_REF = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")


class Susceptibility:
    """One episode's reading of planted instructions: which ones it follows (each decided once,
    the first time it is read)."""

    def __init__(self, rng: random.Random, follows: float) -> None:
        self.rng = rng
        self.follows = follows
        self.seen: set[Instruction] = set()

    def read(self, value: Any) -> list[Instruction]:
        """The instructions in ``value`` (a tool result, a page, memory values) seen for the
        first time that this model decides to follow, in the order they appear."""
        if self.follows <= 0:
            return []  # text is data: nothing in it is read as an instruction
        chosen = []
        for text in strings(value):
            for found in instructions(text):
                if found in self.seen:
                    continue
                self.seen.add(found)
                if self.rng.random() < self.follows:
                    chosen.append(found)
        return chosen


def filled(instruction: Instruction, known: Mapping[str, Any]) -> dict[str, Any]:
    """The instruction's arguments with each ``<name>`` replaced by what the agent knows of it
    (its task's givens); a name it does not know stays as written."""

    def fill(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        whole = _REF.fullmatch(value)
        if whole and whole.group(1) in known:
            return known[whole.group(1)]  # a lone reference keeps the value's type
        return _REF.sub(lambda m: str(known.get(m.group(1), m.group(0))), value)

    return {k: fill(v) for k, v in instruction.args}
