"""``chaoseval doctor``: what a project needs, checked in the order a run needs it.

Settings found and valid, scenarios that load, the agent imports and answers one clean trial,
Chromium for UI tasks, bubblewrap for the exec: sandbox. Each check prints ok, or what is
wrong and the fix; the exit status is 1 when a check failed (a warning alone exits 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import typer

from chaoseval.cli._common import ConfigPath, console, select_scenarios, settings, user_agent
from chaoseval.errors import ChaosevalError
from chaoseval.render.printable import escape

Verdict = Literal["ok", "warn", "fail"]
STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


@dataclass
class Check:
    name: str
    verdict: Verdict
    detail: str
    fix: str = ""


def _settings(config: Path | None) -> tuple[Check, Any]:
    from chaoseval.config import find_config

    try:
        cfg = settings(config)
    except ChaosevalError as exc:
        return Check("settings", "fail", str(exc), "fix the file as the message says"), None
    if not cfg.source:
        where = Path.cwd() if config is None else config
        found = find_config() if config is None else None
        return (
            Check(
                "settings",
                "fail",
                f"no chaoseval.toml (or [tool.chaoseval] in pyproject.toml) in {where} or above"
                + (f" ({found} has none)" if found else ""),
                'write chaoseval.toml here: agent = "myagent:factory", scenarios = '
                '["vending-*"], perturbations = ["timeout"] (README: Project settings)',
            ),
            cfg,
        )
    return Check("settings", "ok", f"read {cfg.source}"), cfg


def _scenarios(cfg: Any) -> tuple[Check, list[Any]]:
    try:
        found = select_scenarios(cfg.scenario_paths, cfg.scenarios or [])
    except ChaosevalError as exc:
        return Check("scenarios", "fail", str(exc), "fix the scenario file it names"), []
    if not found:
        return (
            Check(
                "scenarios",
                "fail",
                f"scenarios = {cfg.scenarios} selects none",
                "list them with 'chaoseval scenarios list' and fix the globs",
            ),
            [],
        )
    names = ", ".join(s.id for s in found[:4]) + (", ..." if len(found) > 4 else "")
    return Check("scenarios", "ok", f"{len(found)} load ({names})"), found


def _agent(cfg: Any, scenarios: list[Any]) -> Check:
    from chaoseval.engine.runner import RunConfig, run

    if not cfg.agent:
        return Check(
            "agent",
            "fail",
            "no agent in the settings",
            'add agent = "module:factory" (your module beside chaoseval.toml) or a name '
            "of a bundled agent such as resilient (docs/AGENTS.md lists them)",
        )
    try:
        agent = user_agent(cfg.agent, cfg.app_dir or Path("."))
        result = run(
            RunConfig(
                scenarios=scenarios[:1],
                agent=agent,
                agent_name=cfg.agent,
                trials=1,
                seed=cfg.seed or 0,
                ks=[1],
                references=False,
                sandbox=getattr(cfg, "sandbox", None) or "auto",
            )
        )
    except ChaosevalError as exc:
        return Check("agent", "fail", f"{cfg.agent}: {exc}", "fix what the message names")
    record = result.records[0]
    said = f"{cfg.agent} answered a clean trial of {record.scenario}: {record.status}"
    if record.status == "not_evaluable" or record.root_cause in ("crash", "timeout"):
        why = record.error or record.root_cause or "no answer"
        again = (
            f"chaoseval run -s {record.scenario} -n 1 --journal doctor.jsonl, then "
            "chaoseval report doctor.jsonl (its stderr: doctor.jsonl.d/)"
        )
        return Check("agent", "fail", f"{said} ({why})", f"make it answer one trial: {again}")
    cause = f" ({record.root_cause})" if record.root_cause else ""
    return Check("agent", "ok", said + cause)


def _chromium(cfg: Any, scenarios: list[Any]) -> Check | None:
    from chaoseval.channels.browser.chromium import CHROMIUM

    ui = [s.id for s in scenarios if "ui" in s.tags]
    if not (ui or (cfg.agent or "").startswith("browser-")):
        return None
    if CHROMIUM.exists():
        return Check("chromium", "ok", f"{CHROMIUM}")
    return Check(
        "chromium",
        "fail" if (cfg.agent or "").startswith("browser-") else "warn",
        f"no Chromium at {CHROMIUM}, which the browser agents drive (UI tasks: "
        f"{', '.join(ui[:3]) or 'none'})",
        "apt-get install chromium (as root: make chromium), or point CHAOSEVAL_CHROMIUM at one",
    )


def _sandbox(cfg: Any) -> Check | None:
    from chaoseval.agents.sandbox import resolve

    mode = getattr(cfg, "sandbox", None) or "auto"
    if not (cfg.agent or "").startswith("exec:") or mode == "none":
        return None
    try:
        box = resolve("auto")
    except ChaosevalError as exc:
        return Check("sandbox", "fail", str(exc), "apt-get install bubblewrap")
    if box.bwrap is not None:
        return Check("sandbox", "ok", f"bubblewrap at {box.bwrap}")
    return Check(
        "sandbox",
        "fail" if mode == "bwrap" else "warn",
        f"exec: agents would run unsandboxed: {box.note}",
        'apt-get install bubblewrap (or sandbox = "none" to say it is meant)',
    )


def diagnose(config: Path | None) -> list[Check]:
    """Every check that applies, stopping at the first failure the later ones depend on."""
    first, cfg = _settings(config)
    checks = [first]
    if first.verdict == "fail":
        return checks
    scen, scenarios = _scenarios(cfg)
    checks.append(scen)
    checks += [c for c in (_chromium(cfg, scenarios), _sandbox(cfg)) if c is not None]
    if scenarios:
        checks.append(_agent(cfg, scenarios))
    return checks


def doctor_cmd(config: ConfigPath = None) -> None:
    """Check what this project needs: settings, scenarios, the agent answering one clean
    trial, Chromium for UI tasks, bubblewrap for the sandbox. Exit 1 when something is
    missing, with the fix for each."""
    checks = diagnose(config)
    for c in checks:
        line = f"[{STYLE[c.verdict]}]{c.verdict:4}[/] {c.name}: {escape(c.detail)}"
        console.print(line, soft_wrap=True, highlight=False)
        if c.fix and c.verdict != "ok":
            console.print(f"     fix: {escape(c.fix)}", soft_wrap=True, highlight=False)
    if any(c.verdict == "fail" for c in checks):
        console.print("[bold red]not ready[/]: fix the lines above, then run chaoseval doctor")
        raise typer.Exit(1)
    console.print("[green]ready[/]: chaoseval run")


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_cmd)
