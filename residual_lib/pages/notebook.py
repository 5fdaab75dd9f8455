"""A section notebook's one call: :func:`notebook_records` reads its parameters, checks them,
plans its runs and returns their records, training the missing ones when the notebook may
(the cached ones are returned as they are)."""

from __future__ import annotations

import os

import pandas as pd

from ..core.paths import results_folder
from ..run.architecture import CENTRAL_VARIANTS
from ..run.runs import PAPER_SEEDS
from ..storage.records import find_record
from ..study.frames import diverged, load_records, usable
from ..study.sections import DEFAULT_PROFILE, plan, required, section_name
from ..training.store import obtain
from .parameters import check_parameters, defaults
from .tables import plural


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
    """The records ``section`` needs, as :func:`residual_lib.study.frames.load_records` rows,
    training the missing ones when ``train_missing`` (one after another, in this process).
    With ``train_missing=False`` a missing record is an error that names the command
    that makes it, unless ``skip_missing``: then only the existing records are returned
    (for a study that may be shown in part, like the scale ladder), and the runs without a
    record are listed in the frame's ``attrs["missing"]``."""
    results = results_folder(results_dir)
    specs = plan(section, profile, seeds, variants, **params)
    if train_missing:
        paths, absent = [path for path, _ in obtain(specs, results, device=device)], []
    else:
        found = {spec: find_record(results, spec.profile.name, spec.key) for spec in specs}
        absent = [spec for spec, path in found.items() if path is None]
        needed = required(section, absent, profile, partial_ok=False)
        if needed and not skip_missing:
            raise FileNotFoundError(
                f"{len(needed)} run {plural('record', len(needed))} missing under {results} (first: {needed[0].label()}): "
                f"run `python -m residual_lib sweep notebooks/{section_name(section)}.py --profile {profile}`"
            )
        paths = [path for path in found.values() if path is not None]
    frame = load_records(paths)
    # a diverged run has no losses to average: the pages list it (attrs["diverged"]) instead
    out = usable(frame).reset_index(drop=True)
    out.attrs["diverged"] = [f"{r.profile} {r.variant} seed {r.seed} (key {r.key})"
                             for r in diverged(frame).itertuples()]
    out.attrs["diverged_runs"] = [(r.variant, int(r.seed)) for r in diverged(frame).itertuples()]  # for sentences
    out.attrs["missing"] = absent  # the runs left out (skip_missing)
    out.attrs["profile"], out.attrs["results_dir"] = profile, str(results)  # what the page shows
    return out
