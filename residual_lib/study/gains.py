"""The gain confound's timing: when the validation curves of one seed's runs at several runtime
gains come together, read on the runs' own evaluations and, for their first steps, on the
timing profile's denser ones (:data:`residual_lib.run.profiles.GAIN_TIMING`)."""

from __future__ import annotations

import math

import pandas as pd

from .analysis import curves, gain_equivalence


def early_agreement(whole: pd.DataFrame, early: pd.DataFrame) -> pd.DataFrame:
    """How closely the timing runs (``early``) retrace the gain runs they stand in for
    (``whole``): per seed and gain with both, the largest absolute difference of their
    validation losses over the steps both evaluate (``max_diff``, nats; 0 when the two are bit
    for bit the same, as on the machine and kernels that made both)."""
    rows = []
    for run in early.itertuples():
        match = whole[(whole.seed == run.seed) & (whole.gain == run.gain)]
        if match.empty:
            continue
        a = curves(match.head(1), "val").set_index("step")["loss"]
        b = curves(early[early.key == run.key], "val").set_index("step")["loss"]
        shared = a.index.intersection(b.index)
        if len(shared):
            rows.append({"seed": int(run.seed), "gain": float(run.gain), "steps": len(shared),
                         "max_diff": float((a[shared] - b[shared]).abs().max())})
    return pd.DataFrame(rows, columns=["seed", "gain", "steps", "max_diff"])


def gain_val_curves(whole: pd.DataFrame, early: pd.DataFrame, agree: float = math.inf) -> pd.DataFrame:
    """The gains' validation curves on the fixed batches, seed by seed: ``whole``, the gain runs of a
    profile (a seed at several gains); ``early``, the runs of its timing profile, which train the
    same first steps and evaluate them more often. A seed's curves are its early runs' evaluations
    up to their last step, then the whole runs', when it has an early run for each of its gains and
    each retraces its whole run to within ``agree`` nats at the steps both evaluate
    (:func:`early_agreement`); else the whole runs' alone. ``dense`` says which. Columns seed,
    gain, step, loss, dense."""
    parts = []
    agreement = early_agreement(whole, early) if len(early) else pd.DataFrame(columns=["seed", "max_diff"])
    for seed, runs in whole.groupby("seed"):
        if runs.gain.nunique() < 2:
            continue
        val = curves(runs, "val")[["gain", "step", "loss"]]
        first = early[(early.seed == seed) & early.gain.isin(set(runs.gain))] if len(early) else early
        close = agreement[agreement.seed == seed]
        dense = (len(first) > 0 and first.gain.nunique() == runs.gain.nunique()
                 and len(close) == runs.gain.nunique() and bool((close.max_diff <= agree).all()))
        if dense:
            head = curves(first, "val")[["gain", "step", "loss"]]
            val = pd.concat([head, val[val.step > head.step.max()]], ignore_index=True)
        parts.append(val.assign(seed=int(seed), dense=dense))
    columns = ["seed", "gain", "step", "loss", "dense"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def cutoff(step: int, every: int | None) -> int:
    """``step`` rounded up to the next evaluation of a run evaluated every ``every`` steps: the
    first evaluation that can show what happened by ``step``."""
    return step if not every or step % every == 0 else (step // every + 1) * every


def on_time(merged, step: int, every: int | None) -> bool:
    """Whether curves that come together at ``merged`` (None or NaN: never) did so by ``step``,
    read at the first evaluation at or after it (:func:`cutoff`)."""
    return merged is not None and not pd.isna(merged) and merged <= cutoff(step, every)


def gain_timing(whole: pd.DataFrame, early: pd.DataFrame, tolerance: float, agree: float = math.inf,
                gains=None) -> pd.DataFrame:
    """When the gains' validation curves (:func:`gain_val_curves`) come together, per seed that
    was run at every gain of ``gains`` (default: the most gains any seed has): the gains, the step
    from which the spread across gains stays below ``tolerance`` (``merged``, None if never), the
    spacing of the first evaluations (``every``), whether they are the timing runs' (``dense``),
    the final losses' spread (``final_spread``) and the run's ``steps``. Seeds with some of the
    gains only are listed in ``attrs["incomplete"]``, not judged."""
    counts = whole.groupby("seed")["gain"].apply(lambda g: frozenset(g))
    wanted = frozenset(float(g) for g in gains) if gains is not None else (max(counts, key=len) if len(counts) else frozenset())
    complete = [s for s, g in counts.items() if len(wanted) >= 2 and g >= wanted]
    incomplete = [int(s) for s, g in counts.items() if s not in complete and len(g) >= 2]
    mine = whole[whole.seed.isin(complete) & whole.gain.isin(wanted)]
    rows = []
    val = gain_val_curves(mine, early, agree)
    for seed, curve in val.groupby("seed"):
        runs = mine[mine.seed == seed]
        _, merged = gain_equivalence(curve, tolerance)
        steps = sorted(set(curve.step))
        final = runs.final_val_loss
        rows.append({"seed": int(seed), "gains": ", ".join(f"{g:g}" for g in sorted(runs.gain)), "merged": merged,
                     "every": steps[1] - steps[0] if len(steps) > 1 else None, "dense": bool(curve.dense.iloc[0]),
                     "final_spread": float(final.max() - final.min()), "steps": int(runs.steps.iloc[0])})
    out = pd.DataFrame(rows, columns=["seed", "gains", "merged", "every", "dense", "final_spread", "steps"])
    out.attrs["incomplete"] = incomplete
    return out


def gain_spread(val: pd.DataFrame) -> pd.DataFrame:
    """The spread (max - min across gains) of :func:`gain_val_curves` at each step, per seed."""
    parts = [gain_equivalence(curve, math.inf)[0].assign(seed=seed) for seed, curve in val.groupby("seed")]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["step", "spread", "seed"])
