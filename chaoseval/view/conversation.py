"""A turn of a conversation on a trial's page: the agent's message, the user's reply and the
faults on the turn, as a transcript (a ``user`` step: the message in ``args["text"]``, the
reply in ``result``, what the simulated user read in ``UserTurnData``). Every text passes
through ``view.html.text``: redacted, control characters visible, escaped."""

from __future__ import annotations

from chaoseval.model.trajectory import Step, UserTurnData
from chaoseval.view.html import text

__all__ = ["turn_html"]


def _reading(d: UserTurnData) -> str:
    """What the user made of the message, in words."""
    said = []
    if d.asked:
        said.append("asked for " + ", ".join(d.asked))
    if d.stated:
        said.append("stated " + ", ".join(d.stated))
    if d.misstated:
        said.append("stated wrong " + ", ".join(d.misstated))
    if d.confirm:
        said.append("the user agreed" if d.agreed else "asked to confirm; the user did not agree")
    if d.ended:
        said.append("the user left")
    return "; ".join(said)


def turn_html(s: Step, head: str, flag: str, faults: str) -> str:
    """One turn: ``head`` the step's heading (plain text), ``flag`` the first-divergence mark
    (HTML) or '', ``faults`` the turn's faults (HTML)."""
    message = (s.args or {}).get("text")
    agent = f"<pre>{text(message)}</pre>" if message is not None else "<p>(not recorded)</p>"
    reply = (
        f"<pre>{text(s.result)}</pre>"
        if s.result is not None
        else "<p class='meta'>(the user had left)</p>"
    )
    seen = _reading(s.data) if isinstance(s.data, UserTurnData) else ""
    meta = f"<p class='meta'>{text(seen)}</p>" if seen else ""
    css = "step turn div" if flag else "step turn"
    return (
        f"<div class='{css}' id='step-{s.index}'><h4>{flag}{text(head)}</h4>"
        f"<div class='said agent'><b>agent</b>{agent}</div>"
        f"<div class='said user'><b>user</b>{reply}</div>{meta}{faults}</div>"
    )
