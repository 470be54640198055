"""The exit codes of every command that judges a run: ``gate``, ``run`` with gate rules and
``compare --fail-on-regression`` (issue 41). A module of its own, without imports, so that the
CLI's commands name them without loading the analysis.

- 0 everything held;
- 1 a rule broken, or a cell broken or degraded (B worse or less resilient, for compare);
- 2 a usage error (a rule that does not parse, a selector that names no cell);
- 3 something could not be decided (an inconclusive cell, a rule without evaluable trials or
  whose interval straddles its bound; ``--allow-inconclusive`` maps it to 0);
- 4 the run stopped on the harness's own error (a full disk, a plugin, the model endpoint),
  not the agent's.
"""

from __future__ import annotations

__all__ = ["EXIT_BROKEN", "EXIT_HARNESS", "EXIT_HELD", "EXIT_UNDECIDED", "EXIT_USAGE", "exit_code"]

EXIT_HELD, EXIT_BROKEN, EXIT_USAGE, EXIT_UNDECIDED, EXIT_HARNESS = 0, 1, 2, 3, 4


def exit_code(broken: bool, undecided: bool, allow_inconclusive: bool = False) -> int:
    """The one exit code of a judgement: broken wins over undecided, which
    ``allow_inconclusive`` lets pass."""
    if broken:
        return EXIT_BROKEN
    if undecided and not allow_inconclusive:
        return EXIT_UNDECIDED
    return EXIT_HELD
