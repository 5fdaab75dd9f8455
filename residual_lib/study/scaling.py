"""The scale ladder: the two gaps (what removing each residual costs) per rung and seed, and
their trend per decade of parameters."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..core.text import listing, p_text, signed
from ..run.model import GPTConfig, ResidualGPT
from ..run.profiles import get_profile

LADDER_GAPS = {
    "attn_only - full": ("attn_only", "full"),
    "ffn_only - floor": ("ffn_only", None),
}


def ladder_rungs(records: pd.DataFrame, rungs) -> pd.DataFrame:
    """One row per rung of the ladder: its shape, parameter count (the full model's), training
    tokens per run and per parameter, the runs recorded and their median wall time."""
    rows = []
    for rung in rungs:
        p = get_profile(rung)
        n_params = ResidualGPT(GPTConfig.for_profile(p, "full")).num_params()
        tokens = p.training_tokens
        mine = records[records.profile == rung] if len(records) else records
        rows.append({"profile": rung, "layers": p.n_layer, "width": p.n_embd, "parameters": n_params,
                     "tokens": tokens, "tokens per parameter": tokens / n_params, "runs recorded": len(mine),
                     "minutes per run": float(mine.wall_seconds.median()) / 60 if len(mine) else math.nan})
    return pd.DataFrame(rows)


def ladder_gap_points(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """The scale ladder's two gaps per rung and seed: ``attn_only - full`` (paired by seed:
    what removing the FFN residual costs) and ``ffn_only - floor`` (how far removing the
    attention residual leaves the model above the unigram floor of its evaluation batches,
    ``eval_floor``; negative = below it).
    A gap needs both of its runs for a seed to count it."""
    rows = []
    for profile, runs in frame.groupby("profile"):
        wide = runs.pivot_table(index="seed", columns="variant", values=value)
        floor = float(runs["eval_floor"].iloc[0])  # the floor on the tokens the losses are measured on
        for name, (a, b) in LADDER_GAPS.items():
            if a not in wide or (b is not None and b not in wide):
                continue
            gap = (wide[a] - (floor if b is None else wide[b])).dropna()
            rows += [{"profile": profile, "n_params": int(runs["n_params"].iloc[0]), "gap": name,
                      "seed": int(seed), "value": float(v)} for seed, v in gap.items()]
    return pd.DataFrame(rows, columns=["profile", "n_params", "gap", "seed", "value"])


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """The t interval of the mean of ``values`` (ddof=1); NaN bounds for fewer than two values,
    which have no spread to measure."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return math.nan, math.nan
    if np.ptp(values) == 0:  # no spread: the interval is the point (scipy would give NaN)
        return float(values[0]), float(values[0])
    ci = stats.ttest_1samp(values, 0.0).confidence_interval(confidence)  # as analysis.welch_gap's, by scipy
    return float(ci.low), float(ci.high)


def ladder_gaps(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """:func:`ladder_gap_points` per (profile, gap): parameter count, mean, std (ddof=1), the
    95% t interval of the mean (``t_low``, ``t_high``; NaN for a single seed) and number of
    seeds."""
    points = ladder_gap_points(frame, value)
    rows = []
    for (profile, n_params, gap), part in points.groupby(["profile", "n_params", "gap"]):
        v = part["value"]
        low, high = mean_interval(v)
        rows.append({"profile": profile, "n_params": n_params, "gap": gap, "mean": float(v.mean()),
                     "std": float(v.std(ddof=1)) if len(v) > 1 else math.nan, "t_low": low, "t_high": high,
                     "seeds": len(v)})
    table = pd.DataFrame(rows, columns=["profile", "n_params", "gap", "mean", "std", "t_low", "t_high", "seeds"])
    return table.sort_values(["gap", "n_params"], ignore_index=True)


def size_text(n: float) -> str:
    """A parameter count as the prose writes it: two significant digits (0.12M, 3.2M), three
    from 10M on (10.7M, not 11M)."""
    return f"{n / 1e6:.{3 if n >= 1e7 else 2}g}M"


def ladder_text(gaps: pd.DataFrame, trend: pd.DataFrame, gap: str, floor_tol: float,
                points: pd.DataFrame | None = None) -> str:
    """Two or three sentences on a ladder gap (:func:`ladder_gaps`, :func:`ladder_trend`): its
    size at the smallest and largest rung (for ``ffn_only - floor``: the rungs at the floor and
    those off it), its trend with size and, given the ``points`` (:func:`ladder_gap_points`)
    and a top rung of one seed, the trend without that rung, which a single seed can swing."""
    rows = gaps[gaps["gap"] == gap].sort_values("n_params") if len(gaps) else gaps
    if not len(rows):
        return "No rung has the runs for this comparison yet."
    first, last = rows.iloc[0], rows.iloc[-1]
    seeds = f"{int(rows.seeds.min())}" + (f" to {int(rows.seeds.max())}" if rows.seeds.max() != rows.seeds.min() else "")
    if gap == "attn_only - full":
        text = (f"Removing the feed-forward residual (AttnOnly minus Full, paired by seed) costs {first['mean']:.3f} "
                f"nats at {size_text(first.n_params)} parameters {_spread(first)} and {last['mean']:.3f} at "
                f"{size_text(last.n_params)} {_spread(last)}.")
        subject = "The cost"
    else:
        off, at = rows[rows["mean"].abs() > floor_tol], rows[rows["mean"].abs() <= floor_tol]
        if off.empty:
            text = ("Without the attention residual the model ends at the floor at every rung "
                    f"(within {rows['mean'].abs().max():.3f} nats of it, {seeds} seeds a rung).")
        else:
            where = [f"{abs(r.mean):.3f} nats {'below' if r.mean < 0 else 'above'} it at {size_text(r.n_params)} "
                     f"({'one seed' if r.seeds == 1 else f'mean of {r.seeds} seeds'})" for r in off.itertuples()]
            text = ("Without the attention residual the model ends "
                    + (f"at the floor at {listing(size_text(n) for n in at.n_params)}, and " if len(at) else "")
                    + listing(where) + ".")
        subject = "Its distance from the floor"
    sentence = trend_sentence(trend, gap, subject)
    if not sentence:
        return text + " Too few rungs have records to fit a trend."
    if points is not None and last.seeds == 1 and len(rows) >= 4:
        rest = ladder_trend(points[(points.gap == gap) & (points.n_params < last.n_params)])
        fit = _fit(rest, gap)
        if fit is not None:
            sentence += (f" Without the {size_text(last.n_params)} rung, which has one seed, the slope is "
                         f"{_slope(fit)}.")
    return f"{text} {sentence}"


def _fit(trend: pd.DataFrame, gap: str):
    fit = trend.set_index("gap").loc[gap] if gap in set(trend.gap) else None
    return None if fit is None or pd.isna(fit.slope_per_decade) else fit


def _slope(fit) -> str:
    return (f"{signed(fit.slope_per_decade)} nats per tenfold increase in parameters (95% interval "
            f"{signed(fit.slope_low)} to {signed(fit.slope_high)}, p = {p_text(float(fit.p))})")


def trend_sentence(trend: pd.DataFrame, gap: str, subject: str) -> str:
    """A gap's trend as a sentence about ``subject`` (e.g. "The cost of ... shows no trend
    distinguishable from zero across 5 rungs: ..."); empty where there is no fit."""
    fit = _fit(trend, gap)
    if fit is None:
        return ""
    verb = {"no trend distinguishable from zero": "shows no trend distinguishable from zero",
            "grows with size": "grows with size", "shrinks with size": "shrinks with size"}[fit.trend]
    return f"{subject} {verb} across {int(fit.rungs)} rungs: {_slope(fit)}."


def _spread(row) -> str:
    """A rung's gap interval in brackets, or that its one seed has none."""
    if row.seeds < 2:
        return "(one seed, so no interval)"
    return f"(95% interval {signed(row.t_low)} to {signed(row.t_high)}, {int(row.seeds)} seeds)"


def top_rung_text(records: pd.DataFrame, rungs, floor_tol: float) -> str:
    """What the ladder's top rung with records shows, in words: whether AttnOnly still
    recovers there (ends more than ``floor_tol`` below the floor of its evaluation batches)
    and whether FFNOnly still collapses (ends within ``floor_tol`` of it), with the losses
    and the seeds they rest on; variants without records at that rung are named as such.
    ``records``: the ladder's runs (its seeds), ``rungs``: its profiles, smallest first."""
    recorded = [r for r in rungs if len(records) and (records.profile == r).any()]
    if not recorded:
        return "No rung of the ladder has records yet."
    rung = recorded[-1]
    mine = records[records.profile == rung]
    floor = float(mine.eval_floor.iloc[0])
    p = get_profile(rung)
    shape = f"{p.n_layer} layers, width {p.n_embd}"
    means = mine.groupby("variant")["final_val_loss"].agg(["mean", "count"])

    def loss(variant):
        row = means.loc[variant]
        seeds = "one seed" if row["count"] == 1 else f"mean of {int(row['count'])} seeds"
        return f"{row['mean']:.3f} ({seeds})"

    said = []
    if "attn_only" in means.index:
        recovers = means.loc["attn_only", "mean"] < floor - floor_tol
        said.append(f"AttnOnly {'still recovers' if recovers else 'does not recover'}: it ends at "
                    f"{loss('attn_only')} against a floor of {floor:.3f}"
                    + (f", {means.loc['attn_only', 'mean'] - means.loc['full', 'mean']:.3f} above Full"
                       if "full" in means.index else ""))
    if "ffn_only" in means.index:
        collapses = abs(means.loc["ffn_only", "mean"] - floor) <= floor_tol
        said.append(f"FFNOnly {'still collapses' if collapses else 'leaves the floor'}: it ends at {loss('ffn_only')}"
                    + (f", NoResidual at {loss('no_residual')}" if "no_residual" in means.index else ""))
    names = {"attn_only": "AttnOnly", "ffn_only": "FFNOnly", "no_residual": "NoResidual"}
    absent = [name for v, name in names.items() if v not in means.index]
    text = f"At {size_text(mine.n_params.iloc[0])} parameters ({shape}, `{rung}`), " + "; ".join(said)
    if absent:
        text += ("; " if said else "") + f"{listing(absent)} {'has' if len(absent) == 1 else 'have'} no records there yet"
    return text + "."


def ladder_trend(points: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per gap, the least-squares slope of the per-seed gap against log10(parameters): nats
    per decade of model size, with its t interval and p-value (scipy ``linregress``), and the
    ``trend`` it shows: ``grows with size`` or ``shrinks with size`` when the interval
    excludes 0, ``no trend distinguishable from zero`` when it does not. Needs two rungs and
    three points; otherwise the slope is NaN and the trend ``too few rungs or seeds``."""
    rows = []
    for gap, part in points.groupby("gap", sort=False):
        x, y = np.log10(part["n_params"].to_numpy(float)), part["value"].to_numpy(float)
        row = {"gap": gap, "rungs": int(part["profile"].nunique()), "points": len(part),
               "slope_per_decade": math.nan, "slope_low": math.nan, "slope_high": math.nan, "p": math.nan,
               "trend": "too few rungs or seeds"}
        if row["rungs"] >= 2 and len(part) >= 3:
            fit = stats.linregress(x, y)
            half = stats.t.ppf(0.5 + confidence / 2, len(part) - 2) * fit.stderr
            row.update(slope_per_decade=float(fit.slope), slope_low=float(fit.slope - half),
                       slope_high=float(fit.slope + half), p=float(fit.pvalue))
            row["trend"] = ("no trend distinguishable from zero" if row["slope_low"] <= 0 <= row["slope_high"]
                            else "grows with size" if fit.slope > 0 else "shrinks with size")
        rows.append(row)
    return pd.DataFrame(rows, columns=["gap", "rungs", "points", "slope_per_decade", "slope_low", "slope_high", "p",
                                       "trend"])
