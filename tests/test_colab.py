"""Colab: every notebook's .ipynb twin (what Colab opens) installs this repository in its
first code cell when it runs in Colab and says how to switch to the book's profile, the
launch buttons point at the twins, and the twins match their .py sources."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import nbformat
import pytest
import tomllib
import yaml

from residual_lib.pages.book import ROOT, pages

PAGES = pages()


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def _first_code_cell(page) -> str:
    twin = nbformat.read(page.with_suffix(".ipynb"), as_version=4)
    return next(c for c in twin.cells if c.cell_type == "code")


def test_the_repository_url_is_the_same_everywhere():
    url = _config()["repository"]["url"]
    assert url.startswith("https://github.com/")
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"] == url
    for page in PAGES:
        assert f'"{url}"' in _first_code_cell(page).source, page.name
    assert _config()["launch_buttons"]["colab_url"] == "https://colab.research.google.com"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_first_code_cell_installs_the_repository_in_colab_only(page, monkeypatch):
    cell = _first_code_cell(page)
    assert "remove-cell" in cell.metadata.get("tags", [])  # not shown in the book
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    saved_path = list(sys.path)
    try:
        exec(cell.source, {})  # outside Colab: nothing happens
        assert calls == []
        monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
        exec(cell.source, {})
        assert sys.path[0] == calls[0][-1]  # the checkout is importable at once
    finally:
        sys.path[:] = saved_path
    clone, install = calls
    assert clone[:2] == ["git", "clone"] and _config()["repository"]["url"] in clone
    assert install == [sys.executable, f"{clone[-1]}/scripts/colab_install.py"]


def test_colab_install_keeps_the_installed_torch(monkeypatch):
    import runpy

    import torch

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    script = runpy.run_path(str(ROOT / "scripts" / "colab_install.py"))
    cmd = script["install"](ROOT)
    assert calls == [cmd]
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    assert cmd[-2:] == ["-e", f"{ROOT}[notebooks]"]
    pins = cmd[cmd.index("-c") + 1]
    try:
        with open(pins) as f:
            assert f.read().strip() == f"torch=={torch.__version__}"  # pip may not replace Colab's torch
    finally:
        os.unlink(pins)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_ipynb_twin_matches_its_source(page):
    import jupytext

    from residual_lib.pages.book import twin as make_twin

    twin = page.with_suffix(".ipynb")
    assert twin.is_file(), f"{twin.name} is missing: run make notebooks"
    committed = nbformat.read(twin, as_version=4)
    strip = lambda nb: [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]  # noqa: E731
    assert strip(committed) == strip(make_twin(page)), f"{twin.name} is out of date: run make notebooks"
    # the twin is the source plus the two Colab cells, which the book's pages do not have
    assert len(committed.cells) == len(jupytext.read(page).cells) + 2
    assert "google.colab" not in page.read_text()
    assert all(not c.get("outputs") for c in committed.cells if c.cell_type == "code")  # unexecuted


def _papermill_parameters(command: str) -> dict:
    """The parameters papermill injects for ``command`` (its ``-p`` and ``-r`` options)."""
    import shlex

    from papermill.cli import _resolve_type

    args = shlex.split(command)
    params = {args[i + 1]: _resolve_type(args[i + 2]) for i, a in enumerate(args) if a == "-p"}
    return params | {args[i + 1]: args[i + 2] for i, a in enumerate(args) if a == "-r"}


def _asked_seeds(section: str, params: dict, monkeypatch) -> list:
    from residual_lib.pages import notebook

    asked = {}
    monkeypatch.setattr(notebook, "ensure", lambda section, **kw: asked.update(kw))
    notebook.notebook_records(section, dict(params))
    return asked["seeds"]


@pytest.mark.parametrize("page", [p for p in PAGES if p.stem != "scorecard" and p.stem != "not_reproduced"],
                         ids=lambda p: p.stem)
def test_the_notes_papermill_line_gives_the_notebook_the_seeds_it_names(page, monkeypatch):
    twin = nbformat.read(page.with_suffix(".ipynb"), as_version=4)
    note = next(c.source for c in twin.cells if c.get("id") == "colab-note")
    named = yaml.safe_load(re.search(r"`seeds = (\[[^\]]*\])`", note).group(1))
    params = _papermill_parameters(re.search(r"`(papermill [^`]+)`", note).group(1))
    section = "05_confounds" if page.stem == "confounds" else page.stem
    assert params["profile"] == "cpu" and _asked_seeds(section, params, monkeypatch) == named


def test_the_readmes_papermill_line_gives_the_notebook_its_seeds(monkeypatch):
    line = next(line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("papermill "))
    params = _papermill_parameters(line.split("#")[0])
    assert _asked_seeds("06_central", params, monkeypatch) == [1337, 42, 123]


def test_toc_lists_every_notebook_under_its_repository_path():
    toc = (ROOT / "_toc.yml").read_text()
    for page in PAGES:
        assert re.search(rf"file: {page.parent.name}/{page.stem}\b", toc), page
