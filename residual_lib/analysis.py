"""Numbers the sections report, computed from run records (never typed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .model import VARIANTS
from .records import load_curves, read_record

ORDER = [v for v in VARIANTS]


def variant_order(frame: pd.DataFrame, column: str = "variant") -> list[str]:
    present = set(frame[column])
    return [v for v in ORDER if v in present]


def variant_summary(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """Mean, std (ddof=1), min, max and number of seeds of ``value`` per variant."""
    table = frame.groupby("variant")[value].agg(["mean", "std", "min", "max", "count"])
    return table.reindex(variant_order(frame)).rename(columns={"count": "seeds"})


def degradation_ratios(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.Series:
    """Each variant's mean ``value`` over that of ``full`` (the paper's "N x degradation")."""
    means = frame.groupby("variant")[value].mean()
    return (means / means["full"]).reindex(variant_order(frame))


def curves(frame: pd.DataFrame, split: str = "train") -> pd.DataFrame:
    """The curves of the records in ``frame`` (one row per record and logged step)."""
    parts = [load_curves(path, split) for path in frame["path"]]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def layer0_after(frame: pd.DataFrame, fraction: float = 0.06) -> pd.DataFrame:
    """Mean and max layer-0 gradient norm per run over the steps after ``fraction`` of
    training. The paper's step 300 of 5,000 is a fraction of 0.06; the same fraction is
    used at every profile so that short runs are compared at the same stage."""
    rows = []
    for path in frame["path"]:
        rec = read_record(path)
        train = pd.DataFrame({k: rec["curves"]["train"][k] for k in ("step", "grad_norm_layer0")})
        start = int(round(fraction * rec["steps"]))
        late = train[train.step >= start]["grad_norm_layer0"]
        rows.append({"variant": rec["variant"], "seed": rec["seed"], "from_step": start,
                     "mean": late.mean(), "max": late.max(), "min": late.min()})
    return pd.DataFrame(rows)


def gain_equivalence(curve: pd.DataFrame, tolerance: float = 0.05, value: str = "loss") -> tuple[pd.DataFrame, int | None]:
    """Spread (max - min across gains) of ``value`` at every logged step, and the first step
    from which the spread stays below ``tolerance`` for the rest of training (None if never)."""
    wide = curve.pivot_table(index="step", columns="gain", values=value)
    spread = (wide.max(axis=1) - wide.min(axis=1)).rename("spread").reset_index()
    above = spread[spread.spread >= tolerance]
    if above.empty:
        return spread, int(spread.step.min())
    later = spread[spread.step > above.step.max()]
    return spread, (int(later.step.min()) if not later.empty else None)


def val_estimates(frame: pd.DataFrame) -> pd.DataFrame:
    """Long frame of the final model's loss on the fixed batches and on each random draw."""
    rows = []
    for path in frame["path"]:
        rec = read_record(path)
        est = rec["diagnostics"]["val_estimates"]
        base = {"variant": rec["variant"], "seed": rec["seed"], "fixed": est["fixed"]}
        rows += [{**base, "draw": i, "random": r} for i, r in enumerate(est["random"])]
    out = pd.DataFrame(rows)
    if not out.empty:
        out["deviation"] = out["random"] - out["fixed"]
    return out


def misorder_probability(estimates: pd.DataFrame, a: str, b: str) -> float:
    """Probability that one random-batch evaluation of each of two runs ranks them the
    other way round from their fixed-batch losses (over all pairs of draws, per seed)."""
    hits, total = 0, 0
    for seed, group in estimates.groupby("seed"):
        ra, rb = group[group.variant == a], group[group.variant == b]
        if ra.empty or rb.empty:
            continue
        truth = np.sign(ra.fixed.iloc[0] - rb.fixed.iloc[0])
        diff = np.sign(ra["random"].to_numpy()[:, None] - rb["random"].to_numpy()[None, :])
        hits += int((diff != truth).sum())
        total += diff.size
    return hits / total if total else math.nan


def welch_gap(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> dict:
    """Difference of means ``mean(a) - mean(b)`` with Welch's t-test and its confidence
    interval (scipy), plus a percentile bootstrap interval when both samples have >= 2 values."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    out = {"gap": a.mean() - b.mean(), "n_a": len(a), "n_b": len(b)}
    if len(a) >= 2 and len(b) >= 2:
        test = stats.ttest_ind(a, b, equal_var=False)
        ci = test.confidence_interval(confidence)
        out.update(t=float(test.statistic), p=float(test.pvalue), ci_low=float(ci.low), ci_high=float(ci.high))
        boot = stats.bootstrap((a, b), lambda x, y: np.mean(x) - np.mean(y), confidence_level=confidence,
                               n_resamples=2000, method="percentile", random_state=0)
        out.update(boot_low=float(boot.confidence_interval.low), boot_high=float(boot.confidence_interval.high))
    return out


def alpha_matrix(path) -> np.ndarray:
    """Attention diagonal mass, layers x heads, of one record."""
    return np.array(read_record(path)["diagnostics"]["alpha_tt"])


def gap_table(frame: pd.DataFrame, pairs, value: str = "final_val_loss") -> pd.DataFrame:
    """:func:`welch_gap` of ``value`` for each ``(a, b)`` variant pair present in ``frame``,
    one row per comparison ``a − b``."""
    rows = []
    for a, b in pairs:
        xa = frame.loc[frame.variant == a, value].to_numpy()
        xb = frame.loc[frame.variant == b, value].to_numpy()
        if len(xa) and len(xb):
            rows.append({"comparison": f"{a} − {b}", **welch_gap(xa, xb)})
    return pd.DataFrame(rows).set_index("comparison") if rows else pd.DataFrame()


LADDER_GAPS = {
    "attn_only - full": ("attn_only", "full"),
    "ffn_only - floor": ("ffn_only", None),
}


def ladder_gap_points(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """The scale ladder's two gaps per rung and seed: ``attn_only - full`` (paired by seed:
    what removing the FFN residual costs) and ``ffn_only - floor`` (how far removing the
    attention residual leaves the model above the unigram floor; negative = below it).
    A gap needs both of its runs for a seed to count it."""
    rows = []
    for profile, runs in frame.groupby("profile"):
        wide = runs.pivot_table(index="seed", columns="variant", values=value)
        floor = float(runs["unigram_floor"].iloc[0])
        for name, (a, b) in LADDER_GAPS.items():
            if a not in wide or (b is not None and b not in wide):
                continue
            gap = (wide[a] - (floor if b is None else wide[b])).dropna()
            rows += [{"profile": profile, "n_params": int(runs["n_params"].iloc[0]), "gap": name,
                      "seed": int(seed), "value": float(v)} for seed, v in gap.items()]
    return pd.DataFrame(rows, columns=["profile", "n_params", "gap", "seed", "value"])


def ladder_gaps(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """:func:`ladder_gap_points` per (profile, gap): parameter count, mean, std (ddof=1) and
    number of seeds."""
    points = ladder_gap_points(frame, value)
    table = (points.groupby(["profile", "n_params", "gap"])["value"]
             .agg(mean="mean", std=lambda v: v.std(ddof=1) if len(v) > 1 else float("nan"), seeds="count")
             .reset_index())
    table = table[["profile", "n_params", "gap", "mean", "std", "seeds"]]
    return table.sort_values(["gap", "n_params"], ignore_index=True)


def ladder_trend(points: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per gap, the least-squares slope of the per-seed gap against log10(parameters): nats
    per decade of model size, with its t interval and p-value (scipy ``linregress``). Needs
    two rungs and three points; otherwise the slope is NaN."""
    from scipy import stats

    rows = []
    for gap, part in points.groupby("gap", sort=False):
        x, y = np.log10(part["n_params"].to_numpy(float)), part["value"].to_numpy(float)
        row = {"gap": gap, "rungs": int(part["profile"].nunique()), "points": len(part),
               "slope_per_decade": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p": math.nan}
        if row["rungs"] >= 2 and len(part) >= 3:
            fit = stats.linregress(x, y)
            half = stats.t.ppf(0.5 + confidence / 2, len(part) - 2) * fit.stderr
            row.update(slope_per_decade=float(fit.slope), ci_low=float(fit.slope - half),
                       ci_high=float(fit.slope + half), p=float(fit.pvalue))
        rows.append(row)
    return pd.DataFrame(rows, columns=["gap", "rungs", "points", "slope_per_decade", "ci_low", "ci_high", "p"])
