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
    assert len(graph) > 20 and "residual_lib.pages.scorecard.rules" in graph
    assert cycles(graph) == []


#: The package's folders, bottom up: each imports only folders below it (and itself). The top
#: level (``__init__``, ``__main__``) may import any of them.
LAYERS = ("core", "run", "storage", "training", "study", "pages", "commands")
#: The most entries residual_lib's top level may hold (``__pycache__`` aside).
MAX_TOP_LEVEL = 10


def layer_violations(graph: dict[str, set[str]], root: str = "residual_lib", layers=LAYERS) -> list[str]:
    """Every import (``graph``: :func:`import_graph`) from a module in one of ``layers``'
    folders of ``root`` to a module in a folder above it, or to the top level, as one line each."""
    rank = {layer: i for i, layer in enumerate(layers)}

    def layer_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[0] == root else None

    found = []
    for module, targets in sorted(graph.items()):
        here = layer_of(module)
        if here is None or here not in rank:
            continue
        for target in sorted(targets):
            there = layer_of(target)
            if there is None or there not in rank or rank[there] > rank[here]:
                found.append(f"{module} imports {target}, {'the top level' if there not in rank else 'a layer above'}")
    return found


def test_the_layer_check_finds_an_import_running_up(tmp_path):
    pkg = tmp_path / "pkg"
    for folder in ("low", "high"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from .high import b\n")
    (pkg / "low" / "a.py").write_text("def f():\n    from ..high.b import g\n")
    (pkg / "high" / "b.py").write_text("from ..low.a import f\nfrom . import c\n")
    (pkg / "high" / "c.py").write_text("from .. import low\n")
    graph = import_graph(pkg)
    assert layer_violations(graph, "pkg", ("low", "high")) == ["pkg.low.a imports pkg.high.b, a layer above"]
    (pkg / "low" / "a.py").write_text("from .. import high\n")
    assert layer_violations(import_graph(pkg), "pkg", ("low", "high")) == ["pkg.low.a imports pkg.high, a layer above"]


def test_each_folder_imports_only_the_folders_below_it():
    graph = import_graph()
    assert {m.split(".")[1] for m in graph if m.count(".") >= 2} == set(LAYERS)
    assert layer_violations(graph) == []


def test_the_top_level_holds_the_layers_and_the_commands_entry_points():
    entries = sorted(p.name for p in PACKAGE.iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_TOP_LEVEL, entries
    assert entries == sorted(["__init__.py", "__main__.py", *LAYERS])


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


def test_the_readmes_folder_map_names_every_module_in_its_folder():
    rows = {line.split("|")[1].strip().strip("`/"): line for line in (ROOT / "README.md").read_text().splitlines()
            if line.startswith("| `") and line.split("|")[1].strip().strip("`/") in LAYERS}
    assert set(rows) == set(LAYERS)
    for layer in LAYERS:
        modules = {p.stem for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__"}
        modules |= {p.name for p in (PACKAGE / layer).iterdir() if p.is_dir() and p.name != "__pycache__"}
        assert {m for m in modules if f"`{m}`" not in rows[layer] and f"`{m}/`" not in rows[layer]} == set(), layer
