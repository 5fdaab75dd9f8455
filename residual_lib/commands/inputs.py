"""What the command line checks before a command does any work: each check raises
:class:`~residual_lib.run.runs.RunError` (or :class:`~residual_lib.core.files.NotWritableError`)
with one line that names the fix, so that bad input never costs a benchmark or a retrained run
before it is refused."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..core.files import check_writable
from ..core.paths import results_folder
from ..run.runs import RunError

#: Options whose destination is not named after them.
_FLAGS = {"out": "--results", "results_dir": "RESULTS", "records": "RECORD", "notebooks": "NOTEBOOK"}

#: What a notebook the sweep runs may be: a jupytext percent file or its .ipynb twin.
NOTEBOOK_SUFFIXES = (".py", ".ipynb")


def no_empty_values(args: argparse.Namespace) -> None:
    """An option given as an empty string (``--results ''``) is refused rather than read as
    "not given": its default would silently take its place."""
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            flag = _FLAGS.get(dest, "--" + dest.replace("_", "-"))
            raise RunError(f"{flag} is empty: give it a value, or leave it out for its default")


def results_dir(path: str | None, option: str = "--results", record_file: bool = False) -> Path:
    """The results folder a reading command uses (``summary``, ``book``): it must exist and be a
    folder, so that a misspelt path is not reported as a folder with no records. ``option``
    names how it was given; with no ``path``, the default folder is named as such. With
    ``record_file``, one record file is taken too (``summary`` reads one as readily as a folder)."""
    folder = results_folder(path)
    said = f"{option} {folder}" if path else f"the results folder {folder}"
    if not folder.exists():
        raise RunError(f"{said} does not exist: pass --results the folder that holds the <profile>/ record folders")
    if not folder.is_dir() and not record_file:
        raise RunError(f"{said} is a file, not a folder: pass --results the folder that holds the <profile>/ "
                       "record folders")
    return folder


def notebook_paths(names: list[str]) -> None:
    """Every notebook the sweep is given is a ``.py`` or ``.ipynb`` file (which section it is the
    sweep reads from its name; what kind of file, only from its suffix)."""
    for name in names:
        if Path(name).suffix not in NOTEBOOK_SUFFIXES:
            raise RunError(f"{name} is not a notebook: pass notebooks/NN_section.py (or its .ipynb twin)")


def json_target(path: str | None, what: str = "the report") -> None:
    """A ``--json`` path that can be written as a file, checked before the work that fills it."""
    if path is None:
        return
    if Path(path).is_dir():
        raise RunError(f"--json {path} is a folder: pass a file path, e.g. {Path(path) / 'report.json'}")
    check_writable(Path(path).resolve().parent, option="--json", what=what)


def certificates_writable(record: str | os.PathLike) -> None:
    """``verify`` writes a certificate beside each record (``<profile>/verified/``): that folder
    must take it before the run is retrained, not after."""
    from ..training.verify import certificate_path  # (torch) only when a record is verified

    check_writable(certificate_path(record).parent, what="a certificate",
                   fix="copy the record into a writable <results>/<profile>/ folder and verify it there")


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def threads_fit(threads: int | None) -> None:
    """``--threads`` no more than the cores there are: more would time threads that wait for a
    core and report them as the machine's rate."""
    if threads is not None and threads > available_cores():
        raise RunError(f"--threads {threads} is more than the {available_cores()} cores this process may use: pass "
                       f"at most {available_cores()}")
