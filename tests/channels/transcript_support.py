"""A real run whose exec: agent talks to chaoseval's model server through the real openai and
anthropic SDKs (chat completions, Responses, Messages), answered by the offline chaoseval-sim,
with a secret, markup and an oversized message in what it sends: what the trial's model.jsonl
artifact and the view's trial page are tested on."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal

SCENARIO = "vending-refund-not-dispensed"
# A credential redact.py knows by its pattern (``api_key=`` and a long value), in no variable.
SECRET = "sk-live-PlantedKey0042abcdefXYZ"
MARKUP = "<b onclick='x()'>&amp; bold</b>"
BIG = 100_000  # characters of one message: over transcript.TEXT_LIMIT
# Every request answered by a 429 the agent's SDK does not retry: a fault instead of an answer.
FAULT_CELL = "model_error:modes=[429],probability=1"

AGENT = f"""
import json, os, sys
from anthropic import Anthropic
from openai import OpenAI

model = os.environ["CHAOSEVAL_MODEL"]
chat = OpenAI(max_retries=0)
said = [{{"role": "system", "content": "You are a support agent."}},
        {{"role": "user", "content": os.environ["CHAOSEVAL_INSTRUCTION"]
                                     + " {MARKUP} api_key={SECRET}"}}]
for extra in ("", "BIG" + "x" * {BIG}):
    if extra:
        said.append({{"role": "user", "content": extra}})
    try:
        answer = chat.chat.completions.create(model=model, messages=said)
        said.append({{"role": "assistant", "content": answer.choices[0].message.content or ""}})
    except Exception as exc:
        print("chat:", type(exc).__name__, file=sys.stderr)
try:
    chat.responses.create(model=model, instructions="Responses instructions",
                          input=[{{"role": "user", "content": "Responses says hello"}}])
except Exception as exc:
    print("responses:", type(exc).__name__, file=sys.stderr)
try:
    Anthropic(max_retries=0).messages.create(
        model=model, max_tokens=64, system="Anthropic system",
        messages=[{{"role": "user", "content": "Messages says hello"}}])
except Exception as exc:
    print("messages:", type(exc).__name__, file=sys.stderr)
print(json.dumps({{"answer": "done"}}))
"""


def write_run(folder: Path) -> list[TrialRecord]:
    """A clean trial and its twin under FAULT_CELL, journal ``folder/run.jsonl``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "agent.py"
    script.write_text(AGENT)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    journal = folder / "run.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=ProcessAgent(command),
            agent_name="exec:transcript",
            cells=parse_cells([FAULT_CELL]),
            trials=1,
            seed=1,
            journal=journal,
            references=False,
            wall_timeout=60,
        )
    )
    return read_journal(journal).records


def model_file(folder: Path, record: TrialRecord) -> Path:
    [art] = [a for a in record.artifacts if a.name == "model.jsonl"]
    return folder / art.path
