"""Project settings: ``chaoseval.toml`` or ``[tool.chaoseval]`` in ``pyproject.toml``.

A project writes its matrix once (agent, scenarios, perturbations, trials, seed, gate rules)
and ``chaoseval run``, ``chaoseval gate``, ``chaoseval report`` and the pytest plugin read it.
A flag on the command line always wins over the file, and a list flag replaces the file's
list (``-p latency`` runs only latency, not the configured cells plus latency), so the command
a user types is the whole truth about what it overrides.

The file is found from the working directory upwards: in each directory ``chaoseval.toml``
first, then a ``pyproject.toml`` with a ``[tool.chaoseval]`` table. A ``pyproject.toml``
without one marks the project root and ends the search, so a stray file far above the project
is never picked up. Relative paths in the file are relative to the file's directory.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT
from chaoseval.errors import ConfigError

__all__ = [
    "ProjectConfig",
    "RunSettings",
    "find_config",
    "load_config",
    "parse_size",
    "project_config",
]

DEFAULT_JOURNAL = Path("chaoseval.jsonl")
SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str | None, option: str) -> int | None:
    """``512M``, ``2G``, ``1.5G`` or a number of bytes, as bytes."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m or float(m[1]) <= 0:
        raise ConfigError(f"{option} {text!r}: write a size such as 512M, 2G or 1.5G")
    return int(float(m[1]) * SIZE_UNITS[m[2].upper()])


def _size(value: str | int | None, option: str) -> int | None:
    """A size setting: bytes as a number, or text as :func:`parse_size` reads it."""
    if value is None or isinstance(value, str):
        return parse_size(value, option)
    if value <= 0:
        raise ConfigError(f"{option} {value!r}: write a size such as 8M, or a number of bytes")
    return value


class ProjectConfig(BaseModel):
    """What a project may set; every field is optional and a CLI flag overrides it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str | None = None
    scenarios: list[str] | None = None  # id globs, domains or tag:NAME, as `run -s`
    scenario_paths: list[Path] | None = None  # files or directories, as `run --scenarios`
    perturbations: list[str] | None = None  # cells, as `run -p`
    trials: int | None = Field(default=None, ge=1)
    k: list[int] | None = None
    primary: str | None = None  # the metric verdicts are judged by, as `run --primary`
    seed: int | None = None
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=1)
    trial_timeout: float | None = Field(default=None, gt=0)
    journal: Path | None = None
    app_dir: Path | None = None
    gate: list[str] | None = None  # rules, as `gate --rule`
    # How exec: agents are isolated, as `run --sandbox` (chaoseval.agents.sandbox).
    sandbox: Literal["auto", "bwrap", "none"] | None = None
    max_request_size: int | None = None  # bytes, or "8M": as `run --max-request-size`
    # run --sequential and its design (docs/SEQUENTIAL.md)
    sequential: bool | None = None
    margin: float | None = Field(default=None, gt=0, lt=1)
    alpha: float | None = Field(default=None, gt=0, lt=1)
    round_size: int | None = Field(default=None, ge=1)
    max_trials_per_task: int | None = Field(default=None, ge=1)
    allocate: float | None = Field(default=None, gt=0, le=1)  # a settled task's trial share
    # Where the settings came from, for messages ("" when there is no file), and the file's
    # directory; not user keys.
    source: str = Field(default="", exclude=True)
    root: Path | None = Field(default=None, exclude=True)

    def default_journal(self) -> Path:
        return self.journal or DEFAULT_JOURNAL

    @field_validator("max_request_size", mode="before")
    @classmethod
    def _size_text(cls, value: Any) -> Any:
        if isinstance(value, str | int) and not isinstance(value, bool):
            try:
                return _size(value, "")
            except ConfigError as exc:
                raise ValueError(str(exc).strip()) from None
        return value


_USER_KEYS = sorted(set(ProjectConfig.model_fields) - {"source", "root"})
_PATH_KEYS = ("scenario_paths", "journal", "app_dir")


def _table(path: Path) -> dict[str, Any] | None:
    """The settings table in ``path``, or None when a pyproject.toml has none."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from None
    if path.name != "pyproject.toml":
        return _own_file(doc, path)
    table = doc.get("tool", {}).get("chaoseval")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.chaoseval] must be a table of settings")
    return table


def _own_file(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """chaoseval.toml holds the settings at its top level; a pasted pyproject block (only a
    [tool.chaoseval] table) means the same and is read as such."""
    tool = doc.get("tool")
    if tool is None:
        return doc
    if isinstance(tool, dict) and set(tool) == {"chaoseval"} and set(doc) == {"tool"}:
        table = tool["chaoseval"]
        if isinstance(table, dict):
            return table
    raise ConfigError(
        f"{path}: settings go at the top level of chaoseval.toml; delete the [tool.chaoseval] "
        "line and keep its keys above any other table ([tool.chaoseval] is for pyproject.toml)"
    )


def _where(path: Path) -> str:
    return f"{path} [tool.chaoseval]" if path.name == "pyproject.toml" else str(path)


def _resolve_paths(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative paths in the file are relative to the file, not to where a command runs."""
    out = dict(data)
    for key in _PATH_KEYS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = base / value
        elif isinstance(value, list):
            out[key] = [base / v if isinstance(v, str) else v for v in value]
    cells = out.get("perturbations")
    if isinstance(cells, list):  # a saved spec.json beside the file, as `-p spec.json`
        out["perturbations"] = [
            str(base / c) if isinstance(c, str) and c.endswith(".json") else c for c in cells
        ]
    return out


def _validate(data: dict[str, Any], where: str, root: Path) -> ProjectConfig:
    unknown = [key for key in data if key not in _USER_KEYS]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, _USER_KEYS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"{where}: unknown setting {key!r}; {hint}known settings: {', '.join(_USER_KEYS)}"
        )
    try:
        return ProjectConfig.model_validate({**data, "source": where, "root": root})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (got {e['input']!r})"
            for e in exc.errors()
        )
        raise ConfigError(f"{where}: {problems}") from None


def load_config(path: Path) -> ProjectConfig:
    """The settings in ``path`` (a chaoseval.toml, or a pyproject.toml's [tool.chaoseval])."""
    if not path.is_file():
        raise ConfigError(f"--config {path}: no such file")
    table = _table(path)
    if table is None:
        raise ConfigError(f"--config {path}: it has no [tool.chaoseval] table")
    return _validate(_resolve_paths(table, path.parent), _where(path), path.parent)


def find_config(start: Path | None = None) -> Path | None:
    """The settings file that applies in ``start`` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        own = directory / "chaoseval.toml"
        if own.is_file():
            return own
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            # A project root: its settings, or none (never a file above the project).
            return pyproject if _table(pyproject) is not None else None
    return None


def project_config(explicit: Path | None = None, start: Path | None = None) -> ProjectConfig:
    """The settings a command runs with: ``explicit`` (--config), else the file found from
    ``start``, else none (every field unset)."""
    path = explicit if explicit is not None else find_config(start)
    return load_config(path) if path is not None else ProjectConfig()


# What `run` does when neither a flag nor the file says otherwise.
RUN_DEFAULTS: dict[str, Any] = {
    "perturbations": [],
    "scenarios": [],
    "scenario_paths": [],
    "trials": 5,
    "primary": "pass^1",
    "seed": 0,
    "model": "sim-1",
    "temperature": 0.7,
    "concurrency": 4,
    "journal": DEFAULT_JOURNAL,
    "app_dir": Path("."),
    "gate": [],
    "sandbox": "auto",
    "sequential": False,
    "margin": 0.1,
    "alpha": 0.05,
    "round_size": 2,
    "max_trials_per_task": 20,
}


@dataclass(frozen=True)
class RunSettings:
    """A matrix to run: each setting from its override (a CLI flag, a fixture argument), else
    the project's file, else the default. A list override replaces the file's list."""

    agent: str
    perturbations: list[str]
    scenarios: list[str]
    scenario_paths: list[Path]
    trials: int
    k: list[int] | None
    primary: str
    seed: int
    model: str
    temperature: float
    concurrency: int
    trial_timeout: float | None
    journal: Path
    app_dir: Path
    gate: list[str]
    sandbox: str
    max_request_size: int | str | None = None
    sequential: bool = False
    margin: float = 0.1
    alpha: float = 0.05
    round_size: int = 2
    max_trials_per_task: int = 20
    allocate: float | None = None  # --sequential: a settled task's share of later trials

    @property
    def request_limit(self) -> int:
        """Bytes of one request body a trial's servers accept."""
        limit = _size(self.max_request_size, "--max-request-size")
        return DEFAULT_REQUEST_LIMIT if limit is None else limit

    def primary_metric(self) -> str:
        """The primary metric's label, checked against the trial count (pass^1 by default)."""
        from chaoseval.analysis.primary import parse_primary

        return parse_primary(self.primary, self.trials).label

    def ks(self) -> list[int]:
        """The k values asked for; by default 1, 2, 5 where the trial count allows, and n;
        always the primary metric's k."""
        from chaoseval.analysis.primary import parse_primary

        main = parse_primary(self.primary, self.trials)
        ks = sorted(set(self.k or [x for x in (1, 2, 5) if x <= self.trials] + [self.trials]))
        if main.metric != "mean":
            ks = sorted({*ks, main.kk})
        bad = [x for x in ks if x < 1 or x > self.trials]
        if bad:
            raise ConfigError(f"--k {bad} must be between 1 and --trials ({self.trials})")
        return ks

    @classmethod
    def resolve(cls, cfg: ProjectConfig, **overrides: Any) -> RunSettings:
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"unknown run settings {sorted(unknown)}; known: {_USER_KEYS}")
        values: dict[str, Any] = {}
        for f in fields(cls):
            value = overrides.get(f.name)
            if value is None:
                value = getattr(cfg, f.name)
            values[f.name] = RUN_DEFAULTS.get(f.name) if value is None else value
        if not values["agent"]:
            where = cfg.source or "chaoseval.toml or [tool.chaoseval] in pyproject.toml"
            raise ConfigError(
                f"no agent: pass --agent NAME (a registered name, module:factory or "
                f'exec:COMMAND), or set agent = "..." in {where}'
            )
        from_file = overrides.get("agent") is None and cfg.agent is not None
        if from_file and overrides.get("app_dir") is None and cfg.app_dir is None and cfg.root:
            # The file names a module:factory agent: import it from beside the file, so the
            # project's commands work from any of its subdirectories.
            values["app_dir"] = cfg.root
        return cls(**values)
