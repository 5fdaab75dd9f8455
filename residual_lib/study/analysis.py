"""Numbers the sections report, computed from run records (never typed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..run.architecture import LAYER0_PARTS, VARIANTS
from ..storage.records import read_record
from .frames import load_curves
from .paper import claims
from .sections import controlled

ORDER = [v for v in VARIANTS]


def variant_order(frame: pd.DataFrame, column: str = "variant") -> list[str]:
    present = set(frame[column])
    return [v for v in ORDER if v in present]


#: What sets a run apart besides its variant and seed: runs that differ in any of these are
#: not seeds of one condition, and a table never averages them together.
CONDITIONS = ("profile", "eval_mode", "gain", "deterministic", "replicate", "init_noise", "steps")


def condition_labels(frame: pd.DataFrame) -> pd.Series:
    """Each run's variant, followed, where ``frame`` holds runs of more than one condition
    (:data:`CONDITIONS`), by the settings that tell its condition apart: ``ffn_only (gain 2)``."""
    varying = [c for c in CONDITIONS if c in frame and frame[c].nunique(dropna=False) > 1]
    if not varying or frame.empty:
        return frame["variant"].astype(str)

    def label(row) -> str:
        parts = [f"{c.replace('_', ' ')} {row[c]:g}" if isinstance(row[c], float) else f"{c.replace('_', ' ')} {row[c]}"
                 for c in varying]
        return f"{row['variant']} ({', '.join(parts)})"

    return frame.apply(label, axis=1)


def variant_summary(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """Mean, std (ddof=1), min, max and number of seeds of ``value`` per variant; runs of other
    conditions (:func:`condition_labels`) get rows of their own, after their variant's."""
    labels = condition_labels(frame)
    table = frame.groupby(labels)[value].agg(["mean", "std", "min", "max", "count"])
    order = [v for variant in variant_order(frame) for v in sorted(set(labels[frame.variant == variant]))]
    table = table.reindex(order).rename(columns={"count": "seeds"})
    table.index.name = "variant"
    return table


def degradation_ratios(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.Series:
    """Each variant's mean ``value`` over that of ``full`` (the paper's "N x degradation")."""
    means = frame.groupby("variant")[value].mean()
    return (means / means["full"]).reindex(variant_order(frame))


def curves(frame: pd.DataFrame, split: str = "train") -> pd.DataFrame:
    """The curves of the records in ``frame`` (one row per record and logged step)."""
    parts = [load_curves(path, split) for path in frame["path"]]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


#: Where the paper's "from step 300 onward" starts, as a fraction of training: the paper's
#: 10M runs take 5,000 steps (nanoGPT's shakespeare_char schedule), so step 300 is 6% of a
#: run; the same fraction is used at every profile so that runs of any length are compared
#: at the same stage (step 120 of the cpu profile's 2,000).
LAYER0_FROM = 0.06
#: The length of the paper's 10M runs as this project reads it (nanoGPT's shakespeare_char
#: schedule; the summary does not state it): step counts the paper quotes are scaled by it.
PAPER_10M_STEPS = 5000


def scaled_step(paper_step: float, steps: int) -> int:
    """A step the paper quotes for its 10M runs (:data:`PAPER_10M_STEPS` long), at the same share
    of a run of ``steps``."""
    return int(round(paper_step / PAPER_10M_STEPS * steps))


#: A block-0 gradient norm below this rounds to the paper's "0.000".
LAYER0_ZERO = 5e-4


def layer0_after(frame: pd.DataFrame, fraction: float = LAYER0_FROM, zero: float = LAYER0_ZERO) -> pd.DataFrame:
    """Block 0's gradient norm per run over the logged steps from ``fraction`` of training
    on (see :data:`LAYER0_FROM`): median, mean, max, min and the fraction of those steps
    below ``zero`` (``starved``); with the median of each sub-module's norm
    (``median_attn``, ``median_mlp``, ``median_ln``) for records that log them."""
    rows = []
    for path in frame["path"]:
        rec = read_record(path)
        curve = rec["curves"]["train"]
        train = pd.DataFrame({k: curve[k] for k in ("step", "grad_norm_layer0")})
        start = int(round(fraction * rec["steps"]))
        keep = (train.step >= start).to_numpy()
        late = train.loc[keep, "grad_norm_layer0"]
        row = {"variant": rec["variant"], "seed": rec["seed"], "from_step": start, "median": late.median(),
               "mean": late.mean(), "max": late.max(), "min": late.min(), "starved": float((late < zero).mean())}
        for part in LAYER0_PARTS:
            values = curve.get(f"grad_norm_layer0_{part}")
            row[f"median_{part}"] = float(np.median(np.asarray(values)[keep])) if values else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


#: Definitions of "hidden-state norm growth" the paper's 14.03x / 5.37x could have used
#: (the summary states none). ``end``: the final model on the first fixed validation batch;
#: ``step 0``: the first logged training step. ``h_0`` is the embedding output, ``h_1`` block
#: 0's output, ``h_L`` the last block's.
GROWTH_DEFINITIONS = {
    "|h_L| / |h_1|, end": lambda end, start: end[-1] / end[1],
    "|h_L| / |h_0|, end": lambda end, start: end[-1] / end[0],
    "max_l |h_l| / |h_0|, end": lambda end, start: max(end[1:]) / end[0],
    "|h_L| end / |h_L| step 0": lambda end, start: end[-1] / start[-1],
}


def growth_definitions(frame: pd.DataFrame) -> pd.DataFrame:
    """Every definition of :data:`GROWTH_DEFINITIONS` plus the representation drift
    ``|h_L - h_1| / |h_1|`` (:func:`residual_lib.training.diagnostics.representation_drift`), one row
    per run and definition: columns ``variant``, ``seed``, ``definition``, ``value``."""
    rows = []
    for path in frame["path"]:
        rec = read_record(path)
        end = rec["diagnostics"]["hidden_norms"]
        start = rec["curves"]["train"]["hidden_norms"][0]
        base = {"variant": rec["variant"], "seed": rec["seed"]}
        rows += [{**base, "definition": name, "value": float(f(end, start))} for name, f in GROWTH_DEFINITIONS.items()]
        rows.append({**base, "definition": "drift |h_L - h_1| / |h_1|, end",
                     "value": float(rec["diagnostics"]["representation_drift"])})
    return pd.DataFrame(rows, columns=["variant", "seed", "definition", "value"])


DRIFT_DEFINITION = "drift |h_L - h_1| / |h_1|, end"


def growth_vs_paper(frame: pd.DataFrame, tolerance: float | None = None) -> pd.DataFrame:
    """Our hidden-norm growth and drift beside the paper's figures (claim ``hidden_norm_growth``
    of ``paper_claims.csv``): one row per variant of ``frame`` the paper gives a figure for
    and per definition of :func:`growth_definitions` that figure can be compared with, the
    drift definition with the paper's representation drift and every growth definition with
    its hidden-norm growth. Columns ``variant``, ``definition``, ``ours`` (mean over seeds),
    ``seeds``, ``paper`` and ``relative_difference`` ``(ours − paper) / paper``; with a
    ``tolerance``, ``agrees`` (the relative difference within it in size)."""
    rows = claims()
    rows = rows[rows.claim == "hidden_norm_growth"]
    figures = {(r.variant, r.quantity): float(r.value) for r in rows.itertuples()}
    values = growth_definitions(frame)
    means = values.groupby(["variant", "definition"], sort=False)["value"].agg(["mean", "count"])
    out = []
    for variant in variant_order(values):
        for definition in [DRIFT_DEFINITION, *GROWTH_DEFINITIONS]:
            quantity = "representation_drift" if definition == DRIFT_DEFINITION else "hidden_norm_growth"
            paper = figures.get((variant, quantity))
            if paper is None or (variant, definition) not in means.index:
                continue
            ours, seeds = means.loc[(variant, definition)]
            out.append({"variant": variant, "definition": definition, "ours": float(ours), "seeds": int(seeds),
                        "paper": paper, "relative_difference": (float(ours) - paper) / paper})
    table = pd.DataFrame(out, columns=["variant", "definition", "ours", "seeds", "paper", "relative_difference"])
    if tolerance is not None:
        table["agrees"] = table["relative_difference"].abs() <= tolerance
    return table


def uniform_causal_alpha(block_size: int) -> float:
    """``alpha_tt`` of attention spread evenly over the causal window, averaged over
    positions ``t >= 1`` as :func:`residual_lib.training.diagnostics.attention_diagonal_mass` does."""
    return float(np.mean(1.0 / np.arange(2, block_size + 1)))


def alpha_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run: mean ``alpha_tt`` over layers and heads, the largest head's, and the largest
    per-layer mean over heads."""
    rows = []
    for path in frame["path"]:
        rec = read_record(path)
        a = np.asarray(rec["diagnostics"]["alpha_tt"], float)
        rows.append({"variant": rec["variant"], "seed": rec["seed"], "mean": float(a.mean()),
                     "max_head": float(a.max()), "max_layer": float(a.mean(axis=1).max())})
    return pd.DataFrame(rows, columns=["variant", "seed", "mean", "max_head", "max_layer"])


def profile_comparison(frame: pd.DataFrame, value: str = "final_val_loss") -> pd.DataFrame:
    """Mean ± std of ``value`` per variant (rows) and profile (columns, in the frame's order),
    with the number of seeds, as text."""
    cells = {}
    for profile, part in frame.groupby("profile", sort=False):
        stats_ = part.groupby("variant")[value].agg(["mean", "std", "count"])
        cells[profile] = {v: (f"{r['mean']:.3f} ± {r['std']:.3f}" if r["count"] > 1 else f"{r['mean']:.3f}")
                          + f" ({int(r['count'])} seed{'s' if r['count'] > 1 else ''})" for v, r in stats_.iterrows()}
    out = pd.DataFrame(cells)
    return out.reindex(variant_order(frame)).fillna("—")


def profile_comparison_text(frame: pd.DataFrame, profile: str, value: str = "final_val_loss") -> str:
    """Sentences comparing each variant's mean ``value`` at ``profile`` with the other
    profile of ``frame`` (the dropout twin), over the seeds both have."""
    others = [p for p in dict.fromkeys(frame.profile) if p != profile]
    if not others:
        return ""
    twin = others[0]
    wide = frame.pivot_table(index=["variant", "seed"], columns="profile", values=value).dropna()
    if wide.empty:
        return f"No `{twin}` run shares a seed with `{profile}` yet."
    parts = []
    for variant in variant_order(wide.reset_index()):
        pair = wide.loc[variant]
        diff = float((pair[twin] - pair[profile]).mean())
        parts.append(f"{variant} {pair[twin].mean():.3f} against {pair[profile].mean():.3f} "
                     f"({'+' if diff >= 0 else '−'}{abs(diff):.3f}, {len(pair)} seed{'s' if len(pair) > 1 else ''})")
    floor = frame[frame.profile == twin]["eval_floor"]
    return (f"Over the seeds both profiles have, the final losses with dropout (`{twin}`) against without "
            f"(`{profile}`) are: " + "; ".join(parts) + "."
            + (f" Both are measured on the same fixed batches, whose floor is {floor.iloc[0]:.3f}." if len(floor) else ""))


def gain_equivalence(curve: pd.DataFrame, tolerance: float, value: str = "loss") -> tuple[pd.DataFrame, int | None]:
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


def confound_runs(records: pd.DataFrame, gain_variant: str, seeds, gains, variants, profile: str | None = None
                  ) -> tuple:
    """Section 5's three sets of runs: ``gain_variant`` at each of ``seeds`` under each of ``gains``
    (``whole``), the same runs' first steps at the timing profile (``early``, see
    :data:`residual_lib.run.profiles.GAIN_TIMING`; empty where the profile has none), and the central
    runs (gain 1, fixed batches) of ``variants`` whose evaluation noise is measured. ``records``:
    the section's records, its profile's and its timing profile's; ``profile``: the section's
    (default: the one :func:`residual_lib.pages.notebook.ensure` names in ``records.attrs``)."""
    from ..run.profiles import GAIN_TIMING
    from .sections import gain_study

    profile = profile or records.attrs["profile"]
    own, timing = records[records.profile == profile], records[records.profile == GAIN_TIMING.get(profile, "")]

    def pick(frame):
        study = gain_study(frame, gain_variant)
        return study[study.seed.isin([int(s) for s in seeds]) & study.gain.isin([float(g) for g in gains])]

    central = controlled(own)
    return pick(own), pick(timing), central[central.variant.isin(variants)]


#: The comparisons whose ordering random evaluation could flip (chapter 5 and the confounds page).
MISORDER_PAIRS = (("attn_only", "ffn_only"), ("ffn_only", "no_residual"), ("full", "attn_only"))


def misorder_table(estimates: pd.DataFrame, pairs=MISORDER_PAIRS) -> pd.DataFrame:
    """:func:`misorder_probability` for each pair, one row per pair."""
    return pd.DataFrame([{"pair": f"{a} vs {b}", "misorder probability": misorder_probability(estimates, a, b)}
                         for a, b in pairs])


def welch_gap(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> dict:
    """Difference of means ``mean(a) - mean(b)`` with Welch's t-test and its confidence
    interval (scipy), plus a percentile bootstrap interval when both samples have >= 2 values.
    The samples are sorted first: the bootstrap's resampling draws positions, so without it the
    interval would depend on the order the records were read in, not only on their values."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
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


#: The shares :func:`mixer_shares` reports: name -> (minuend, subtrahend) of the numerator,
#: over the gap ``ffn_only − attn_only``.
MIXER_SHARES = {"mixer": ("ffn_only", "mixer"), "pointwise": ("ffn_only", "pointwise"),
                "mixing": ("pointwise", "mixer")}


def mixer_shares(frame: pd.DataFrame, value: str = "final_val_loss", confidence: float = 0.95,
                 baseline: float | None = None) -> dict:
    """The mixer test as shares of the gap ``ffn_only − attn_only`` (means over seeds,
    ``gap``): what the mixer closes, ``mixer = (ffn_only − mixer) / gap``; what its no-mixing
    control closes, ``pointwise = (ffn_only − pointwise) / gap``; and what cross-position
    mixing closes beyond the control, ``mixing = (pointwise − mixer) / gap`` (the first minus
    the second). Each share has a percentile bootstrap interval (``<share>_low``,
    ``<share>_high``) that resamples each variant's seeds independently and once, whether the
    variant appears in the share's numerator, its denominator or both (scipy, 2,000
    resamples, seeded, samples sorted as in :func:`welch_gap`) when each variant it needs has
    at least two seeds; the gap has :func:`welch_gap`'s intervals (``gap_ci_low``,
    ``gap_ci_high``, ``gap_boot_low``, ``gap_boot_high``). A share whose variants lack records
    is NaN. ``n_<variant>``: the seeds of each variant. ``baseline``: a fixed loss to measure
    from in place of FFNOnly's mean (the unigram floor, say, which escaped FFNOnly seeds do not
    pull down); FFNOnly's records are then not read, and the gap has its bootstrap interval only."""
    names = ("attn_only", "ffn_only", "mixer", "pointwise")
    samples = {v: np.sort(frame.loc[frame.variant == v, value].dropna().to_numpy(float)) for v in names}
    out: dict = {f"n_{v}": len(x) for v, x in samples.items()}
    if baseline is not None:
        samples["ffn_only"], out["n_ffn_only"] = np.array([float(baseline)]), 0
    out.update(gap=math.nan, gap_ci_low=math.nan, gap_ci_high=math.nan, gap_boot_low=math.nan,
               gap_boot_high=math.nan)
    for share in MIXER_SHARES:
        out.update({share: math.nan, f"{share}_low": math.nan, f"{share}_high": math.nan})
    ffn, attn = samples["ffn_only"], samples["attn_only"]
    if not len(ffn) or not len(attn):
        return out
    if baseline is None:
        gap = welch_gap(ffn, attn, confidence)
    else:  # a constant minus attn_only's mean: only attn_only's seeds vary
        gap = {"gap": float(baseline) - attn.mean()}
        if len(attn) >= 2:
            boot = stats.bootstrap((attn,), lambda x, axis=-1: float(baseline) - x.mean(axis), confidence_level=confidence,
                                   n_resamples=2000, method="percentile", random_state=0)
            gap.update(boot_low=boot.confidence_interval.low, boot_high=boot.confidence_interval.high)
    out.update({f"gap_{k}" if k != "gap" else k: float(gap[k]) for k in ("gap", "ci_low", "ci_high", "boot_low",
                                                                  "boot_high") if k in gap})
    fixed = {"ffn_only"} if baseline is not None else set()
    for share, (a, b) in MIXER_SHARES.items():
        xa, xb = samples[a], samples[b]
        if not len(xa) or not len(xb):
            continue
        out[share] = float((xa.mean() - xb.mean()) / out["gap"])
        # each variant's seeds resampled once; a baseline is a constant, not resampled
        needed = [v for v in dict.fromkeys((a, b, "ffn_only", "attn_only")) if v not in fixed]
        if min(len(samples[v]) for v in needed) >= 2:
            def ratio(*xs, axis=-1, a=a, b=b, needed=needed):
                m = {"ffn_only": float(baseline) if baseline is not None else None}
                m.update({v: x.mean(axis) for v, x in zip(needed, xs)})
                return (m[a] - m[b]) / (m["ffn_only"] - m["attn_only"])

            boot = stats.bootstrap(tuple(samples[v] for v in needed), ratio, confidence_level=confidence,
                                   n_resamples=2000, method="percentile", random_state=0)
            out[f"{share}_low"] = float(boot.confidence_interval.low)
            out[f"{share}_high"] = float(boot.confidence_interval.high)
    return out
