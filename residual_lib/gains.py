"""The gain confound's timing: when the validation curves of one seed's runs at several runtime
gains come together, read on the runs' own evaluations and, for their first steps, on the
timing profile's denser ones (:data:`residual_lib.profiles.GAIN_TIMING`)."""

from __future__ import annotations

import math

import pandas as pd

from .analysis import curves, gain_equivalence


def gain_val_curves(whole: pd.DataFrame, early: pd.DataFrame) -> pd.DataFrame:
    """The gains' validation curves on the fixed batches, seed by seed: ``whole``, the gain runs of a
    profile (a seed at several gains); ``early``, the runs of its timing profile
    (:data:`residual_lib.profiles.GAIN_TIMING`), which train the same first steps and evaluate them
    more often. A seed's curves are its early runs' evaluations up to their last step, then the
    whole runs'; where an early run is missing for one of the seed's gains, the whole runs' alone
    (``dense`` says which). Columns seed, gain, step, loss, dense."""
    parts = []
    for seed, runs in whole.groupby("seed"):
        if runs.gain.nunique() < 2:
            continue
        val = curves(runs, "val")[["gain", "step", "loss"]]
        first = early[(early.seed == seed) & early.gain.isin(set(runs.gain))] if len(early) else early
        dense = len(first) > 0 and first.gain.nunique() == runs.gain.nunique()
        if dense:
            head = curves(first, "val")[["gain", "step", "loss"]]
            val = pd.concat([head, val[val.step > head.step.max()]], ignore_index=True)
        parts.append(val.assign(seed=int(seed), dense=dense))
    columns = ["seed", "gain", "step", "loss", "dense"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def gain_timing(whole: pd.DataFrame, early: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """When the gains' validation curves (:func:`gain_val_curves`) come together, per seed: the
    ``gains`` it was run at, the step from which the spread across gains stays below ``tolerance``
    (``merged``, None if never), the spacing of the first evaluations (``every``), the final losses'
    spread (``final_spread``) and the run's ``steps``. One row per seed with two gains or more."""
    rows = []
    val = gain_val_curves(whole, early)
    for seed, curve in val.groupby("seed"):
        runs = whole[whole.seed == seed]
        _, merged = gain_equivalence(curve, tolerance)
        steps = sorted(set(curve.step))
        final = runs.final_val_loss
        rows.append({"seed": int(seed), "gains": ", ".join(f"{g:g}" for g in sorted(runs.gain)), "merged": merged,
                     "every": steps[1] - steps[0] if len(steps) > 1 else None,
                     "final_spread": float(final.max() - final.min()), "steps": int(runs.steps.iloc[0])})
    return pd.DataFrame(rows, columns=["seed", "gains", "merged", "every", "final_spread", "steps"])


def gain_spread(val: pd.DataFrame) -> pd.DataFrame:
    """The spread (max - min across gains) of :func:`gain_val_curves` at each step, per seed."""
    parts = [gain_equivalence(curve, math.inf)[0].assign(seed=seed) for seed, curve in val.groupby("seed")]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["step", "spread", "seed"])
