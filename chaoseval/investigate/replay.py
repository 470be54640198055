"""Replay one recorded trial from the journal's seeds, and draw trials for human spot checks.

A replay rebuilds the trial's plan from the manifest (run seed, agent, model settings, the
cell) and the record (scenario, cell, index), runs it again and compares the trajectories.
Wall-clock fields (:data:`WALL_CLOCK`) are ignored; on the virtual clock step times are
simulated and must match.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaoseval.analysis.sampling import sampling_lines
from chaoseval.channels.limits import DEFAULT_REQUEST_LIMIT
from chaoseval.engine.loops import run_loop
from chaoseval.engine.trial import TrialPlan, run_trial, trial_seed
from chaoseval.errors import ConfigError, JournalError
from chaoseval.investigate.sheet import draw
from chaoseval.model.records import Cell, RunManifest, TrialRecord, file_sha256
from chaoseval.model.scenario import Scenario
from chaoseval.model.trajectory import Step
from chaoseval.redact import redact
from chaoseval.render.printable import md_code, md_quote, md_text
from chaoseval.seams.agent import AgentAdapter, load_agent
from chaoseval.store.columns import Trials, as_trials
from chaoseval.store.journal import Journal


@dataclass(frozen=True)
class Timed:
    """A step field that measures elapsed time: ``path`` dotted into a dict (``result.x``)."""

    path: str
    kind: str | None = None  # only in steps of this kind (None: every step)
    # Read from the wall clock even when the trial's clock is virtual (a virtual clock's
    # times are simulated: part of the trial, compared).
    always: bool = False


# Every field of a trajectory that two runs of one trial may differ in only because time
# passed differently: the one list replay (and anything else comparing runs) ignores. A
# channel that records a new wall-clock measurement adds it here.
WALL_CLOCK = (
    Timed("t"),  # the trial clock's time at the step
    Timed("latency"),  # the trial clock's time the step took
    # The model channel times an exchange with the wall clock whatever the trial's clock
    # (chaoseval.channels.model.channel): the request's whole time and the upstream's share.
    Timed("latency", kind="model", always=True),
    Timed("result.upstream_latency", kind="model", always=True),
)
WALL_FIELDS = frozenset(t.path for t in WALL_CLOCK)  # every one, whatever the clock
# A model step's request fingerprint was taken over a canonical text of the body's parse
# before schema 7, over its bytes since: a replay cannot reproduce an older one.
FINGERPRINT = "model:args.request_hash"
BYTES_FINGERPRINTS = 7  # the schema version since which it is over the bytes


@dataclass
class Replay:
    original: TrialRecord
    replayed: TrialRecord
    differences: list[str]

    @property
    def exact(self) -> bool:
        return not self.differences

    @property
    def same_steps(self) -> bool:
        """Everything but step timings matched: the agent waited differently, e.g. jitter drawn
        from an unseeded random source, though it took the same steps."""
        ignore = WALL_FIELDS | unreproducible(self.original)
        return not compare(self.original, self.replayed, ignore=ignore)

    def same_step(self, i: int) -> bool:
        """Step ``i`` is in both runs and equal but for wall-clock fields."""
        a, b = self.original.trajectory.steps, self.replayed.trajectory.steps
        if i >= len(a) or i >= len(b):
            return False
        ignore = unreproducible(self.original)
        return step_view(a[i], ignore) == step_view(b[i], ignore)


def wall_fields(clock: str) -> frozenset[str]:
    """The ``kind:path`` keys of :data:`WALL_CLOCK` that are wall time on ``clock``."""
    return frozenset(f"{t.kind or '*'}:{t.path}" for t in WALL_CLOCK if t.always or clock == "real")


def unreproducible(original: TrialRecord) -> frozenset[str]:
    """What a run of ``original``'s trial today cannot be expected to repeat: its wall-clock
    fields, and a fingerprint taken the way an older schema took it."""
    ignore = wall_fields(original.clock)
    if original.schema_version < BYTES_FINGERPRINTS:
        ignore |= {FINGERPRINT}
    return ignore


def find_record(journal: Journal, trial_id: str) -> TrialRecord:
    records = journal.by_trial_id()
    if trial_id in records:
        return records[trial_id]
    raise no_trial(journal.path, trial_id, records)


def no_trial(path: Path, trial_id: str, ids: Iterable[str]) -> JournalError:
    """The error for a trial id the journal at ``path`` lacks, naming the closest of ``ids``."""
    import difflib

    close = difflib.get_close_matches(trial_id, list(ids), n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return JournalError(f"{path}: no trial {trial_id!r}{hint}")


def find_scenario(scenarios: Sequence[Scenario], scenario_id: str) -> Scenario:
    for s in scenarios:
        if s.id == scenario_id:
            return s
    raise ConfigError(
        f"scenario {scenario_id!r} is not installed or not under --scenarios "
        f"(found: {', '.join(s.id for s in scenarios) or 'none'})"
    )


def record_cell(journal: Journal, record: TrialRecord) -> Cell:
    for cell in journal.manifest.cells:
        if cell.name == record.cell:
            return cell
    # Older or hand-written journals: the record carries its own stack.
    return Cell(name=record.cell, perturbations=record.perturbations)


def step_view(step: Step, ignore: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The step as data, less the fields in ``ignore``: ``path`` (any step), or ``kind:path``
    (``*:path`` any step) with ``path`` dotted into a dict field."""
    data = step.model_dump()
    for key in ignore:
        kind, _, path = key.rpartition(":")
        if kind not in ("", "*", step.kind):
            continue
        *parents, last = path.split(".")
        inner: Any = data
        for name in parents:
            inner = inner.get(name) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            inner.pop(last, None)
    return data


def compare(
    original: TrialRecord, replayed: TrialRecord, ignore: frozenset[str] | None = None
) -> list[str]:
    """What differs between two runs of one trial, ignoring wall-clock fields."""
    if ignore is None:
        ignore = unreproducible(original)
    diffs: list[str] = []
    for name in ("seed", "world_seed", "status", "root_cause", "answer", "error"):
        a, b = getattr(original, name), getattr(replayed, name)
        if a != b:
            diffs.append(f"{name}: {a!r} -> {b!r}")
    a_steps, b_steps = original.trajectory.steps, replayed.trajectory.steps
    if len(a_steps) != len(b_steps):
        diffs.append(f"steps: {len(a_steps)} -> {len(b_steps)}")
    for a, b in zip(a_steps, b_steps, strict=False):
        va, vb = step_view(a, ignore), step_view(b, ignore)
        if va != vb:
            keys = sorted(k for k in va if va.get(k) != vb.get(k))
            diffs.append(f"step {a.index}: {', '.join(keys)} differ")
    fa = [f.model_dump() for f in original.trajectory.faults]
    fb = [f.model_dump() for f in replayed.trajectory.faults]
    if fa != fb:
        diffs.append(f"faults: {len(fa)} recorded, {len(fb)} replayed, contents differ")
    if original.checks != replayed.checks:
        diffs.append("checks differ")
    return diffs


def replay(
    journal: Journal,
    trial_id: str,
    scenarios: Sequence[Scenario],
    *,
    agent: AgentAdapter | None = None,
    wall_timeout: float | None = None,
) -> Replay:
    """Re-run one trial of ``journal`` and compare it with the recorded one."""
    record = find_record(journal, trial_id)
    manifest = journal.manifest
    scenario = find_scenario(scenarios, record.scenario)
    plan = TrialPlan(scenario, record_cell(journal, record), record.index)
    if trial_seed(manifest.seed, plan) != record.seed:
        raise JournalError(
            f"{trial_id}: the recorded trial seed does not follow from the manifest's run seed "
            f"{manifest.seed}; the journal was edited or written by another chaoseval"
        )
    adapter = agent if agent is not None else load_agent(record.agent or manifest.agent)
    isolate = getattr(adapter, "isolate", None)
    if callable(isolate) and manifest.isolation is not None:
        isolate(manifest.isolation.sandbox)  # as the run did, not this machine's default
    wall = wall_timeout or (
        30.0 if manifest.clock == "virtual" else scenario.budgets.trial_timeout + 5
    )
    replayed = run_loop(  # the run's own event loop
        lambda: run_trial(
            plan,
            adapter,
            agent_name=record.agent,
            model=manifest.model,
            clock_mode=manifest.clock,
            run_id=f"replay-{manifest.run_id}",
            run_seed=manifest.seed,
            wall_timeout=wall,
            request_limit=manifest.request_limit or DEFAULT_REQUEST_LIMIT,
        ),
    )
    return Replay(record, replayed, compare(record, replayed))


def changed_since(
    manifest: RunManifest, scenarios: Sequence[Scenario], ids: Iterable[str]
) -> list[str]:
    """One line per scenario of ``ids`` whose file is not the one the run loaded: its sha256
    differs from the manifest's (older journals recorded none: nothing to say)."""
    recorded = {s.id: s.sha256 for s in manifest.scenarios if s.sha256}
    wanted = set(ids)
    out = []
    for s in scenarios:
        then = recorded.get(s.id)
        if s.id not in wanted or then is None:
            continue
        now = file_sha256(s.source)
        if now != then:
            state = f"sha256 {now[:12]} now" if now else "it cannot be read now"
            out.append(
                f"scenario {s.id!r} changed since the run: {s.source} is not the file the "
                f"journal recorded (sha256 {then[:12]} then, {state})"
            )
    return out


# --- spot checks ---------------------------------------------------------------------------


def sample(
    journal: Journal | Trials, n: int = 10, seed: int = 0, status: str = "passed"
) -> list[TrialRecord]:
    """A reproducible draw of ``n`` trials, stratified by cell and verdict (sheet.draw): the
    same journal and seed give the same trials; only the chosen records are read."""
    t = as_trials(journal)
    return [t.record(d.row) for d in draw(t, n, seed, status)]


def _instruction(record: TrialRecord, scenarios: Sequence[Scenario]) -> str | None:
    scenario = next((s for s in scenarios if s.id == record.scenario), None)
    if scenario is None:
        return None
    try:
        _, givens = scenario.build(record.world_seed)
        return scenario.render_instruction(givens)
    except Exception:  # a broken scenario must not stop the review sheet
        return None


def _step_line(record: TrialRecord, step: Step) -> str:
    """One step of the trajectory as a line of Markdown (the agent's text escaped)."""
    if step.kind == "tool":
        args = ", ".join(f"{k}={v!r}" for k, v in (step.args or {}).items())
        line = f"{md_code(f'{step.tool}({args})')} → {step.result_class}"
        if step.error:
            line += f": {md_text(step.error)}"
        return line + _faults(record, step)
    if step.kind == "answer":
        return "answer" + (" (gave up)" if step.gave_up else "")
    if step.kind == "model":
        return _model_line(record, step)
    return step.kind


def _model_line(record: TrialRecord, step: Step) -> str:
    """A model call; over the model channel, its request and answer (see MODEL_CHANNEL.md)."""
    request = step.args or {}
    if not request:
        return "model call"
    answer = step.result if isinstance(step.result, dict) else {}
    status = answer.get("status") or step.result_class
    line = f"model call ({md_text(request.get('endpoint'))}, attempt "
    line += f"{md_text(request.get('attempt'))}) → {md_text(status)}"
    if answer.get("tool_calls"):
        line += ": calls " + ", ".join(md_text(c) for c in answer["tool_calls"])
    return line + _faults(record, step)


def _faults(record: TrialRecord, step: Step) -> str:
    faults = [record.trajectory.faults[i] for i in step.faults]
    if not faults:
        return ""
    return " — fault: " + ", ".join(
        md_text(f"{f.perturbation}/{f.kind}")
        + ("" if f.delivered else " (not delivered)")
        + (" (absorbed by a retry)" if f.detail.get("absorbed") else "")
        for f in faults
    )


def to_markdown(
    records: Sequence[TrialRecord],
    journal: Journal | Trials,
    scenarios: Sequence[Scenario] = (),
    *,
    seed: int = 0,
    status: str = "passed",
) -> str:
    m = journal.manifest
    out = [
        f"# Spot check: {len(records)} {status if status != 'any' else ''} trial(s)".replace(
            "  ", " "
        ),
        "",
        f"Journal {md_code(journal.path)} (run {md_text(m.run_id)}), agent {md_code(m.agent)}, "
        f"model {md_text(m.model.model)} T={m.model.temperature:g}, run seed {m.seed}. Drawn "
        f"with {md_code(f'chaoseval sample --seed {seed} --status {status}')}.",
        "",
        # What the model requests really sent and used, beside the configured T above.
        *[
            f"Sampling {md_text(line)}.\n"
            for line in sampling_lines(m.model, as_trials(journal).sampling)
        ],
        "For each trial, read the instruction and the trajectory, then tick whether the "
        "judge's verdict is right.",
        "",
    ]
    for r in records:
        out += _trial_markdown(r, scenarios)
    return "\n".join(out)


def _trial_markdown(r: TrialRecord, scenarios: Sequence[Scenario]) -> list[str]:
    """One drawn trial's section; every text the agent, its tools or the journal wrote is
    escaped (raw HTML, links, images and code spans would render, not show)."""
    out = [f"## {md_text(r.trial_id)}", ""]
    cause = f" ({md_text(r.root_cause)})" if r.root_cause else ""
    out.append(f"- **verdict:** {md_text(r.status)}{cause}")
    out.append(f"- **cell:** {md_text(r.cell)}; seed {r.seed}; {r.steps} tool call(s)")
    out += ["- [ ] verdict confirmed by reviewer", ""]
    instruction = _instruction(r, scenarios)
    out += [
        "### Instruction",
        "",
        md_quote(instruction)
        if instruction
        else "_(scenario not available to rebuild the instruction)_",
        "",
    ]
    out += ["### Answer", "", md_quote(r.answer) if r.answer else "_(no answer)_", ""]
    if r.error:
        out += [f"Error: {md_code(r.error)}", ""]
    out += ["### Trajectory", ""]
    # Simulated model calls are bookkeeping; model-channel requests (args) are the story.
    shown = [s for s in r.trajectory.steps if s.kind != "model" or s.args]
    out += [f"{i}. {_step_line(r, s)}" for i, s in enumerate(shown, start=1)] or ["_(empty)_"]
    return out + _outcome_markdown(r)


def _outcome_markdown(r: TrialRecord) -> list[str]:
    """A drawn trial's faults, checks and vetoes, escaped."""
    out = ["", "### Faults", ""]
    for f in r.trajectory.faults:
        detail = ", ".join(f"{k}={v}" for k, v in f.detail.items())
        out.append(
            f"- {md_text(f.perturbation)}: {md_text(f.kind)} ({md_text(detail)}) at call "
            f"{f.call_index}, {'delivered' if f.delivered else 'not delivered'}"
        )
    if not r.trajectory.faults:
        out.append("_(none)_")
    out += ["", "### Checks", ""]
    if r.checks:
        out += ["| check | kind | passed | detail |", "|---|---|---|---|"]
        for c in r.checks:
            # The kind column stays empty: a check result records no kind.
            passed = "yes" if c.passed else "no"
            out.append(f"| {md_text(c.name)} |  | {passed} | {md_text(c.detail[:200])} |")
    else:
        out.append("_(none run)_")
    if r.vetoes:
        vetoes = "; ".join(f"{v.kind}: {v.detail}" for v in r.vetoes)
        out += ["", f"Vetoes: {md_text(vetoes)}"]
    out.append("")
    return out


def write_markdown(path: Path, text: str) -> None:
    path.write_text(redact(text))
