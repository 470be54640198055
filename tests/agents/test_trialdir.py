"""A trial's directory is removed whole whatever the agent left in it (chaoseval.agents.trialdir):
a tree deeper than Python's recursion limit and PATH_MAX, unreadable directories, symlinks out."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chaoseval.agents.trialdir import remove_tree
from tests.agents.test_sandbox import SCENARIO, command, run_exec

# Leaves a tree 3000 levels deep in its working directory (each level entered: its full path
# is far past PATH_MAX), then answers with where its trial directory was.
DEEP = r"""
import json, os
trial = os.path.dirname(os.getcwd())
for _ in range(3000):
    os.mkdir("d")
    os.chdir("d")
open("leaf.txt", "w").write("x")
print(json.dumps({"answer": trial}))
"""


def test_an_agent_leaving_a_3000_level_tree_is_judged_on_its_answer_and_leaves_nothing(tmp_path):
    """Before, removing the tree raised RecursionError: the trial was booked as the agent's
    crash and its directory stayed in /tmp."""
    [record] = run_exec(tmp_path, command(tmp_path, DEEP))
    assert record.root_cause != "crash" and record.status != "not_evaluable", record.error
    assert record.answer and record.answer.startswith("/")
    assert not Path(record.answer).exists()
    assert record.trial_id.startswith(SCENARIO)


def test_remove_tree_follows_no_symlink_and_opens_what_the_agent_locked(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    tree = tmp_path / "trial"
    locked = tree / "a" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    (tree / "a" / "to_outside").symlink_to(outside)
    (tree / "a" / "to_file").symlink_to(outside / "keep.txt")
    os.chmod(locked, 0)
    os.chmod(tree / "a", 0o500)
    remove_tree(tree)
    assert not tree.exists()
    assert json.dumps(sorted(p.name for p in outside.iterdir())) == '["keep.txt"]'
    assert (outside / "keep.txt").read_text() == "kept"
