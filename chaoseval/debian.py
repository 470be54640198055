"""System packages chaoseval drives (Debian's ``chromium``, ``bubblewrap``): installed with
apt-get when missing and we may (root, apt-get there), so that ``make`` and the tests on a
fresh machine set up what they need themselves."""

from __future__ import annotations

import os
import shutil
import subprocess


def apt_install(package: str) -> str | None:
    """None once ``package`` is installed (``apt-get update`` first), else why it cannot be."""
    if os.geteuid() != 0:
        return f"{package} is missing and installing it needs root (apt-get install {package})"
    if shutil.which("apt-get") is None:
        return f"{package} is missing and there is no apt-get to install it with"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", package]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return f"could not install {package} ({' '.join(cmd)}): {done.stderr[-300:]}"
    return None
