"""What a crashed ``exec:`` agent died of, in one line from its stderr.

The last lines of stderr are often not the error: Node.js ends with its version
(``Node.js v20.20.2``), an SDK's background thread with ``[non-fatal] Tracing request
failed``, a Python program with the warnings its interpreter printed on the way out. So:

1. a Python traceback's exception line (the last traceback's first unindented line after
   its frames: ``ValueError: bad order id``, ``httpx.ConnectError: ...``);
2. else the last error line as Node.js and most runtimes print it: ``Error: ...``,
   ``TypeError: ...``, ``Error [ERR_X]: ...``, ``Uncaught ...Error`` (also inside the
   ``| `` borders of a Python exception group, whose members say more than the group);
3. else the last non-empty lines.

The summary goes into the trial's error (``TrialRecord.error``); the whole of stderr stays the
trial's ``stderr.txt`` artifact.
"""

from __future__ import annotations

import re

SUMMARY_CHARS = 300  # the summary is one line of the record, not the log
LAST_LINES = 3  # lines kept when no error line is found

TRACEBACK = "Traceback (most recent call last):"
ERROR_LINE = re.compile(
    r"^(?:Uncaught\s+)?(?:[A-Za-z_$][\w$.]*)?(?:Error|Exception)(?:\s*\[[^\]]*\])?(?::|$)"
)


def _python_exception(lines: list[str]) -> str | None:
    starts = [i for i, line in enumerate(lines) if line.strip() == TRACEBACK]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line.strip() and not line[0].isspace():
            return line.strip()
    return None


def _error_line(lines: list[str]) -> str | None:
    for line in reversed(lines):
        # An exception group's members are drawn inside "  | " borders.
        bare = line.lstrip(" |+")
        if ERROR_LINE.match(bare):
            return bare.strip()
    return None


def summary(stderr: str) -> str:
    """The line that says why the process died ("" when stderr is empty)."""
    lines = stderr.splitlines()
    found = _python_exception(lines) or _error_line(lines)
    if found is None:
        found = " | ".join([ln.strip() for ln in lines if ln.strip()][-LAST_LINES:])
    return found[:SUMMARY_CHARS]
