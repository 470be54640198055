"""A code-writing agent's prompt, read and answered as a model does (smolagents' ``CodeAgent``).

Such an agent offers no function tools on the wire. Its system prompt lists them as Python
functions, one ``def NAME(param: type, ...) -> type:`` with a docstring each (smolagents'
``Tool.to_code_prompt``), tells the model how to open and close a code block ("opened with
'<code>', and closed with '</code>'"), and runs the code the model writes; the model ends by
calling the agent's own ``final_answer`` function. So ``chaoseval-sim`` reads the tools from
that listing and writes each call of its plan as a code block that prints the tool's result,
with the call's id in a comment: the agent echoes the code back in the next request (as the
assistant's turn and in its "Calling tools:" record), and its ``Observation:`` (``Execution
logs:``, the printed text) or ``Error:`` turn after it is that call's outcome
(chaoseval.channels.model.observations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from chaoseval.channels.model.wire import content_text

# smolagents' own words: "The code sequence must be opened with '<code>', and closed with
# '</code>'". A prompt that does not say falls back to markdown, which smolagents also takes.
TAGS = re.compile(r"opened with '([^'\n]+)',? and closed with '([^'\n]+)'")
MARKDOWN = ("```python", "```")
DEF = re.compile(r"^[ \t]*def ([A-Za-z_]\w*)\(([^)\n]*)\)[^:\n]*:[ \t]*\n", re.MULTILINE)
PARAM = re.compile(r"(?:^|,)\s*\*{0,2}([A-Za-z_]\w*)\s*(?::|=|,|$)")
DOCSTRING = re.compile(r'\s*(?:"""|\'\'\')(.*?)(?:"""|\'\'\')', re.DOTALL)
# The first lines of smolagents' CodeAgent observation, around what the code printed.
LOGS = "Execution logs:"
LAST_OUTPUT = "Last output from code snippet:"


@dataclass
class CodePrompt:
    """The functions a code-writing prompt lists (parameter names; None: none readable), their
    docstrings, and the prompt's code block tags."""

    tools: dict[str, set[str] | None] = field(default_factory=dict)
    described: list[str] = field(default_factory=list)
    opening: str = MARKDOWN[0]
    closing: str = MARKDOWN[1]

    def call(self, call_id: str, name: str, args: dict[str, Any], stop: Any = None) -> str:
        """A turn that calls ``name`` in code: its result printed, for the next observation.
        Values are written as Python literals (``repr`` of JSON's values is one)."""
        written = ", ".join(f"{k}={v!r}" for k, v in args.items())
        line = f"{name}({written})" if name in FINAL else f"print({name}({written}))"
        text = (
            f"Thought: I call {name} ({call_id}).\n"
            f"{self.opening}\n# {call_id}\n{line}\n{self.closing}"
        )
        return stopped(text, stop)


FINAL = ("final_answer",)  # the code agent's own answer function: called, not printed


def code_prompt(messages: list[Any]) -> CodePrompt | None:
    """The code-writing prompt the request's system turns hold, or None when they list no
    Python function (not a code-writing agent)."""
    text = "\n".join(
        content_text(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    )
    found = list(DEF.finditer(text))
    if not found:
        return None
    prompt = CodePrompt()
    tags = TAGS.search(text)
    if tags:
        prompt.opening, prompt.closing = tags.group(1), tags.group(2)
    for i, match in enumerate(found):
        name, params = match.group(1), match.group(2)
        prompt.tools[name] = {p for p in PARAM.findall(params) if p != "self"}
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        doc = DOCSTRING.match(text, match.end(), end)
        if doc and doc.group(1).strip():
            prompt.described.append(doc.group(1).strip())
    return prompt


def stopped(text: str, stop: Any) -> str:
    """``text`` as a model that honours the request's ``stop`` sequences writes it: cut before
    the first one (smolagents stops at its closing tag and writes the tag back itself)."""
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    cuts = [text.find(s) for s in stops if isinstance(s, str) and s and s in text]
    return text[: min(cuts)] if cuts else text


def execution_output(text: str) -> str:
    """What a code block printed, from a CodeAgent's observation (``Execution logs:\\n...``,
    then ``Last output from code snippet:\\n...``): the printed text, else the last value.
    Any other observation is returned as it is."""
    if not text.startswith(LOGS):
        return text
    logs, _, last = text[len(LOGS) :].partition(LAST_OUTPUT)
    logs, last = logs.strip(), last.strip()
    return logs if logs or last == "None" else last
