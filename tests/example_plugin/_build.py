"""A minimal in-tree PEP 517 backend: builds this package's wheel with the standard library.

A real plugin package would use setuptools or hatchling. This one builds offline and does not
depend on the installing environment's setuptools/wheel versions, so the test that installs
it with ``pip install --no-build-isolation`` runs anywhere. Metadata and entry points are
read from pyproject.toml, as a real backend would read them.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).parent


def _project() -> dict:
    return tomllib.loads((HERE / "pyproject.toml").read_text())["project"]


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return []


def build_wheel(
    wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None
) -> str:
    project = _project()
    dist = project["name"].replace("-", "_")
    version = project["version"]
    info = f"{dist}-{version}.dist-info"
    groups = project.get("entry-points", {})
    files: dict[str, bytes] = {
        str(p.relative_to(HERE)): p.read_bytes()
        for p in sorted((HERE / "chaoseval_drop_field").rglob("*.py"))
    }
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n"
        f"Summary: {project.get('description', '')}\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: _build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in groups.items()
    ).encode()
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
