"""Building the book: execute every notebook from the run records, then render the site.

``python -m residual_lib book --profile cpu`` stages the site's sources under
``_build/source/``: ``_config.yml``, ``_toc.yml``, the narrative pages (``book/*.md``) and
every notebook -- the section notebooks (``notebooks/*.py``) and the computed book pages
(``book/*.py``) -- executed with papermill, the profile and ``train_missing=False``
injected so that nothing is trained. Executed notebooks keep their repository path
(``notebooks/06_central.ipynb``), so each page's Colab button opens the notebook of the
same name in the repository (the unexecuted ``.ipynb`` twin of the ``.py`` source, kept
in sync by ``make notebooks``). Then ``jupyter-book build`` renders ``_build/html`` with
warnings as errors (broken references fail the build); a notebook that raises fails it too.
The module is also the build's Sphinx extension (:func:`setup`): it numbers figures per
chapter (:func:`number_figures_per_chapter`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ..core.files import atomic_write
from ..core.paths import ROOT, results_folder
from .names import prose_names
from ..run.profiles import BOOK_PROFILE
from ..run.runs import RunError, in_paper_order
from ..storage.locks import claim_path, release_claim, try_claim
from ..storage.records import BadRecordsError, quarantine
from ..study.frames import load_records
from ..study.sections import CENTRAL_VARIANTS, PAPER_SEEDS, PLANS, controlled, missing, plan, required
from .execute import all_notebooks, execute_notebook
from .parameters import sync_parameters_cell
from .sphinxext import MARKER
from .tables import plural


class _Text(str):
    """A string whose repr is itself, so that a glued string reads as prose, not 'quoted'."""
    def __repr__(self) -> str:
        return str(self)


class Prose:
    """A sentence of Markdown to glue, displayed as Markdown on its own page ({glue:md}`key`)
    and as inline HTML on another page: myst-nb 1.4 pastes across pages only with {glue}`path::key`
    and {glue:text}, and the first renders a glued output's HTML, so a sentence with inline code
    or emphasis keeps its formatting wherever it is pasted."""

    def __init__(self, markdown: str):
        self.markdown = prose_names(markdown)  # the variants as the prose names them, code kept

    def _repr_markdown_(self) -> str:
        return self.markdown

    def _repr_html_(self) -> str:
        from markdown_it import MarkdownIt

        # curly quotes, as Sphinx's smartquotes gives the rest of the page
        return MarkdownIt("commonmark", {"typographer": True}).enable("smartquotes").renderInline(self.markdown)

    def __repr__(self) -> str:
        return self.markdown


def glue(name: str, value, display: bool = False):
    """myst-nb's ``glue`` when available (the book build), a no-op elsewhere (Colab, plain Jupyter)."""
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return
    _glue(name, _Text(value) if isinstance(value, str) else value, display=display)


def pages(root: Path = ROOT) -> list[Path]:
    """Every notebook the book shows: the computed book pages, then the sections."""
    return sorted((root / "book").glob("*.py")) + all_notebooks(root / "notebooks")


def _clean_executed(path: Path, source: str) -> None:
    """Prepare an executed notebook for the site:

    - remove the cell papermill injected (its parameters are not content);
    - hide every code cell's input behind a toggle (results first; ``show-input`` keeps a
      cell's code open);
    - turn the caption, name and alt text :func:`residual_lib.pages.plots.show` stored with a
      figure's output into myst-nb's cell metadata, which renders it as a numbered figure;
    - put the Markdown a cell tagged ``markdown-output`` displays into the page as a Markdown
      cell after it (:func:`_markdown_output`);
    - write the variants' code names in Markdown, written or printed, as the prose names them;
    - replace the paths papermill stores in the notebook's metadata (the whole input
      notebook, the building machine's output path) by the repository-relative ``source``."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells = [new for cell in nb.cells for new in _markdown_output(cell, source)]
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        if cell.cell_type == "code" and not {"remove-cell", "remove-input", "hide-input", "show-input"} & set(tags):
            tags.append("hide-input")
        if tags:
            cell.metadata["tags"] = tags
        if cell.cell_type == "markdown":  # backticks (code, MyST roles) are kept as they are
            cell.source = prose_names(cell.source)
        for output in cell.get("outputs", []):
            # sentences a page prints: the variants as the prose names them (code in backticks kept)
            if "text/markdown" in output.get("data", {}):
                output["data"]["text/markdown"] = prose_names(output["data"]["text/markdown"])
            figure = output.get("metadata", {}).pop("residual_lib", None)
            if figure:
                cell.metadata["mystnb"] = {"figure": {"name": figure["name"], "caption": figure["caption"]},
                                           "image": {"alt": figure["alt"]}}
    meta = nb.metadata.get("papermill")
    if meta is not None:
        meta["input_path"] = source
        meta["output_path"] = str(Path(source).with_suffix(".ipynb"))
    atomic_write(path, nbformat.writes(nb) + "\n")


def _markdown_output(cell, source: str) -> list:
    """``[cell]``, or for a code cell tagged ``markdown-output``, the cell without its outputs and
    a Markdown cell holding the Markdown it displayed (``IPython.display.Markdown``). myst-nb
    renders a Markdown *output* inside the cell's output box, its headings as rubrics that no
    contents list shows; as a Markdown cell, its headings are the page's own sections (a page
    that lists computed entries, one heading each, lists them in its contents too)."""
    import nbformat

    if cell.cell_type != "code" or "markdown-output" not in cell.metadata.get("tags", []):
        return [cell]
    texts = [output["data"]["text/markdown"] for output in cell.outputs
             if output.get("output_type") in ("display_data", "execute_result")
             and "text/markdown" in output.get("data", {})]
    if not texts:
        raise ValueError(f"{source}: a cell tagged markdown-output displayed no Markdown")
    cell.outputs = []
    return [cell, nbformat.v4.new_markdown_cell("\n\n".join(texts), id=f"{cell.get('id', 'cell')}-md"[-64:])]


def _draw_static_figures(folder: Path) -> None:
    """The diagrams the narrative pages show (no records involved), drawn as SVG."""
    import matplotlib

    matplotlib.use("Agg")
    # imported here, after the backend is chosen, and so that the command line, which imports
    # this module, does not load matplotlib and seaborn for every command
    from . import plots

    fig = plots.block_variants()
    fig.savefig(folder / "block_variants.svg", format="svg", metadata={"Date": None})
    plots.plt.close(fig)


def recorded_seeds(results: Path, profile: str) -> list[int]:
    """The seeds the chapters show: in order (the paper's first), every seed with a
    central-sweep record (fixed batches, deterministic, gain 1) for all four variants whose
    addition leaves no section short of a record (a partial sweep may have finished a seed's
    central runs but not yet its mixer run). Runs a chapter shows in part
    (:func:`residual_lib.study.sections.required`) do not count."""
    frame = load_records(results / profile)
    if frame.empty:
        return []
    central = controlled(frame)
    central = central[central.variant.isin(CENTRAL_VARIANTS)]
    complete = central.groupby("seed")["variant"].nunique()
    ordered = in_paper_order(complete.index)
    chosen: list[int] = []
    for seed in (int(s) for s in ordered if complete[s] == len(CENTRAL_VARIANTS)):
        trial = chosen + [seed]
        if not any(required(name, missing(plan(name, profile, trial), results), profile) for name in PLANS):
            chosen.append(seed)
    return chosen


def shortfall(results: Path, profile: str) -> str:
    """Why :func:`recorded_seeds` found no seed, in one line: no complete central sweep, or the
    first such seed's first section that lacks a record it needs, with the command that makes it."""
    frame = load_records(results / profile) if (results / profile).is_dir() else pd.DataFrame()
    central = controlled(frame) if len(frame) else frame
    complete = (central[central.variant.isin(CENTRAL_VARIANTS)].groupby("seed")["variant"].nunique()
                if len(central) else pd.Series(dtype=int))
    ready = [int(s) for s in complete.index if complete[s] == len(CENTRAL_VARIANTS)]
    where = "" if results.resolve() == results_folder().resolve() else f" --results {shlex.quote(str(results))}"
    if not ready:
        return (f"no complete central sweep under {results / profile}: run "
                f"`python -m residual_lib sweep --all --profile {profile}{where}` first")
    seed = next((s for s in PAPER_SEEDS if s in ready), ready[0])
    for name in PLANS:
        needed = required(name, missing(plan(name, profile, [seed]), results), profile)
        if needed:
            return (f"seed {seed} lacks {len(needed)} {plural('record', len(needed))} that section {name} needs under "
                    f"{results} (first: {needed[0].label()}): run `python -m residual_lib sweep notebooks/{name}.py "
                    f"--profile {profile} --seeds {seed}{where}` first")
    return f"no seed under {results / profile} has every record the book needs"


def check_records(results: Path, profile: str, skip_bad: bool = False) -> None:
    """Validate every record the book would read before executing anything: a bad file
    stops the build with one line per file (:class:`residual_lib.storage.records.BadRecordsError`),
    or, with ``skip_bad``, is moved aside (the sweep then retrains it)."""
    folder = results / profile
    if not folder.is_dir():
        return
    try:
        load_records(folder)
    except BadRecordsError as exc:
        if not skip_bad:
            raise
        for error in exc.errors:
            quarantine(error.path, error.reason)


def build(profile: str = BOOK_PROFILE, results_dir: str | os.PathLike | None = None, root: Path = ROOT,
          builder: str = "html", seeds: list[int] | None = None, skip_bad: bool = False) -> Path:
    """Execute every page from the records of ``profile`` (for ``seeds``, by default every
    seed with a complete central sweep) and build the site; returns the index page. Every
    record is validated first (:func:`check_records`). One build at a time uses ``root/_build``:
    a second one stops with one line naming the first (:class:`RunError`)."""
    results = results_folder(results_dir).resolve()
    check_records(results, profile, skip_bad)
    seeds = seeds or recorded_seeds(results, profile)
    if not seeds:
        raise FileNotFoundError(shortfall(results, profile))
    lock = root / "_build" / "book"  # held in _build/.book.claim while this build uses _build
    if not try_claim(lock):
        try:
            owner = json.loads(claim_path(lock).read_text() or "{}")
        except (OSError, ValueError):
            owner = {}
        raise RunError(f"another book build (process {owner.get('pid', '?')}, since {owner.get('since', '?')}) is "
                       f"using {root / '_build'}: wait for it to finish, or build from another checkout")
    try:
        return _build(profile, results, root, builder, seeds)
    finally:
        release_claim(lock)


def _build(profile: str, results: Path, root: Path, builder: str, seeds: list[int]) -> Path:
    stage = root / "_build" / "source"
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "book").mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, stage / name)
    shutil.copytree(root / "_static", stage / "_static")  # the verdict colours (html_css_files)
    for page in (root / "book").glob("*.md"):
        shutil.copy2(page, stage / "book" / page.name)
    _draw_static_figures(stage / "book")
    for page in pages(root):
        # the results folder relative to the page's folder (the notebook runs there), so that no
        # path of the building machine ends up in the page or its downloadable notebook
        params = {"profile": profile, "seeds": seeds, "results_dir": os.path.relpath(results, page.parent),
                  "train_missing": False}
        executed = execute_notebook(page, params, stage / page.parent.name)
        _clean_executed(executed, str(page.relative_to(root)))
        print(f"executed {page.relative_to(root)}", file=sys.stderr, flush=True)
    # every page is executed: the staged sources may be built (residual_lib.pages.sphinxext builds no others)
    (stage / MARKER).write_text(f"executed from the {profile} records by python -m residual_lib book\n")
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(stage), "--path-output", str(root),
           "--builder", builder, "-W", "-n", "--keep-going"]
    subprocess.run(cmd, check=True, cwd=root)
    return root / "_build" / "html" / "index.html"


# --------------------------------------------------------------------------- figure numbers


def number_figures_per_chapter(app, env) -> list[str]:
    """Number figures per page: ``Fig. N.k`` is the k-th figure of chapter N (a page named
    ``NN_name``, as the paper's sections are), ``Fig. k`` the k-th of a page outside the
    numbered chapters (the introduction, the verdict pages). Sphinx counts across the whole
    book unless the table of contents is numbered, which would number the pages by their
    place in it rather than by the paper's sections. Runs after Sphinx has assigned its
    numbers (``env-get-updated``); cross-references read the same table, so they agree."""
    for docname, kinds in env.toc_fignumbers.items():
        chapter = re.match(r"(\d+)_", docname.rsplit("/", 1)[-1])
        prefix = (int(chapter.group(1)),) if chapter else ()
        for numbers in kinds.values():  # figures, and tables or code blocks were any numbered
            for k, name in enumerate(sorted(numbers, key=numbers.get), 1):
                numbers[name] = (*prefix, k)
    return []


def setup(app):
    """This module as a Sphinx extension (``_config.yml``: ``sphinx: extra_extensions``)."""
    app.connect("env-get-updated", number_figures_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# --------------------------------------------------------------------------- Colab twins

#: The first code cell of every Colab twin: in Colab, clone the repository (code and run
#: records) and install it, keeping Colab's torch; elsewhere, nothing.
COLAB_SETUP = '''# In Colab: fetch this repository (code and run records) and install it, keeping Colab's torch.
import sys

if "google.colab" in sys.modules:
    import subprocess

    REPOSITORY, CHECKOUT = "{url}", "/content/residual-ablations"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY, CHECKOUT], check=False)
    subprocess.run([sys.executable, f"{{CHECKOUT}}/scripts/colab_install.py"], check=True)
    sys.path.insert(0, CHECKOUT)'''

COLAB_NOTE = '''**Running this notebook.** It runs the `{profile}` profile by default{trains}. The book shows the
`cpu` profile: set `profile = "cpu"` and `seeds = {seeds}` in the parameters cell
below to see the same numbers; the repository's committed `cpu` records are then read, not
retrained. Headless, the same with papermill:
`papermill {path} out.ipynb -p profile cpu -p seeds "{seeds}"`.'''


def repository_url(root: Path = ROOT) -> str:
    import yaml

    return yaml.safe_load((root / "_config.yml").read_text())["repository"]["url"]


def twin(page: Path, root: Path = ROOT):
    """The Colab twin of a jupytext page: the page's cells, with the Colab set-up cell and a
    note on the default profile after its title (they are for Colab only: the book's pages,
    executed from the ``.py`` sources, do not have them)."""
    import jupytext
    import nbformat

    nb = jupytext.read(page)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    profile = re.search(r'^profile = "(\w+)"', params.source, flags=re.M).group(1)
    trains = ", training any record that is missing (minutes on a CPU)" if "train_missing = True" in params.source \
        else ""
    rel = f"{page.parent.name}/{page.stem}.ipynb"
    # the seeds the book shows: those of the committed cpu records
    seeds = "[" + ", ".join(map(str, recorded_seeds(root / "results", BOOK_PROFILE))) + "]"
    note = nbformat.v4.new_markdown_cell(COLAB_NOTE.format(profile=profile, trains=trains, path=rel, seeds=seeds),
                                         metadata={"tags": ["remove-cell"]}, id="colab-note")
    setup = nbformat.v4.new_code_cell(COLAB_SETUP.format(url=repository_url(root)),
                                      metadata={"tags": ["remove-cell"]}, id="colab-setup")
    title = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    nb.cells[title + 1:title + 1] = [setup, note]
    return nb


def write_twins(root: Path = ROOT) -> list[Path]:
    """Write every page's ``.ipynb`` twin (``make notebooks``), keeping the ids of cells that did
    not change, so that a regeneration changes only what changed."""
    import nbformat

    written = []
    for page in pages(root):
        nb = twin(page, root)
        path = page.with_suffix(".ipynb")
        if path.is_file():
            old = {(c.cell_type, c.source): c.get("id") for c in nbformat.read(path, as_version=4).cells}
            for cell in nb.cells:
                cell.id = old.get((cell.cell_type, cell.source)) or cell.get("id")
        nb.metadata.pop("jupytext", None)
        nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
        text = nbformat.writes(nb) + "\n"
        if not path.is_file() or path.read_text() != text:
            atomic_write(path, text)
            written.append(path)
    return written


if __name__ == "__main__":  # python -m residual_lib.pages.book (make notebooks): parameters cells, then the Colab twins
    for notebook in all_notebooks(ROOT / "notebooks"):
        if sync_parameters_cell(notebook):
            print(f"wrote {notebook.relative_to(ROOT)}")
    for path in write_twins():
        print(f"wrote {path.relative_to(ROOT)}")
