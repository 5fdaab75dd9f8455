"""A section notebook's parameters: their defaults (:func:`defaults`, the one place they are
written), the ``parameters`` cell every section notebook carries (:func:`parameters_cell`),
and the checks a value passes before anything runs.

Each parameter is read in its common spellings -- papermill's ``-p`` passes ``"[1, 2]"`` and
``"1,2"`` as strings and ``-r`` passes every value as one -- and a value of the wrong kind is
a :class:`ParameterError` whose one line names the parameter, the value and how to pass it.
"""

from __future__ import annotations

import ast
import inspect
import math
import numbers
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ..core.files import atomic_write
from ..run.architecture import CENTRAL_VARIANTS, VARIANTS
from ..run.profiles import PROFILES
from ..run.runs import MAX_SEED, PAPER_SEEDS
from ..study.sections import DEFAULT_PROFILE, PLANS, section_name

#: The parameters every section notebook has (its ``parameters`` cell), with their defaults;
#: a section's plan adds its own (e.g. ``gains`` for 05_confounds), defaults in its signature.
COMMON_PARAMETERS = {"profile": DEFAULT_PROFILE, "seeds": PAPER_SEEDS, "variants": CENTRAL_VARIANTS,
                     "device": "auto", "results_dir": None, "train_missing": True}


def defaults(section: str) -> dict:
    """Every parameter ``section``'s notebook takes, with its default: the one place the
    section's defaults are written (the plan's signature and :data:`COMMON_PARAMETERS`)."""
    own = {n: p.default for n, p in inspect.signature(PLANS[section_name(section)]).parameters.items()
           if n not in ("profile", "seeds", "variants")}
    # lists, fresh each time: a notebook that edits its seeds does not edit the default
    return {n: list(v) if isinstance(v, tuple) else v for n, v in {**COMMON_PARAMETERS, **own}.items()}


class ParameterError(ValueError):
    """A notebook parameter of the wrong kind; the message, one line, names the parameter, the
    value given and how to pass it."""


#: The smallest value of the sections' integer parameters (0 where not named here).
_MINIMUM = {"ladder_seeds": 1, "repeats": 1, "gain_seeds": 1}


def _items(value) -> list:
    """The items of a list parameter in its common spellings: a list or tuple, one value, or a
    string holding a list (``"[1, 2]"``, JSON or Python) or items separated by commas and/or
    spaces (``"1,2"``, ``"1 2"``). A string is never split into characters."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("[", "(") and text[-1:] in ("]", ")"):
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError):  # e.g. [full, attn_only]: the names unquoted
                parsed = None
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
            text = text[1:-1]
        return [t.strip("'\"") for t in re.split(r"[\s,]+", text) if t.strip("'\"")]
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return list(value)
    return [value]


def _integer(item) -> int | None:
    if isinstance(item, numbers.Integral) and not isinstance(item, bool):
        return int(item)
    if isinstance(item, str) and re.fullmatch(r"\s*\+?\d+\s*", item):
        return int(item)
    return None


def _positive(item) -> float | None:
    if isinstance(item, bool) or not isinstance(item, (numbers.Real, str)):
        return None
    try:
        number = float(item)
    except ValueError:
        return None
    return number if math.isfinite(number) and number > 0 else None


def _check_parameter(name: str, value, default):
    """``value`` of the parameter ``name`` (whose default is ``default``) in its normal form,
    or :class:`ParameterError`."""

    def bad(what: str, fix: str):
        shown = " ".join(repr(value).split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return ParameterError(f"{name} must be {what}, got {shown}: pass {fix}")

    def as_list(example: list, what: str, convert) -> list:
        sequence = isinstance(value, (str, Sequence)) and not isinstance(value, (bytes, bytearray))
        items = _items(value) if sequence or convert(value) is not None else None
        out = [convert(item) for item in items] if items else None
        if not out or any(item is None for item in out):
            quoted = ", ".join(f'"{e}"' if isinstance(e, str) else str(e) for e in example)
            listed = f"'[{quoted}]'" if any(isinstance(e, str) for e in example) else f'"[{quoted}]"'
            raise bad(what, f"-p {name} {listed} or -r {name} \"{' '.join(str(e) for e in example)}\"")
        return out

    if name == "profile":
        if not isinstance(value, str) or value not in PROFILES:
            raise bad(f"one of {', '.join(PROFILES)}", f"-p {name} {default}")
        return value
    if name == "device":
        if not isinstance(value, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", value):
            raise bad("auto, cpu, cuda or cuda:N", f"-p {name} auto")
        return value
    if name == "results_dir":
        if value is not None and not (isinstance(value, (str, os.PathLike)) and os.fspath(value)):
            raise bad("a folder or None", f"-p {name} path/to/results, or leave it None for the checkout's results/")
        return None if value is None else os.fspath(value)
    if name == "variants" or name.endswith("_variant"):
        known = ", ".join(VARIANTS)

        def variant(item) -> str | None:
            return item if isinstance(item, str) and item in VARIANTS else None

        if name == "variants":
            return as_list(list(default), f"a list of variant names ({known})", variant)
        if variant(value) is None:
            raise bad(f"one of {known}", f"-p {name} {default}")
        return value
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise bad("True or False", f"-p {name} True or -p {name} False")
    if isinstance(default, int):
        least = _MINIMUM.get(name, 0)
        number = _integer(value)
        if number is None or number < least:
            raise bad(f"an integer >= {least}", f"-p {name} {default}")
        return number
    if isinstance(default, (list, tuple)) and all(_integer(d) is not None for d in default):
        top = MAX_SEED if name == "seeds" else math.inf

        def integer(item) -> int | None:
            number = _integer(item)
            return number if number is not None and 0 <= number <= top else None

        return as_list(list(default), "a list of integers from 0 to 2^63 - 1" if name == "seeds" else
                       "a list of integers >= 0", integer)
    if isinstance(default, (list, tuple)):
        return as_list(list(default), "a list of positive numbers", _positive)
    raise TypeError(f"no check for the section parameter {name} (default {default!r}): add one to "
                    "residual_lib.pages.parameters._check_parameter")


def check_parameters(section: str, params: dict) -> dict:
    """``params`` with each of ``section``'s parameters (:func:`defaults`) in its normal form:
    the profile and the variants known names, seeds a list of integers from 0 to 2^63 - 1,
    gains a list of positive floats, switches booleans, ``results_dir`` a string or None;
    lists and switches in their common spellings (see :func:`_items`; ``"true"``,
    ``"false"``). Other names pass through unchanged. A value of the wrong kind raises
    :class:`ParameterError`."""
    known = defaults(section)
    return {n: _check_parameter(n, v, known[n]) if n in known else v for n, v in params.items()}


#: What the ``parameters`` cell says of the seeds: papermill shows the cell in every executed
#: notebook, so it says where the defaults are.
_SEEDS_NOTE = "  # None: the section's default, parameters.defaults(section)"


def parameters_cell(section: str) -> str:
    """The source of ``section``'s ``parameters`` cell: every parameter of :func:`defaults`,
    ``None`` (the section's default) except the profile, the device and the switch that lets
    a notebook train, which papermill and Colab users change most. Generated, not typed: a
    notebook's cell is rewritten from here (``make notebooks``) and a test compares them."""
    lines = []
    for name, default in defaults(section).items():
        value = {"profile": f'"{DEFAULT_PROFILE}"', "device": '"auto"', "train_missing": "True"}.get(name, "None")
        lines.append(f"{name} = {value}" + (_SEEDS_NOTE if name == "seeds" else ""))
    return "\n".join(lines)


#: A jupytext percent notebook's parameters cell: its marker line, then its source up to the next cell.
_CELL = re.compile(r'^(# %% tags=\["parameters"[^\n]*\n)(.*?)(?=^# %%)', re.M | re.S)


def sync_parameters_cell(notebook: str | os.PathLike) -> bool:
    """Rewrite the ``parameters`` cell of a section notebook (a jupytext percent file) from
    :func:`parameters_cell`; True if the file changed."""
    path = Path(notebook)
    text = path.read_text()
    found = _CELL.search(text)
    if found is None:
        raise ValueError(f"{path} has no cell tagged parameters: add one (# %% tags=[\"parameters\"])")
    new = text[:found.start(2)] + parameters_cell(section_name(path)) + "\n\n" + text[found.end(2):]
    if new != text:
        atomic_write(path, new)
    return new != text
