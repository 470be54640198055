"""The YAML scenario form under its original import path; the code lives in chaoseval.yamlform.

Kept so that ``from chaoseval.yaml_scenarios import custom_tool, verifier`` (the documented
spelling) and the loader's registration of ``.yaml``/``.yml`` keep working.
"""

from __future__ import annotations

from .yamlform.checks import CHECK_KINDS
from .yamlform.document import TOP_KEYS, YamlScenario, compile_document, load_yaml_file
from .yamlform.expressions import (
    FUNCS,
    OPS,
    ROOTS,
    Env,
    Expr,
    Path_,
    evaluate,
    parse_expr,
    parse_operand,
    resolve,
)
from .yamlform.factories import custom_tool, tool_registry, verifier, verifier_registry
from .yamlform.generate import FieldGen, TableGen, faker_providers
from .yamlform.nodes import Node, YList, YMap, compose_documents, did_you_mean
from .yamlform.solution import SolAnswer, SolStep
from .yamlform.templates import MISSING, interpolate
from .yamlform.tools import KIND_KEYS, TOOL_KEYS, TOOL_KINDS, TYPES, Rule

__all__ = [
    "CHECK_KINDS",
    "FUNCS",
    "KIND_KEYS",
    "MISSING",
    "OPS",
    "ROOTS",
    "TOOL_KEYS",
    "TOOL_KINDS",
    "TOP_KEYS",
    "TYPES",
    "Env",
    "Expr",
    "FieldGen",
    "Node",
    "Path_",
    "Rule",
    "SolAnswer",
    "SolStep",
    "TableGen",
    "YList",
    "YMap",
    "YamlScenario",
    "compile_document",
    "compose_documents",
    "custom_tool",
    "did_you_mean",
    "evaluate",
    "faker_providers",
    "interpolate",
    "load_yaml_file",
    "parse_expr",
    "parse_operand",
    "resolve",
    "tool_registry",
    "verifier",
    "verifier_registry",
]
