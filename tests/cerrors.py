"""The exceptions the interpreter raises while a piece of code runs, those C code raises and
clears by itself included, seen by gdb on the interpreter's own symbols: ``needle in data`` on
bytes tries the needle as an int first, so a bytes needle costs a TypeError made, formatted
and dropped on every call (CPython's ``_Py_bytes_contains``), which no Python tool shows."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# gdb's Python: each os.kill(pid, 0) of the program turns counting on or off; every exception
# set while on is noted with the innermost Python frame running (py-bt: python's gdb helpers).
_GDB_SCRIPT = """
import json
import gdb

regions = []


class Raised(gdb.Breakpoint):
    def stop(self):
        kind = gdb.parse_and_eval("((PyTypeObject *) exception)->tp_name").string()
        try:
            where = gdb.execute("py-bt", to_string=True)
        except gdb.error:
            where = ""
        regions[-1].append([kind, where])
        return False


class Marker(gdb.Breakpoint):
    def stop(self):
        # Stopping at every exception of the imports before would take seconds: on only here.
        raised.enabled = not raised.enabled
        if raised.enabled:
            regions.append([])
        return False


gdb.execute("set breakpoint pending on")
raised = Raised("_PyErr_SetObject", internal=True)
raised.enabled = False
Marker("kill", internal=True)
gdb.execute("run")
print("RAISED " + json.dumps(regions))
"""

_PROGRAM = """
import os
{setup}
def mark():
    os.kill(os.getpid(), 0)
data = b"abc"
mark(); b"\\x00" in data; mark()  # the control: a TypeError made and dropped in C
mark()
{region}
mark()
"""

_FRAME = re.compile(r'File "([^"]*)", line (\d+)')


def raised_in(setup: str, region: str, tmp_path: Path) -> list[tuple[str, str]]:
    """The exceptions set while ``region`` runs (after ``setup``; both Python source run at
    module level), each as its type and the ``file:line`` of the innermost Python frame then
    running. Skips where gdb cannot see them: no gdb, or an interpreter without symbols or
    gdb helpers (the control region, which always raises one, showed none)."""
    gdb = shutil.which("gdb")
    if gdb is None:
        pytest.skip("gdb is not installed")
    script = tmp_path / "raised.py"
    script.write_text(_GDB_SCRIPT)
    program = _PROGRAM.format(setup=textwrap.dedent(setup), region=textwrap.dedent(region))
    helpers = f"add-auto-load-safe-path {Path(sys.base_prefix).resolve()}"  # for py-bt
    argv = [gdb, "-q", "-batch", "-nx", "-iex", helpers, "-x", str(script), "--args"]
    argv += [sys.executable, "-c", program]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RAISED ")]
    if not lines:  # gdb could not start it (e.g. ptrace not allowed in this container)
        pytest.skip(f"gdb cannot run the interpreter: {done.stderr.strip()[-300:]}")
    assert "exited normally" in done.stdout, done.stdout + done.stderr  # the region ran through
    regions = [
        [(kind, ":".join(m.groups()) if (m := _FRAME.search(bt)) else "?") for kind, bt in hits]
        for hits in json.loads(lines[-1].removeprefix("RAISED "))
    ]
    assert len(regions) == 2, (regions, done.stderr)
    control, measured = regions
    if not any(kind == "TypeError" and at.startswith("<string>:") for kind, at in control):
        pytest.skip(f"gdb cannot see this interpreter's exceptions: {control}")
    return measured
