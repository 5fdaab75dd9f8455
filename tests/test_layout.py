"""The package's shape: modules small enough to read in one sitting, no import cycles among
them (imports inside functions included), and notebooks that stay thin."""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "residual_lib"
MAX_MODULE_LINES = 400
MAX_NOTEBOOK_CODE_LINES = 80


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of ``package`` and the package modules it imports anywhere in its source
    (at the top or inside a function): ``from . import x`` counts as importing ``x`` when
    ``x`` is a module, else as importing the package it names."""
    modules = {_module_name(p, package.parent): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                           for alias in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan), if any."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_through_an_import_inside_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_no_import_cycle_among_the_packages_modules():
    graph = import_graph()
    assert len(graph) > 20 and "residual_lib.scorecard.rules" in graph
    assert cycles(graph) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_reads_in_one_sitting(path):
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


def code_lines(notebook: Path) -> int:
    """Non-blank lines in a notebook's code cells, comments included."""
    cells = jupytext.read(notebook).cells
    return sum(1 for c in cells if c.cell_type == "code" for line in c.source.splitlines() if line.strip())


@pytest.mark.parametrize("path", sorted([*ROOT.glob("notebooks/[0-9]*.py"), *ROOT.glob("book/*.py")]),
                         ids=lambda p: p.name)
def test_every_notebook_stays_thin(path):
    assert code_lines(path) <= MAX_NOTEBOOK_CODE_LINES


def test_an_installed_package_has_every_subpackage():
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {_module_name(p, ROOT) for p in PACKAGE.rglob("__init__.py")}
    assert listed == present
