"""One YAML document compiled to a YamlScenario, and the file loader for .yaml/.yml."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from faker import Faker
from pydantic import Field, ValidationError

from chaoseval.errors import ScenarioError, ScenarioLoadErrors, ToolError
from chaoseval.loading.yamlform.checks import compile_check
from chaoseval.loading.yamlform.expressions import Env
from chaoseval.loading.yamlform.generate import (
    TableGen,
    Target,
    compile_generate,
    compile_target,
    world_maker,
)
from chaoseval.loading.yamlform.nodes import (
    Node,
    YMap,
    compose_documents,
    did_you_mean,
    read_text,
)
from chaoseval.loading.yamlform.payloads import compile_payloads
from chaoseval.loading.yamlform.schema import world_schema
from chaoseval.loading.yamlform.sections import (
    compile_contracts,
    compile_drift,
    compile_facts,
    compile_perturbations,
    compile_policy,
    compile_ui,
    validated,
)
from chaoseval.loading.yamlform.solution import compile_solution
from chaoseval.loading.yamlform.templates import bounded_specs, fill_templates, jsonable
from chaoseval.loading.yamlform.tools import column_types, compile_tool
from chaoseval.loading.yamlform.user import compile_user
from chaoseval.loading.yamlform.vetoes import compile_vetoes
from chaoseval.model.records import Budgets
from chaoseval.model.scenario import (
    Givens,
    MemoryItem,
    Policy,
    Scenario,
    Tables,
    ToolSpec,
    WorldFactory,
)


class YamlScenario(Scenario):
    """A Scenario that also carries the perturbation cells its author wants it tested under."""

    perturbations: list[str] = Field(default_factory=list)
    # The line of its id, so a second scenario with the same id is named by file and line.
    id_line: int = Field(default=0, exclude=True)

    def remembered(self, givens: Givens) -> list[MemoryItem]:
        """Memory values are templates over the givens, as the rest of the file is
        (``"{total}"``; a string that is one placeholder keeps the given's type)."""
        lookup = Env(givens=givens).lookup
        return [
            m.model_copy(update={"value": fill_templates(m.value, lookup)}, deep=True)
            for m in self.memory
        ]


class _Collector:
    """Collects errors section by section so one file reports more than its first mistake."""

    def __init__(self) -> None:
        self.errors: list[ScenarioError] = []

    def run(self, fn: Callable[[], Any], default: Any = None) -> Any:
        try:
            return fn()
        except ScenarioError as exc:
            self.errors.append(exc)
            return default


TOP_KEYS = {
    "id", "description", "domain", "tags", "instruction", "tables", "generate", "target",
    "givens", "tools", "checks", "policy", "facts", "budgets", "solution", "reference_steps",
    "start_time", "freeze_time", "memory", "ui", "viewport", "difficulty", "perturbations",
    "contracts", "drift", "payloads", "vetoes", "user",
}  # fmt: skip


@dataclass
class _World:
    """The world part of a document: literal rows, generators, the target row, and a sample
    world built from seed 0 (its columns type the tools' arguments and results)."""

    literal: Tables
    gens: list[TableGen]
    target: Target | None
    givens: Givens
    generate: WorldFactory
    sample_tables: Tables
    sample_givens: Givens


def compile_document(doc: YMap, source: str) -> YamlScenario:
    root = Node(source, doc, (), doc.line)
    root.mapping(allowed=TOP_KEYS)
    for key in ("id", "description", "instruction", "tools", "checks", "solution"):
        if key not in doc:
            raise root.error(f"missing required key {key!r}")
    # Literal rows and the description are never formatted; any other string may be (a
    # generator's are checked where they compile: a faker provider's ':' takes its args).
    bounded_specs(root, skip=("tables", "description", "generate"))
    errs = _Collector()
    world = _compile_world(root, errs)
    types = column_types(world.sample_tables)
    table_names = set(world.sample_tables)
    schema = world_schema(world.sample_tables, root.child("tools"))

    tools: dict[str, ToolSpec] = {}
    for tname, tnode in root.child("tools").items():
        spec = errs.run(partial(compile_tool, tname, tnode, types, table_names))
        if spec is not None:
            tools[tname] = spec
    # A tool that failed to compile still exists for the references below: no cascade of
    # "no tool named ..." errors after its own.
    named = set(root.child("tools").value)
    user = errs.run(lambda: compile_user(root.get("user"), named, world.sample_givens))
    facts = _fact_names(root)
    checks = []
    for cnode in root.child("checks").seq():
        c = errs.run(partial(compile_check, cnode, named, schema, _names(facts)))
        if c is not None:
            checks.append(c)

    policy = errs.run(lambda: compile_policy(root.get("policy"), named, schema), Policy())
    found = errs.run(lambda: compile_facts(root.get("facts"), schema), [])
    vetoes = errs.run(lambda: compile_vetoes(root.get("vetoes"), named, schema, _names(facts)), [])
    contracts = errs.run(lambda: compile_contracts(root.get("contracts"), named, schema), [])
    drift = errs.run(
        lambda: compile_drift(
            root.get("drift"), root.child("tools"), world.sample_tables, world.sample_givens
        ),
        [],
    )
    solution = errs.run(lambda: compile_solution(root.child("solution"), tools, named, facts))
    perturbations = errs.run(lambda: compile_perturbations(root.get("perturbations")), [])
    payloads = errs.run(
        lambda: compile_payloads(root.get("payloads"), list(tools.values()), world.sample_givens),
        [],
    )
    instruction = _instruction(root, world.sample_givens, errs)
    if errs.errors:
        _raise_collected(errs.errors)

    fields: dict[str, Any] = {
        "id": root.child("id").value,
        "description": root.child("description").value,
        "domain": doc.get("domain", "general"),
        "tags": root.child("tags").strs() if root.has("tags") else [],
        "instruction": instruction,
        "tables": world.literal,
        "generate": world.generate if (world.gens or world.target) else None,
        "givens": world.givens,
        "tools": list(tools.values()),
        "checks": checks,
        "policy": policy,
        "facts": found,
        "vetoes": vetoes,
        "user": user,
        "contracts": contracts,
        "drift": drift,
        "solution": solution[0],
        "reference_steps": doc.get("reference_steps", solution[1]),
        "freeze_time": doc.get("freeze_time", False),
        "ui": compile_ui(root.get("ui"), source),
        "viewport": doc.get("viewport", "desktop"),
        "difficulty": doc.get("difficulty", 0.05),
        "perturbations": perturbations,
        "payloads": payloads,
        "source": source,
        "id_line": doc.key_lines.get("id", doc.line),
    }
    return _scenario(root, doc, fields, world.sample_givens)


def _fact_names(root: Node) -> dict[str, str] | None:
    """The facts dialogue checks and conversing steps may name, with their kinds (None: no
    user to talk to); a broken user section still has its facts' names, so no cascade of
    "no fact" errors."""
    if not root.has("user"):
        return None
    user = root.child("user").value
    facts = user.get("facts") if isinstance(user, dict) else None
    if not isinstance(facts, list):
        return {}
    return {
        str(f["name"]): str(f.get("kind", "text"))
        for f in facts
        if isinstance(f, dict) and "name" in f
    }


def _names(facts: dict[str, str] | None) -> set[str] | None:
    return None if facts is None else set(facts)


def _compile_world(root: Node, errs: _Collector) -> _World:
    """Tables, generators and target; stops at the first broken part, since a broken world
    makes every later table reference look wrong."""
    literal: Tables = {}
    if root.has("tables"):
        for tname, tnode in root.child("tables").items():
            rows = []
            for r in tnode.seq():
                r.mapping()
                rows.append(jsonable(r.plain()))
            literal[tname] = rows
    gens = (
        errs.run(lambda: compile_generate(root.child("generate")), [])
        if root.has("generate")
        else []
    )
    target = compile_target(root.child("target")) if root.has("target") else None
    givens_lit = root.child("givens").mapping().plain() if root.has("givens") else {}
    generate = world_maker(literal, gens, target, root.child("target"), givens_lit)

    if errs.errors:  # a broken generator makes every later table reference look wrong
        _raise_collected(errs.errors)
    if target is not None and target[0] not in {*literal, *(g.name for g in gens)}:
        known = {*literal, *(g.name for g in gens)}
        errs.errors.append(
            root.child("target")
            .child("table")
            .error(f"no table named {target[0]!r}{did_you_mean(target[0], known)}")
        )
    sample_tables, sample_givens = literal, dict(givens_lit)
    if not errs.errors:
        sample_fake = _sample_faker()
        try:
            sample_tables, sample_givens = generate(sample_fake)
        except ScenarioError as exc:
            errs.errors.append(exc)
    if errs.errors:  # a broken world makes every later table reference look wrong: stop here
        _raise_collected(errs.errors)
    return _World(literal, gens, target, givens_lit, generate, sample_tables, sample_givens)


@cache
def _faker() -> Faker:
    return Faker()


def _sample_faker() -> Faker:
    """The Faker a sample world is made with, as a new one seeded 0 would be: one instance
    reseeded (a new Faker costs ~3 ms; a YAML generator uses no other state of it than its
    random stream and the unique values, cleared here)."""
    fake = _faker()
    fake.seed_instance(0)
    fake.unique.clear()
    return fake


def _instruction(root: Node, sample_givens: Givens, errs: _Collector) -> str:
    """The instruction template, checked against the givens of the sample world."""
    instruction = root.child("instruction").str()
    try:
        instruction.format(**sample_givens)
    except (KeyError, IndexError, ValueError) as exc:
        errs.errors.append(
            root.child("instruction").error(
                f"the instruction template names {exc} which is not a given "
                f"(givens: {', '.join(sorted(sample_givens)) or 'none'})"
                f"{did_you_mean(str(exc).strip(chr(39)), sample_givens)}"
            )
        )
    return instruction


def _scenario(root: Node, doc: YMap, fields: dict[str, Any], sample_givens: Givens) -> YamlScenario:
    if root.has("start_time"):
        fields["start_time"] = doc["start_time"]
    if root.has("budgets"):
        fields["budgets"] = validated(root.child("budgets"), Budgets)
    if root.has("memory"):
        fields["memory"] = [_memory_item(m, sample_givens) for m in root.child("memory").seq()]
    try:
        return YamlScenario(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        node = root.child(key) if root.has(key) else root
        raise node.error(f"{first['msg']} (found {first.get('input')!r:.60})") from None


def _memory_item(node: Node, givens: Givens) -> MemoryItem:
    """One remembered fact, its templates filled from the sample world's givens to check
    them, and its ``stale_fields`` fields of its (mapping) value."""
    item: MemoryItem = validated(node, MemoryItem)
    try:
        value = fill_templates(item.value, Env(givens=givens).lookup)
    except ToolError as exc:
        raise node.child("value").error(
            f"{exc} (givens: {', '.join(sorted(givens)) or 'none'})"
        ) from None
    for i, name in enumerate(item.stale_fields):
        if not isinstance(value, dict) or name not in value:
            have = sorted(value) if isinstance(value, dict) else []
            raise (
                node.child("stale_fields")
                .child(i)
                .error(
                    f"the value has no field {name!r}{did_you_mean(name, have)} (its fields: "
                    f"{', '.join(have) or 'none: the value is not a mapping'})"
                )
            )
    return item


def _raise_collected(errors: list[ScenarioError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    raise ScenarioLoadErrors(errors)


def load_yaml_file(path: Path) -> list[Scenario]:
    """Every scenario document in one YAML file (ScenarioError on the first broken one)."""
    docs = compose_documents(read_text(path), str(path))
    if not docs:
        raise ScenarioError("the file holds no scenario", source=str(path))
    return [compile_document(d, str(path)) for d in docs]
