"""The sandbox keeps an agent's own installation: paths its environment names under the
private /tmp (NODE_PATH, PYTHONPATH, VIRTUAL_ENV, PATH) are shown read-only, never /tmp
itself, so other trials stay out of sight. Real bwrap, a real exec: agent."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from tests.agents.test_sandbox import command, run_exec

# Imports a package found only through PYTHONPATH, and looks for other trials' directories.
USES_ITS_PACKAGE = r"""
import json, os, tempfile
import chaoseval_test_helper
trial = os.path.dirname(os.getcwd())
others = [d for d in os.listdir(tempfile.gettempdir())
          if d.startswith("chaoseval-") and os.path.join(tempfile.gettempdir(), d) != trial]
print(json.dumps({"answer": json.dumps([chaoseval_test_helper.WORD, others])}))
"""


def test_a_package_on_pythonpath_under_tmp_is_found_in_the_sandbox(
    tmp_path, monkeypatch, request, bwrap
):
    """Before, PYTHONPATH's directory under /tmp vanished in the sandbox: every trial crashed
    with ModuleNotFoundError (as Node's NODE_PATH did with `Cannot find module`)."""
    lib = Path(tempfile.mkdtemp(prefix="lib-"))  # under /tmp, apart from the agent's script
    request.addfinalizer(lambda: shutil.rmtree(lib))
    (lib / "chaoseval_test_helper.py").write_text("WORD = 'installed'\n")
    monkeypatch.setenv("PYTHONPATH", str(lib))
    records = run_exec(tmp_path, command(tmp_path, USES_ITS_PACKAGE), trials=2, concurrency=2)
    assert [r.root_cause for r in records if r.root_cause in ("crash", "harness_error")] == []
    for record in records:
        word, others = json.loads(record.answer or "[]")
        assert word == "installed" and others == []
