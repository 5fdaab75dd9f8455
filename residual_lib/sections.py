"""What each section of the book needs trained, and how a notebook gets it.

A notebook never trains by itself: it asks for its records in one line,
``notebook_records(section, globals())``, which reads the section's parameters from the
notebook (a ``None`` takes the section's default: :func:`defaults`, the one place they are
written) and calls :func:`ensure`; :func:`plan` turns them into the list of runs
(:class:`residual_lib.runs.Run`) the section needs; cached records are returned as they are
and only missing ones are trained. The sweep command calls the same :func:`plan` to train
everything up front, in parallel, before it executes the notebooks.

Parameters are checked before anything else (:func:`check_parameters`): each one is read in
its common spellings -- papermill's ``-p`` passes ``"[1, 2]"`` and ``"1,2"`` as strings and
``-r`` passes every value as one -- and a value of the wrong kind is a
:class:`ParameterError` whose one line names the parameter, the value and how to pass it.
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

import pandas as pd

from .paths import default_results_dir  # noqa: F401 (re-exported: notebooks import it from here)
from .model import VARIANTS
from .profiles import DROPOUT_TWIN, LADDER_SEEDS, PROFILES, get_profile, ladder
from .records import diverged, find_record, load_records, usable
from .runs import CENTRAL_VARIANTS, MAX_SEED, PAPER_SEEDS, Run
from .tables import scientific
from .train import obtain

#: The profile a notebook run as it is, or a sweep without --profile, trains: seconds a run.
DEFAULT_PROFILE = "smoke"


def _central(profile, seeds, variants):
    return [Run(profile, v, s) for v in variants for s in seeds]


def _central_twinned(profile, seeds, variants, dropout_twin=True):
    """The central sweep, and with ``dropout_twin`` the same runs at the profile's dropout
    twin (:data:`residual_lib.profiles.DROPOUT_TWIN`), the second stand-in the scorecard judges."""
    twin = DROPOUT_TWIN.get(profile) if dropout_twin else None
    return _central(profile, seeds, variants) + (_central(twin, seeds, variants) if twin else [])


def _joint_collapse(profile, seeds, variants):
    # nanoGPT-style evaluation (fresh random validation batches), one seed as in the paper;
    # the block-0 gradients are read from every seed of the controlled runs as well
    return [Run(profile, v, s, eval_mode="random") for v in variants for s in seeds[:1]] + \
        _central(profile, seeds, variants)


def _confounds(profile, seeds, variants, gains=(0.5, 1.0, 2.0, 4.0), gain_variant="attn_only"):
    gain_runs = [Run(profile, gain_variant, s, gain=float(g)) for g in gains for s in seeds[:1]]
    # evaluation noise and drift are read from the fixed-batch runs of the central sweep
    return gain_runs + _central(profile, seeds, variants)


def _mechanism(profile, seeds, variants):
    # the mixer, its no-mixing control (pointwise) and the variants they sit between; full is
    # the control of the growth, drift and alpha_tt tables
    return [Run(profile, v, s) for v in ("attn_only", "ffn_only", "mixer", "pointwise", "full") for s in seeds]


def _reproduction(profile, seeds, variants, repeats=3, repro_variant="attn_only"):
    first = seeds[0]
    deterministic = [Run(profile, repro_variant, first, replicate=r) for r in range(2)]
    nondeterministic = [Run(profile, repro_variant, first, deterministic=False, replicate=r) for r in range(repeats)]
    return deterministic + nondeterministic + _central(profile, seeds, variants)


def _scale_ladder(profile, seeds, variants, ladder_seeds=3):
    # every rung of the ladder, the central variants, the first ladder_seeds seeds (fewer at
    # the rungs of LADDER_SEEDS); rung by rung, so the smaller rungs finish first
    return [Run(rung, v, s) for rung in ladder(profile) for v in variants
            for s in seeds[:min(ladder_seeds, LADDER_SEEDS.get(rung, ladder_seeds))]]


#: The FFNOnly escape study's conditions: the profile each one trains at, per base profile.
ESCAPE_PROFILES: dict[str, dict[str, str]] = {
    "cpu": {"dropout 0.2": DROPOUT_TWIN["cpu"], "6,000 steps": "cpu-long"},
    "smoke": {"dropout 0.2": DROPOUT_TWIN["smoke"], "6,000 steps": "smoke-long"},
}
#: The FFNOnly escape rate's seeds, fixed before any of their runs was trained: the five
#: seeds of the central sweep, then the first fifteen positive integers not among them.
ESCAPE_RATE_SEEDS = (1337, 42, 123, 7, 8, *[s for s in range(1, 18) if s not in (7, 8)])
assert len(ESCAPE_RATE_SEEDS) == 20 and len(set(ESCAPE_RATE_SEEDS)) == 20
#: How many of :data:`ESCAPE_RATE_SEEDS` the escape rate trains at a base profile and its
#: dropout twin (profiles not named here: the section's seeds only, as the tests' smoke).
ESCAPE_RATE_RUNS: dict[str, int] = {"cpu": 20}
#: The lines the escape rate is counted at: nats below the floor that count as an escape.
ESCAPE_THRESHOLDS = (0.02, 0.05, 0.10)
#: The relative size of the initial-weight perturbation that asks whether an escape is a
#: property of the seed or of rounding (:func:`residual_lib.train.perturb_init`).
ESCAPE_INIT_NOISE = 1e-6


def _ffn_escape(profile, seeds, variants, escape_gains=(0.5, 2.0, 4.0), perturbations=1):
    """ffn_only at every seed: under each condition of :data:`ESCAPE_PROFILES`, with the
    initial weights nudged by :data:`ESCAPE_INIT_NOISE` (``perturbations`` draws), and at
    runtime gains ``escape_gains`` for the first seed; plus the central ffn_only runs, and
    the escape rate's seeds (:data:`ESCAPE_RATE_RUNS`) at the base profile and with dropout."""
    rate = [s for s in ESCAPE_RATE_SEEDS[:ESCAPE_RATE_RUNS.get(profile, 0)] if s not in seeds]
    runs = [Run(profile, "ffn_only", s) for s in seeds]
    runs += [Run(profile, "ffn_only", s, init_noise=ESCAPE_INIT_NOISE, replicate=r)
             for r in range(perturbations) for s in seeds]
    for condition_profile in ESCAPE_PROFILES.get(profile, {}).values():
        runs += [Run(condition_profile, "ffn_only", s) for s in seeds]
    runs += [Run(profile, "ffn_only", seeds[0], gain=float(g)) for g in escape_gains]
    dropout = ESCAPE_PROFILES.get(profile, {}).get("dropout 0.2")
    runs += [Run(p, "ffn_only", s) for s in rate for p in (profile, dropout) if p]
    return runs


def escape_condition(profile: str, run_profile: str, gain: float, init_noise: float) -> str:
    """The escape-study condition a run of :func:`_ffn_escape` belongs to, by its fields."""
    named = {p: c for c, p in ESCAPE_PROFILES.get(profile, {}).items()}
    if run_profile in named:
        return named[run_profile]
    if init_noise:
        return f"initial weights nudged by {scientific(init_noise, 1)}"
    if gain != 1.0:
        return f"gain {gain:g}"
    return "as recorded (central sweep)"


PLANS = {
    "03_setup": lambda profile, seeds, variants: [],
    "04_joint_collapse": _joint_collapse,
    "05_confounds": _confounds,
    "06_central": _central_twinned,
    "07_mechanism": _mechanism,
    "08_reproduction": _reproduction,
    "09_scale_ladder": _scale_ladder,
    "10_ffn_escape": _ffn_escape,
}


#: Sections whose chapter shows whatever part of the study has records (the others need all).
PARTIAL_OK = frozenset({"09_scale_ladder", "10_ffn_escape"})
#: Runs a section plans but shows in whatever part has records (the rest of its runs are
#: required): chapter 6's runs at the dropout twin, chapter 7's no-mixing control. A
#: predicate of the run and the section's profile.
SHOWN_IN_PART = {
    "06_central": lambda run, profile: run.profile.name != profile,
    "07_mechanism": lambda run, profile: run.variant == "pointwise",
}


def required(section: str, runs: list[Run], profile: str, partial_ok: bool = True) -> list[Run]:
    """The runs of ``runs`` that ``section``'s chapter cannot be shown without: none for a
    section of :data:`PARTIAL_OK` (unless ``partial_ok`` is False), else all but those of
    :data:`SHOWN_IN_PART`."""
    name = section_name(section)
    if partial_ok and name in PARTIAL_OK:
        return []
    optional = SHOWN_IN_PART.get(name)
    return [r for r in runs if not (optional and optional(r, profile))]


def section_name(notebook: str | os.PathLike) -> str:
    name = Path(notebook).stem
    if name not in PLANS:
        raise ValueError(f"no section named {name!r}: notebooks are {', '.join(PLANS)}")
    return name


def plan(section: str, profile: str = DEFAULT_PROFILE, seeds=PAPER_SEEDS, variants=CENTRAL_VARIANTS,
         **params) -> list[Run]:
    """The runs ``section`` needs for these parameters, without duplicates, in order."""
    get_profile(profile)  # fail early on an unknown profile
    build = PLANS[section_name(section)]
    known = [n for n in inspect.signature(build).parameters if n not in ("profile", "seeds", "variants")]
    unknown = sorted(set(params) - set(known))
    if unknown:  # a misspelt parameter would otherwise plan runs nobody asked for
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for section {section_name(section)}: "
                         f"it takes {', '.join(known) or 'none besides profile, seeds and variants'}")
    specs = build(profile=profile, seeds=[int(s) for s in seeds], variants=list(variants), **params)
    return list(dict.fromkeys(specs))


def missing(specs: list[Run], results_dir: str | os.PathLike | None = None) -> list[Run]:
    results = Path(results_dir) if results_dir else default_results_dir()
    return [s for s in specs if find_record(results, s.profile.name, s.key) is None]


#: The parameters every section notebook has (its ``parameters`` cell), with their defaults;
#: a section's plan adds its own (e.g. ``gains`` for 05_confounds), defaults in its signature.
COMMON_PARAMETERS = {"profile": DEFAULT_PROFILE, "seeds": PAPER_SEEDS, "variants": CENTRAL_VARIANTS,
                     "results_dir": None, "train_missing": True, "device": "auto"}


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
_MINIMUM = {"ladder_seeds": 1, "repeats": 1}


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
                    "residual_lib.sections._check_parameter")


def check_parameters(section: str, params: dict) -> dict:
    """``params`` with each of ``section``'s parameters (:func:`defaults`) in its normal form:
    the profile and the variants known names, seeds a list of integers from 0 to 2^63 - 1,
    gains a list of positive floats, switches booleans, ``results_dir`` a string or None;
    lists and switches in their common spellings (see :func:`_items`; ``"true"``,
    ``"false"``). Other names pass through unchanged. A value of the wrong kind raises
    :class:`ParameterError`."""
    known = defaults(section)
    return {n: _check_parameter(n, v, known[n]) if n in known else v for n, v in params.items()}


def notebook_records(section: str, namespace: dict, **options) -> pd.DataFrame:
    """:func:`ensure` for a notebook, in one line. The section's parameters are read from the
    notebook's ``namespace`` (``globals()``, where papermill injects them); a parameter the
    notebook sets to ``None`` (or leaves out) takes its :func:`defaults` value. Each is checked
    and normalised (:func:`check_parameters`: ``seeds="1337 42"`` is ``[1337, 42]``) and
    written back into ``namespace``, so that the page shows what it asked for.
    ``options``: e.g. ``skip_missing``."""
    params = {n: namespace[n] if namespace.get(n) is not None else d for n, d in defaults(section).items()}
    params = check_parameters(section, params)
    namespace.update(params)
    return ensure(section, **params, **options)


def ensure(
    section: str,
    profile: str = DEFAULT_PROFILE,
    seeds=PAPER_SEEDS,
    variants=CENTRAL_VARIANTS,
    results_dir: str | os.PathLike | None = None,
    train_missing: bool = True,
    device: str = "auto",
    skip_missing: bool = False,
    **params,
) -> pd.DataFrame:
    """The records ``section`` needs, as :func:`residual_lib.records.load_records` rows,
    training the missing ones when ``train_missing`` (one after another, in this process).
    With ``train_missing=False`` a missing record is an error that names the command
    that makes it, unless ``skip_missing``: then only the existing records are returned
    (for a study that may be shown in part, like the scale ladder), and the runs without a
    record are listed in the frame's ``attrs["missing"]``."""
    results = Path(results_dir) if results_dir else default_results_dir()
    specs = plan(section, profile, seeds, variants, **params)
    if train_missing:
        paths, absent = [path for path, _ in obtain(specs, results, device=device)], []
    else:
        found = {spec: find_record(results, spec.profile.name, spec.key) for spec in specs}
        absent = [spec for spec, path in found.items() if path is None]
        needed = required(section, absent, profile, partial_ok=False)
        if needed and not skip_missing:
            raise FileNotFoundError(
                f"{len(needed)} run record(s) missing under {results} (first: {needed[0].label()}): "
                f"run `python -m residual_lib sweep notebooks/{section_name(section)}.py --profile {profile}`"
            )
        paths = [path for path in found.values() if path is not None]
    frame = load_records(paths)
    # a diverged run has no losses to average: the pages list it (attrs["diverged"]) instead
    out = usable(frame).reset_index(drop=True)
    out.attrs["diverged"] = [f"{r.profile} {r.variant} seed {r.seed} (key {r.key})"
                             for r in diverged(frame).itertuples()]
    out.attrs["missing"] = absent  # the runs left out (skip_missing)
    out.attrs["profile"], out.attrs["results_dir"] = profile, str(results)  # what the page shows
    return out
