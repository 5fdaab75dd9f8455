"""Where things are: the checkout, its notebooks and the results folder."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository checkout this package was imported from (for an installed package, the
#: folder above it: only meaningful in a checkout, see :func:`in_checkout`).
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def in_checkout() -> bool:
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "residual_lib").is_dir()


def default_results_dir() -> Path:
    """``$RESIDUAL_RESULTS_DIR``, else ``results/`` at the root of this checkout (so that
    notebooks and commands find the same records whatever folder they run in), else
    ``./results``."""
    if os.environ.get("RESIDUAL_RESULTS_DIR"):
        return Path(os.environ["RESIDUAL_RESULTS_DIR"]).expanduser()
    return ROOT / "results" if in_checkout() else Path.cwd() / "results"


def results_folder(path: str | os.PathLike | None = None) -> Path:
    """The results folder a command, a notebook or the library uses: ``path`` when given, else
    :func:`default_results_dir`."""
    return Path(path).expanduser() if path else default_results_dir()
