"""Parsing perturbation specs from the command line into matrix cells.

latency                          one plugin, default parameters
latency:mean=0.5,jitter=0.1      parameters (values parsed as YAML scalars)
latency:mean=0.5|2|8             a sweep: one cell per value
latency:mean=2+timeout           a stack: several plugins in one cell
latency(mean=2)+timeout          the same, as reports print a cell
path/to/spec.json                a saved spec (as written by `chaoseval search`)
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import yaml

from chaoseval.errors import ConfigError
from chaoseval.model.records import CLEAN, Cell, PerturbationSpec


def scalar(text: str) -> Any:
    """A parameter value as written on the command line: a YAML scalar or flow list."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


# A cell's label as reports print it (PerturbationSpec.label): `timeout(probability=0.3)`.
_LABEL = re.compile(r"([\w.-]+)\((.*)\)", re.DOTALL)


def _parse_one(text: str) -> list[PerturbationSpec]:
    """One plugin, possibly with swept parameters: a list of concrete specs. Its label as a
    report prints it (``name(k=v,...)``) is read as ``name:k=v,...``, so a cell can be
    copied from a report into ``-p``."""
    printed = _LABEL.fullmatch(text.strip())
    if printed is not None:
        text = f"{printed[1]}:{printed[2]}" if printed[2].strip() else printed[1]
    name, _, rest = text.strip().partition(":")
    if not name:
        raise ConfigError(f"empty perturbation name in {text!r}")
    if not rest:
        return [PerturbationSpec(name=name)]
    axes: list[list[tuple[str, Any]]] = []
    for key, raw in key_values(rest, text):
        axes.append([(key, scalar(v)) for v in raw.split("|")])
    return [PerturbationSpec(name=name, params=dict(combo)) for combo in itertools.product(*axes)]


def key_values(rest: str, text: str) -> list[tuple[str, str]]:
    """``a=1,modes=[hang,429]`` as (key, raw value) pairs; ``text`` is the whole spec, named in
    the error."""
    out = []
    for part in _split_params(rest):
        key, eq, raw = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"bad parameter {part!r} in {text!r}; write key=value")
        out.append((key.strip(), raw))
    return out


def _split_params(text: str) -> list[str]:
    """Split on commas that are not inside brackets (lists such as modes=[hang,429])."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return [p for p in parts if p.strip()]


def cell_name(specs: list[PerturbationSpec]) -> str:
    return "+".join(s.label() for s in specs) or CLEAN


def load_spec_file(path: Path) -> list[Cell]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read perturbation spec: {exc}") from None
    items = data if isinstance(data, list) else [data]
    cells = []
    for item in items:
        specs = [PerturbationSpec.model_validate(p) for p in item.get("perturbations", [])]
        cells.append(Cell(name=item.get("name") or cell_name(specs), perturbations=specs))
    return cells


def parse_cells(texts: list[str]) -> list[Cell]:
    cells: list[Cell] = []
    for text in texts:
        path = Path(text)
        if text.endswith(".json") and path.exists():
            cells.extend(load_spec_file(path))
            continue
        stack = [_parse_one(part) for part in text.split("+")]
        for combo in itertools.product(*stack):
            specs = list(combo)
            cells.append(Cell(name=cell_name(specs), perturbations=specs))
    seen: set[str] = set()
    unique = []
    for c in cells:
        if c.name not in seen:
            seen.add(c.name)
            unique.append(c)
    return unique
