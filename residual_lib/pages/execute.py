"""Executing the section notebooks: jupytext percent files run by papermill with their
parameters injected. The sweep (after training) and the book (reading records only) both
execute notebooks through :func:`execute_notebook`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..core.paths import NOTEBOOKS, ROOT


def all_notebooks(directory: Path = NOTEBOOKS) -> list[Path]:
    """The section notebooks, in chapter order."""
    return sorted(p for p in directory.glob("[0-9][0-9]_*.py"))


def execute_notebook(notebook: Path, parameters: dict, out_dir: Path) -> Path:
    """Convert a jupytext notebook and execute it with papermill, parameters injected.
    The executed notebook is written under a temporary name and renamed when done."""
    import jupytext
    import papermill

    # the kernel imports the same residual_lib as this process, installed or not
    package_root = str(ROOT)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out_dir.mkdir(parents=True, exist_ok=True)
    final = out_dir / f"{notebook.stem}.ipynb"
    tmp = out_dir / f".{notebook.stem}.running.ipynb"
    # the kernel's own diagnostics (and, on Ctrl-C, the tracebacks of its dying sockets) go to
    # <name>.kernel.log, not to the terminal: the kernel inherits this process's stderr
    saved_stderr = os.dup(2)
    kernel_log = os.open(out_dir / f"{notebook.stem}.kernel.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stderr.flush()
    os.dup2(kernel_log, 2)
    try:
        papermill.execute_notebook(nb, str(tmp), parameters=parameters, kernel_name="python3",
                                   cwd=str(notebook.parent), progress_bar=False)
    except BaseException as exc:
        label = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        if tmp.exists():
            os.replace(tmp, out_dir / f"{notebook.stem}.{label}.ipynb")
        raise
    finally:
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        os.close(kernel_log)
    os.replace(tmp, final)
    for label in ("failed", "interrupted"):
        (out_dir / f"{notebook.stem}.{label}.ipynb").unlink(missing_ok=True)
    return final
