"""The book's Sphinx extension (``_config.yml``: ``sphinx: extra_extensions``).

- **Only the staged sources build.** The chapters' results come from notebooks that
  ``python -m residual_lib book`` executes from the run records into ``_build/source/``;
  jupyter-book executes nothing (``execute_notebooks: off``), so ``jupyter-book build .`` at
  the repository root would render every chapter without a result and exit 0. The staging
  step writes :data:`MARKER` into the folder it stages; a source folder without it stops
  the build at once, with one line that names the command to use.
- **Code toggles are named by what they say.** myst-nb labels each hidden cell's
  ``<summary>`` "Toggle hidden content" while it shows "Show code cell source", so a
  speech-input user who says what they see does not reach it (WCAG 2.5.3, *Label in Name*).
  The summary is written here without that label: its name is its visible text, and a
  ``<details>`` already tells its open or closed state.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

#: Written by :func:`residual_lib.book.build` into the staged sources (a dot file: Sphinx's
#: ``exclude_patterns`` keep it out of the book).
MARKER = ".residual-book-staged"

UNSTAGED = ("build the book with `python -m residual_lib book --profile cpu` (or `make book`): it executes the "
            "notebooks from the run records; `jupyter-book build .` alone renders them empty")


class UnstagedBook(SystemExit):
    """Raised at ``builder-inited`` for sources that were not staged. A ``SystemExit``, not a
    ``SphinxError``: jupyter-book turns a Sphinx error into a boxed message and a traceback,
    while this passes through it and ends the process with the one line and status 1."""


def require_staged(app) -> None:
    """``builder-inited``: refuse a source folder that ``python -m residual_lib book`` did not stage."""
    if not (Path(app.srcdir) / MARKER).is_file():
        raise UnstagedBook(UNSTAGED)


def visit_hide_input(self, node) -> None:
    """myst-nb's ``visit_HideCellInput`` less the summary's ``aria-label``."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def setup(app):
    app.setup_extension("myst_nb")  # its node first, so that this visitor replaces its own
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(visit_hide_input, depart_HideCellInput))
    app.connect("builder-inited", require_staged)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
