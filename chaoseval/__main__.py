import os
import sys

# `python -m` puts the working directory first on sys.path, where a user's yaml.py would
# replace one of chaoseval's dependencies; `--app-dir` (default: that same directory) appends
# it instead, so `python -m chaoseval` and the `chaoseval` script import the same modules.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from chaoseval.cli.app import app

app(prog_name="chaoseval")
