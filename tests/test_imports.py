"""The import graph of dpaudit: no cycles (function-level imports included) and no module importing
from a layer above its own.

The graph is built with ``ast`` from the source, so imports inside functions (lazy imports) count
like top-level ones: a lazy import that closes a cycle or points upward is a design error that only
hides until run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpaudit"

#: Layers from the bottom up. A module may import its own layer and any layer below it. The first
#: matching prefix decides; the package root ``dpaudit`` (the public facade) sits on top.
LAYERS = (
    ("dpaudit._core",),
    ("dpaudit.bounds",),
    ("dpaudit.mechanisms",),
    ("dpaudit.attacks",),
    ("dpaudit.accountants",),
    ("dpaudit.audit",),
    ("dpaudit.reports", "dpaudit.specs"),
    ("dpaudit.libraries",),
    ("dpaudit.cli", "dpaudit.scores_command"),
    ("dpaudit",),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` (a module or ``module.attribute``) refers to."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """``module -> modules it imports`` over every ``import`` statement, wherever it stands."""
    known = _modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if not target.startswith("dpaudit"):
                    continue
                resolved = _resolve(target, known)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def layer_of(module: str) -> int:
    for index, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{module} belongs to no layer")


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules, or None (depth-first search)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _without_package_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop the edges from a module to the packages that contain it.

    Importing ``dpaudit.audit.grid`` runs ``dpaudit/audit/__init__.py`` first, which imports its
    sub-modules: a package ``__init__`` that re-exports its children is a facade, not a cycle, as
    long as no child imports its own package's ``__init__`` for a name.
    """
    return {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}


def test_graph_sees_function_level_imports():
    """The test of the test: a lazy import inside a function is an edge of the graph."""
    graph = import_graph()
    assert "dpaudit.libraries" in graph["dpaudit.cli"]  # imported inside cli._cmd_library


def test_no_import_cycle():
    cycle = _find_cycle(_without_package_edges(import_graph()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_a_planted_cycle():
    """The test of the test: an edge from the bottom of the theory to its top is reported."""
    graph = _without_package_edges(import_graph())
    graph["dpaudit.bounds.tradeoff"] = graph["dpaudit.bounds.tradeoff"] | {
        "dpaudit.bounds.gaussian_dp"
    }
    assert _find_cycle(graph) is not None


def test_no_module_imports_from_a_layer_above_it():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert not upward, "imports from a layer above: " + "; ".join(upward)


@pytest.mark.parametrize("module", sorted(_modules()))
def test_every_module_has_a_layer(module):
    assert 0 <= layer_of(module) < len(LAYERS)
