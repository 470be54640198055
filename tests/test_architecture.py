"""The house rules of issue 8, read from the source with ast (nothing is imported):

- no import circles among chaoseval's modules, counting every import statement wherever it
  sits (``if TYPE_CHECKING:`` blocks and function-local imports too: a deferred import hides a
  circle, it does not remove it);
- no module over 500 lines and no function over 80 lines in chaoseval/ (the bundled scenario
  data files under scenarios/ are exempt; the bundled perturbations are code and are checked).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# Where each installed package lives in the repository (mirrors [tool.setuptools.package-dir]).
PACKAGE_DIRS: dict[str, Path] = {
    "chaoseval": ROOT / "chaoseval",
    "chaoseval.bundled.perturbations": ROOT / "perturbations",
    "chaoseval.bundled.scenarios": ROOT / "scenarios",
}


def _modules() -> dict[str, Path]:
    """Every chaoseval module name with its file; a package is named by its __init__.py."""
    found: dict[str, Path] = {}
    for package, base in PACKAGE_DIRS.items():
        for path in sorted(base.rglob("*.py")):
            if ".venv" in path.parts:
                continue
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The chaoseval modules one module's import statements name (anywhere in the file)."""
    here = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # The edge goes to the most specific module named: `from pkg import sub` is an
            # import of pkg.sub when that module exists, of pkg itself otherwise (parent
            # packages run on every import and are not counted, as for `import pkg.sub`).
            subs = [f"{base}.{alias.name}" for alias in node.names]
            targets = [sub if sub in known else base for sub in subs]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = _imported(tree, name, path.name == "__init__.py", known)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def _code_files() -> Iterator[Path]:
    for name, path in _modules().items():
        if not name.startswith("chaoseval.bundled.scenarios"):
            yield path


def long_modules() -> list[str]:
    out = []
    for path in _code_files():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{path.relative_to(ROOT)}: {lines} lines")
    return sorted(out)


def long_functions() -> list[str]:
    out = []
    for path in _code_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                # Decorators count: they are part of what a reader has to take in.
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - start + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    return sorted(out)


def test_the_checker_sees_imports_of_every_kind(tmp_path: Path) -> None:
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import chaoseval.a\n"
        "from chaoseval import b\n"
        "from . import c\n"
        "from .d import thing\n"
        "if TYPE_CHECKING:\n"
        "    from chaoseval.e import Model\n"
        "def f():\n"
        "    import chaoseval.f\n"
    )
    known = {f"chaoseval.pkg.{x}" for x in "cd"} | {f"chaoseval.{x}" for x in "abef"}
    found = _imported(ast.parse(source), "chaoseval.pkg.mod", False, known | {"chaoseval.pkg"})
    assert found == known
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    assert find_cycles(import_graph()) == []


def test_no_module_over_500_lines() -> None:
    assert long_modules() == []


def test_no_function_over_80_lines() -> None:
    assert long_functions() == []


def test_test_modules_have_unique_names() -> None:
    """pytest imports test modules by basename (the tests tree has no packages under it for
    them), so two test_x.py in different folders stop the whole run at collection: a clash
    between tests/bundled and tests/frameworks once failed CI before any test ran."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        seen.setdefault(path.name, path)
    assert not clashes, clashes
