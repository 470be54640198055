"""The manifest line as the reports read it: lean where it grows with the suite.

A manifest lists every scenario (its tags, tools, budgets) and every reference run (its calls
and their arguments): at 100k tasks one 50 MB line, some 400 MB as pydantic objects, of which
a report uses only the reference runs' steps, errors and call keys. Read here, the line's other
fields are validated as the :class:`RunManifest` they are, and the scenarios and reference runs
are validated one entry at a time (the same models, so a bad entry is refused) and kept only as
:class:`ReferenceIndex`, the scenarios' ids and their veto rules (what ``vetoes(NAME)`` gate
rules may name, fired or not); the manifest the columns hold has no scenario list then
(``Trials.full_manifest()`` reads the whole line again, as ``run --resume`` needs it;
``Trials.manifest_of(ids)`` reads it again keeping the scenarios and reference runs of a few
tasks only, :func:`manifest_of`, which is all ``sample`` needs: issue 47 measured 670 MB for the
whole line's objects at 100k tasks). A line this refuses is read by
:func:`chaoseval.store.journal.parse_line` instead, which gives its error or its record as
before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from pydantic import ValidationError

from chaoseval.model.records import SCHEMA_VERSION, ReferenceRun, RunManifest, ScenarioInfo
from chaoseval.store.lite import RefCalls, call_key

__all__ = ["ReferenceIndex", "index_references", "lean_manifest", "manifest_of"]


@dataclass
class ReferenceIndex:
    """What reports use of a run's reference runs, by scenario id (manifest order)."""

    steps: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # references that could not run
    calls: dict[str, RefCalls] = field(default_factory=dict)  # those that ran and passed
    # Each call key and tool name once: scenarios of one suite call the same tools, often
    # with the same arguments (a generated suite's 100k tasks: a few hundred distinct keys).
    _shared: dict[str | None, str | None] = field(default_factory=dict, repr=False, compare=False)

    def add(self, sid: str, ref: ReferenceRun) -> None:
        self.steps[sid] = ref.steps
        if ref.error is not None:
            self.errors[sid] = ref.error
        elif ref.passed:
            shared = self._shared
            keys = {shared.setdefault(k, k) for k in (call_key(c.tool, c.args) for c in ref.calls)}
            tools = {shared.setdefault(c.tool, c.tool) for c in ref.calls}
            self.calls[sid] = RefCalls(keys, tools)  # type: ignore[arg-type]  # keys are str


def index_references(references: Mapping[str, ReferenceRun] | None) -> ReferenceIndex | None:
    """A manifest's reference runs indexed; None when it recorded none."""
    if references is None:
        return None
    index = ReferenceIndex()
    for sid, ref in references.items():
        index.add(sid, ref)
    return index


_PARTS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_MAP = msgspec.json.Decoder(dict[str, msgspec.Raw] | None)


class _Id(msgspec.Struct):
    """A scenario entry's id alone (msgspec skips the entry's other fields)."""

    id: str


_ID = msgspec.json.Decoder(_Id)


def _split(line: bytes) -> tuple[dict[str, Any], msgspec.Raw, msgspec.Raw | None] | None:
    """A manifest line's fields decoded, but its scenario list and reference runs, which come
    as raw JSON; None when the line is no manifest read this way (not JSON, another type, no
    scenario list, a newer schema: the full reader names its fault or says to upgrade)."""
    try:
        parts = _PARTS.decode(line)
        scenarios, references = parts.pop("scenarios", None), parts.pop("references", None)
        if bytes(parts.get("type", b"")) != b'"manifest"' or scenarios is None:
            return None
        head: dict[str, Any] = {k: msgspec.json.decode(v) for k, v in parts.items()}
    except msgspec.DecodeError:
        return None
    version = head.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return None
    return head, scenarios, references


def lean_manifest(
    line: bytes,
) -> tuple[RunManifest, ReferenceIndex | None, frozenset[str], dict[str, str]] | None:
    """The manifest without its scenario list, its reference runs indexed, its scenarios'
    ids (what a trial line's task must be: store.conform) and veto rules (name -> kind, what
    gate rules may name); None when the line is not a manifest read this way (the full reader
    then reads it or names its fault)."""
    split = _split(line)
    if split is None:
        return None
    head, scenarios, references = split
    try:
        # Each checked, one at a time; only its id and veto rules kept.
        seen: set[str] = set()
        vetoes: dict[str, str] = {}
        for raw in _LIST.decode(scenarios):
            info = ScenarioInfo.model_validate_json(bytes(raw))
            seen.add(info.id)
            vetoes.update(info.vetoes)
        ids = frozenset(seen)
        index = None
        if references is not None and (refs := _MAP.decode(references)) is not None:
            index = ReferenceIndex()
            for sid, raw in refs.items():
                index.add(sid, ReferenceRun.model_validate_json(bytes(raw)))
        manifest = RunManifest.model_validate({**head, "scenarios": []})
    except (msgspec.DecodeError, ValidationError):
        return None
    return manifest, index, ids, vetoes


def manifest_of(line: bytes, ids: Collection[str]) -> RunManifest | None:
    """The manifest line as the :class:`RunManifest` it is, its scenario list and reference
    runs cut to those of ``ids`` (manifest order kept): every other field whole, the other
    tasks' entries never made into objects. None when the line is not a manifest read this
    way (the full reader then reads it or names its fault)."""
    split = _split(line)
    if split is None:
        return None
    head, scenarios, references = split
    wanted = frozenset(ids)
    try:
        kept = [
            msgspec.json.decode(raw)
            for raw in _LIST.decode(scenarios)
            if _ID.decode(raw).id in wanted
        ]
        if references is not None:  # absent stays absent, as the full reader leaves it
            given = _MAP.decode(references)
            head["references"] = (
                None
                if given is None
                else {sid: msgspec.json.decode(raw) for sid, raw in given.items() if sid in wanted}
            )
        return RunManifest.model_validate({**head, "scenarios": kept})
    except (msgspec.DecodeError, ValidationError):
        return None
