"""One trial's page: what the journal recorded of it, step by step, beside its clean twin (the
clean trial with the same scenario and trial seed) with the first step where the two part marked
(analysis.twins, the report's own pairing). Only the trial's line and its twin's are read
(store.columns: a seek to each)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chaoseval.analysis.twins import TwinPair, twin_pair
from chaoseval.model.records import CLEAN, TrialRecord
from chaoseval.model.trajectory import Fault, Step
from chaoseval.store.columns import Trials
from chaoseval.view.conversation import turn_html
from chaoseval.view.files import served, tail
from chaoseval.view.html import href, page, pretty, text
from chaoseval.view.instruction import instruction_html
from chaoseval.view.library import Library, NotServed
from chaoseval.view.messages import messages_html, note_html, read_lines

__all__ = ["find_row", "trial_page"]


def find_row(t: Trials, trial_id: str) -> int:
    """The row of ``trial_id`` (its last line: a re-run replaces a not-evaluable one)."""
    scenario, _, rest = trial_id.partition("/")
    cell, _, index = rest.rpartition("/")
    if index.isdigit():
        keep = (
            (t.col["scenario"] == t.code("scenario", scenario))
            & (t.col["cell"] == t.code("cell", cell))
            & (t.col["index"] == int(index))
        )
        rows = np.flatnonzero(keep)
        if len(rows):
            return int(rows[-1])
    odd = [row for row, name in t.odd_ids.items() if name == trial_id]
    if odd:
        return odd[-1]
    raise NotServed(f"{t.path.name} has no trial {trial_id!r}")


def _twin(t: Trials, record: TrialRecord) -> TrialRecord | None:
    if record.cell == CLEAN:
        return None
    try:
        return t.record(find_row(t, f"{record.scenario}/{CLEAN}/{record.index}"))
    except NotServed:
        return None


def _fault(f: Fault) -> str:
    absorbed = bool(f.detail.get("absorbed"))
    state = "absorbed by a retry" if absorbed else "delivered" if f.delivered else "not delivered"
    css = "fault" if f.delivered else "fault missed"
    detail = f"<pre>{pretty(f.detail)}</pre>" if f.detail else ""
    return (
        f"<div class='{css}'>fault <b>{text(f.perturbation)}/{text(f.kind)}</b> on the "
        f"{text(f.channel)} channel, call {f.call_index} ({text(state)}){detail}</div>"
    )


def _model(s: Step, line: dict[str, Any] | None) -> str:
    """A model request and its answer as the model channel recorded them (the request's size
    and sampling, the answer's status, tool calls and finish reason; the journal keeps only the
    request's sha256), and ``line``: the step's messages and answer from the trial's
    model.jsonl artifact, when it has one (view.messages)."""
    out = messages_html(line) if line is not None else ""
    if s.args:
        out += f"<p>request</p><pre>{pretty(s.args)}</pre>"
    if s.result is not None:
        out += f"<p>answer</p><pre>{pretty(s.result)}</pre>"
    data = s.data.model_dump()
    if data:
        said = ", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in data.items())  # fmt: skip
        out += f"<p class='meta'>{text(said)}</p>"
    return out


def _step(s: Step, faults: list[Fault], mark: bool, line: dict[str, Any] | None) -> str:
    head = f"{s.index + 1}. {s.kind}"
    if s.tool:
        head += f" {s.tool}"
    if s.result_class:
        head += f" → {s.result_class}"
    head += f" (t {s.t:.2f} s, {s.latency:.3f} s)"
    if s.kind == "user":  # a turn of a conversation: a transcript, not arguments and a result
        hit = "".join(_fault(faults[i]) for i in s.faults if 0 <= i < len(faults))
        return turn_html(
            s, head, "<span class='mark'>first divergence</span> " if mark else "", hit
        )
    body = ""
    if s.kind == "model":
        body = _model(s, line)
    else:
        if s.args:
            body += f"<p>arguments</p><pre>{pretty(s.args)}</pre>"
        if s.result is not None:
            body += f"<p>result</p><pre>{pretty(s.result)}</pre>"
        if s.data.model_dump():
            body += f"<pre>{pretty(s.data.model_dump())}</pre>"
    if s.error:
        body += f"<p>error</p><pre>{text(s.error)}</pre>"
    body += "".join(_fault(faults[i]) for i in s.faults if 0 <= i < len(faults))
    flag = "<span class='mark'>first divergence</span> " if mark else ""
    css = "step div" if mark else "step"
    return f"<div class='{css}' id='step-{s.index}'><h4>{flag}{text(head)}</h4>{body}</div>"


def _checks(r: TrialRecord) -> str:
    rows = "".join(
        f"<tr><td class='text'>{text(c.name)}</td><td>{'passed' if c.passed else 'FAILED'}</td>"
        f"<td class='text'>{text(c.detail)}</td></tr>"
        for c in r.checks
    )
    for contract in r.contracts:
        held = "; ".join(f"{c.name}: {'ok' if c.passed else c.detail}" for c in contract.checks)
        rows += (
            f"<tr><td class='text'>contract {text(contract.name)}</td>"
            f"<td>{'held' if contract.held else 'broken'}</td><td class='text'>{text(held)}</td>"
            "</tr>"
        )
    if not rows:
        return "<p class='meta'>no checks ran</p>"
    return (
        "<table class='data checks'><thead><tr><th>check</th><th>outcome</th>"
        f"<th>expected and actual</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _artifacts(library: Library, key: str, path: Any, r: TrialRecord) -> str:
    out = []
    for n, art in enumerate(r.artifacts):
        link = href("/artifact", {"j": key, "id": r.trial_id, "n": n})
        try:
            file = served(library.root, path, r, art)
        except NotServed as exc:
            out.append(f"<p class='warn'>{text(art.name)}: not served ({text(exc)})</p>")
            continue
        if file.image:
            out.append(
                f"<figure><img class='shot' src='{link}' alt='{text(art.name)}'>"
                f"<figcaption>{text(art.name)}</figcaption></figure>"
            )
        elif art.name.startswith("stderr"):
            out.append(
                f"<p><a href='{link}'>{text(art.name)}</a> ({art.size} bytes), its tail:</p>"
                f"<pre class='stderr'>{text(tail(file))}</pre>"
            )
        else:
            out.append(f"<p><a href='{link}'>{text(art.name)}</a> ({art.size} bytes)</p>")
    return "".join(out)


def _marked(pair: TwinPair | None, side: str) -> int | None:
    """The trajectory step where the two part, on one side."""
    if pair is None or pair.diverge_at is None:
        return None
    steps = pair.perturbed_steps if side == "perturbed" else pair.clean_steps
    return steps[pair.diverge_at].step if pair.diverge_at < len(steps) else None


def _column(library: Library, key: str, r: TrialRecord, title: str, mark: int | None) -> str:
    traj = r.trajectory
    cause = f" ({r.root_cause})" if r.root_cause else ""
    loose = "".join(_fault(f) for f in traj.faults if f.step is None)
    vetoes = "".join(f"<li class='veto'>{text(v.kind)}: {text(v.detail)}</li>" for v in r.vetoes)
    lines = read_lines(library.root, library.entry(key).path, r)
    steps = note_html(lines) + "".join(
        _step(s, traj.faults, s.index == mark, lines.get(s.index)) for s in traj.steps
    )
    link = href("/trial", {"j": key, "id": r.trial_id})
    return (
        f"<section class='side' id='{title.split()[0]}'><h2>{text(title)}: "
        f"<a href='{link}'>{text(r.trial_id)}</a></h2>"
        f"<p><span class='{r.status}'>{text(r.status + cause)}</span> · cell {text(r.cell)} · "
        f"seed {r.seed} · {text(r.agent)} · model {text(r.model.model)} "
        f"T={r.model.temperature:g} seed={text('—' if r.model.seed is None else r.model.seed)}</p>"
        + (f"<p class='warn'>error: {text(r.error)}</p>" if r.error else "")
        + (f"<h3>Faults tied to no step</h3>{loose}" if loose else "")
        + f"<h3>Steps</h3>{steps or '<p>no steps</p>'}"
        + f"<h3>Checks</h3>{_checks(r)}"
        + (f"<h3>Vetoes</h3><ul>{vetoes}</ul>" if vetoes else "")
        + f"<h3>Answer</h3><pre class='answer'>{text(r.answer or '')}</pre>"
        + _artifacts(library, key, library.entry(key).path, r)
        + "</section>"
    )


def trial_page(library: Library, key: str, trial_id: str) -> str:
    t, _ = library.trials(key)
    record = t.record(find_row(t, trial_id))
    twin = _twin(t, record)
    pair = twin_pair(record, twin) if twin is not None else None
    mine = _column(library, key, record, "this trial", _marked(pair, "perturbed"))
    if pair is not None and twin is not None:
        where = f"<p id='divergence'>First divergence: <b>{text(pair.label)}</b></p>"
        theirs = _column(library, key, twin, "clean twin", _marked(pair, "clean"))
        body = f"{where}<div class='pair'>{mine}{theirs}</div>"
    else:
        none = "a clean trial" if record.cell == CLEAN else "no clean twin in this journal"
        body = f"<p class='meta'>{text(none)}</p>{mine}"
    instruction = instruction_html(library.root, t.manifest_of({record.scenario}), record)
    crumbs = [(key, href("/run", {"j": key})),
              (record.cell, href("/run", {"j": key, "cell": record.cell}))]  # fmt: skip
    return page(f"Trial {record.trial_id}", instruction + body, crumbs=crumbs)
