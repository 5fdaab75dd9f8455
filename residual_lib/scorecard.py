"""The scorecard: one row per claim of the paper and profile, with a verdict computed
from run records by a stated rule.

Verdicts: ``reproduced``, ``not reproduced``, ``inconclusive`` (the records exist but
cannot decide the claim, e.g. an absolute value of the 10M model against a smaller
stand-in), ``not run at this scale`` (no records at a profile of the claim's scale).

Scales: a 10M claim is checked at ``paper-10m`` (the paper's setting) and at ``cpu``
(a ~1M-parameter stand-in); a 124M claim only at ``paper-124m``.

Rules (constants below; :data:`RULES` holds the text shown on the page):

* *At the floor*: a variant's mean final validation loss is within ``FLOOR_TOL`` nats
  of the unigram floor of the corpus (the loss of a model that ignores its input).
* *Recovers*: its mean final loss is more than ``RECOVERY_MARGIN`` nats below the floor.
* *Agrees with a number* (paper-scale profiles only): within
  ``max(2 x the paper's std, REL_TOL x the value)`` of the paper's value.
* Patterns (orderings, collapse, recovery) are checked at every profile; absolute
  values only at the paper's own profile.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from . import analysis, paper
from .records import controlled, load_records, read_record

FLOOR_TOL = 0.05
RECOVERY_MARGIN = 0.5
REL_TOL = 0.02
SPREAD_TOL = 0.01  # run-to-run spread that counts as "the runs differ"
GAIN_TOL = 0.05  # final-loss spread across gains that counts as "equivalent"
LAYER0_ZERO = 5e-4  # rounds to the paper's 0.000
PARTIAL = ("attn_only", "ffn_only", "no_residual")

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not run at this scale")
PAPER_SCALE = {"paper-10m": "10M", "paper-124m": "124M"}


def profiles_for_scale(scale: str, stand_in: str = "cpu") -> tuple[str, ...]:
    """Profiles at which a claim of ``scale`` (10M, 124M or both) is checked."""
    return {"10M": ("paper-10m", stand_in), "124M": ("paper-124m",),
            "both": ("paper-10m", stand_in, "paper-124m")}[scale]

RULES = {
    "joint_collapse": f"reproduced if every partial variant is at the floor (within {FLOOR_TOL} nats) under "
                      "random-batch evaluation, first seed",
    "layer0_gradient": f"reproduced if every partial variant's layer-0 gradient norm stays below {LAYER0_ZERO} "
                       "(0.000 to three decimals) after 6% of training while full stays above it",
    "representation_drift": "reproduced if drift orders attn_only > ffn_only > full (means over the central seeds)",
    "hidden_norm_growth": "reproduced if hidden-norm growth orders attn_only > ffn_only (means over the central seeds)",
    "gain_confound": f"reproduced if the final losses of all gains lie within {GAIN_TOL} nats of each other",
    "central": f"reproduced if attn_only recovers (> {RECOVERY_MARGIN} nats below the floor), ffn_only is at the "
               "floor and the Welch 95% interval of their gap excludes 0; at paper-10m the means must also agree "
               "with the paper's",
    "ffn_vs_no_residual": f"reproduced if ffn_only and no_residual differ by at most {FLOOR_TOL} nats",
    "absolute": "an absolute value of the paper's model: compared at the paper's profile only (agreement within "
                f"max(2 std, {REL_TOL:.0%})); inconclusive at a stand-in scale",
    "mixer_test": "reproduced if the mixer lands strictly between attn_only and ffn_only (both Welch 95% intervals "
                  "exclude 0), as the paper's 2.487 does",
    "intermediate_reproduction": "reproduced if attn_only's seed-to-seed std is at least 0.1 nats (a large spread "
                                 "like the paper's 0.544); not reproduced if the seeds agree",
    "nondeterministic_repeats": f"reproduced if non-deterministic repeats of one seed differ by more than "
                                f"{SPREAD_TOL} nats while deterministic repeats are identical",
    "seeds_124m": "a 124M result: needs paper-124m records",
}


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _seeds(frame: pd.DataFrame) -> str:
    seeds = sorted(set(int(s) for s in frame["seed"]))
    return ", ".join(map(str, seeds)) if len(seeds) <= 4 else f"{len(seeds)} seeds"


class _Records:
    """The records of one profile, with the slices the rules use."""

    def __init__(self, frame: pd.DataFrame, profile: str):
        self.profile = profile
        self.all = frame[frame.profile == profile]
        self.central = controlled(self.all)
        base = self.all[(self.all.gain == 1.0) & (self.all.replicate == 0) & self.all.deterministic.astype(bool)]
        self.random = base[base.eval_mode == "random"]
        self.floor = float(self.all["unigram_floor"].iloc[0]) if len(self.all) else math.nan

    def means(self, frame=None) -> pd.Series:
        frame = self.central if frame is None else frame
        return frame.groupby("variant")["final_val_loss"].mean()

    def has(self, variants, frame=None) -> bool:
        frame = self.central if frame is None else frame
        return set(variants) <= set(frame["variant"])

    def at_floor(self, value: float) -> bool:
        return abs(value - self.floor) <= FLOOR_TOL

    def recovers(self, value: float) -> bool:
        return value < self.floor - RECOVERY_MARGIN


def _agrees(ours: float, claim_row: pd.Series) -> bool:
    std = claim_row["std"] if not pd.isna(claim_row["std"]) else 0.0
    return abs(ours - claim_row["value"]) <= max(2 * std, REL_TOL * abs(claim_row["value"]))


def _verdict(ok: bool) -> str:
    return "reproduced" if ok else "not reproduced"


# --------------------------------------------------------------------------- the claims


def _joint_collapse(r: _Records, rows: pd.DataFrame):
    frame = r.random if r.has(("full", *PARTIAL), r.random) else None
    if frame is None:
        return None
    first = frame[frame.seed == frame.seed.min()]
    means = r.means(first)
    ratios = {v: means[v] / means["full"] for v in PARTIAL}
    ours = "; ".join(f"{v} {_fmt(means[v])} ({ratios[v]:.2f}×)" for v in PARTIAL) + f"; floor {_fmt(r.floor)}"
    ok = all(r.at_floor(means[v]) for v in PARTIAL)
    if r.profile in PAPER_SCALE:
        ok = ok and all(_agrees(means[v], rows.iloc[0]) for v in PARTIAL)
    return ours, _seeds(first), _verdict(ok), "joint_collapse"


def _layer0(r: _Records, rows):
    frame = r.random if r.has(("full", *PARTIAL), r.random) else r.central
    if not r.has(("full", *PARTIAL), frame):
        return None
    table = analysis.layer0_after(frame).groupby("variant")["max"].max()
    partial_max = max(table[v] for v in PARTIAL)
    full_mean = float(analysis.layer0_after(frame[frame.variant == "full"])["mean"].mean())
    ours = f"partial max {partial_max:.2e}; full mean {full_mean:.3f}"
    return ours, _seeds(frame), _verdict(partial_max < LAYER0_ZERO and full_mean > LAYER0_ZERO), "layer0_gradient"


def _ordering(column: str, order: tuple[str, ...], rule: str):
    def check(r: _Records, rows):
        if not r.has(order):
            return None
        means = r.central.groupby("variant")[column].mean()
        ours = ", ".join(f"{v} {means[v]:.2f}×" for v in order)
        ok = all(means[a] > means[b] for a, b in zip(order, order[1:]))
        return ours, _seeds(r.central), _verdict(ok), rule

    return check


def _gain(r: _Records, rows):
    gains = r.all[(r.all.eval_mode == "fixed") & (r.all.replicate == 0) & (r.all.variant == "attn_only")]
    if len(gains):  # the seed the gain sweep was run at: the one with the most gains
        gains = gains[gains.seed == gains.groupby("seed")["gain"].nunique().idxmax()]
    if gains.gain.nunique() < 2:
        return None
    by_gain = gains.groupby("gain")["final_val_loss"].mean()
    spread = by_gain.max() - by_gain.min()
    _, merged = analysis.gain_equivalence(analysis.curves(gains, "train"), GAIN_TOL)
    ours = (f"final-loss spread {spread:.3f} over gains {', '.join(f'{g:g}' for g in by_gain.index)}; "
            f"training curves within {GAIN_TOL} from step {merged if merged is not None else '—'}")
    return ours, _seeds(gains), _verdict(spread <= GAIN_TOL), "gain_confound"


def _central(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only")):
        return None
    means = r.means()
    ffn = r.central[r.central.variant == "ffn_only"].final_val_loss
    gap = analysis.welch_gap(ffn, r.central[r.central.variant == "attn_only"].final_val_loss)
    std = r.central.groupby("variant")["final_val_loss"].std()
    at_floor = sum(r.at_floor(v) for v in ffn)
    ours = (f"attn_only {_fmt(means['attn_only'])} ± {_fmt(std['attn_only'])}; ffn_only {_fmt(means['ffn_only'])} "
            f"± {_fmt(std['ffn_only'])} (at the floor in {at_floor} of {len(ffn)} seeds); gap {_fmt(gap['gap'])}")
    if "ci_low" not in gap:  # a single seed per variant: no interval, no verdict
        return ours, _seeds(r.central), "inconclusive", "central"
    ok = r.recovers(means["attn_only"]) and r.at_floor(means["ffn_only"]) and gap["ci_low"] > 0
    if r.profile in PAPER_SCALE:
        for v in ("attn_only", "ffn_only"):
            row = rows[rows.variant == v]
            ok = ok and (row.empty or _agrees(means[v], row.iloc[0]))
    return ours, _seeds(r.central), _verdict(ok), "central"


def _ffn_vs_nores(r: _Records, rows):
    if not r.has(("ffn_only", "no_residual")):
        return None
    means = r.means()
    diff = means["ffn_only"] - means["no_residual"]
    return f"{diff:+.3f}", _seeds(r.central), _verdict(abs(diff) <= FLOOR_TOL), "ffn_vs_no_residual"


def _absolute(r: _Records, rows):
    """Claims that are absolute numbers of the paper's model."""
    first = rows.iloc[0]
    variants = [v for v in str(first["variant"]).replace("/", "-").split("-") if v in ("attn_only", "ffn_only")]
    if not variants or not r.has(variants):
        return None
    means = r.means()
    if "/" in str(first["variant"]):
        value = means["ffn_only"] / means["attn_only"]
        ours = f"ffn_only/attn_only {value:.2f}×"
    else:
        value = means[variants[0]]
        ours = f"{variants[0]} {_fmt(value)}"
    if r.profile not in PAPER_SCALE:
        return ours, _seeds(r.central), "inconclusive", "absolute"
    return ours, _seeds(r.central), _verdict(_agrees(value, first)), "absolute"


def _mixer(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only", "mixer")):
        return None
    c = r.central
    above = analysis.welch_gap(c[c.variant == "mixer"].final_val_loss, c[c.variant == "attn_only"].final_val_loss)
    below = analysis.welch_gap(c[c.variant == "ffn_only"].final_val_loss, c[c.variant == "mixer"].final_val_loss)
    means = r.means()
    ours = f"mixer {_fmt(means['mixer'])} (attn_only {_fmt(means['attn_only'])}, ffn_only {_fmt(means['ffn_only'])})"
    if "ci_low" not in above or "ci_low" not in below:
        return ours, _seeds(c[c.variant == "mixer"]), "inconclusive", "mixer_test"
    return ours, _seeds(c[c.variant == "mixer"]), _verdict(above["ci_low"] > 0 and below["ci_low"] > 0), "mixer_test"


def _intermediate(r: _Records, rows):
    attn = r.central[r.central.variant == "attn_only"]
    if len(attn) < 2:
        return None
    std = attn.final_val_loss.std()
    ours = f"attn_only {_fmt(attn.final_val_loss.mean())} ± {_fmt(std)}"
    return ours, _seeds(attn), _verdict(std >= 0.1), "intermediate_reproduction"


def _nondeterministic(r: _Records, rows):
    attn = r.all[(r.all.variant == "attn_only") & (r.all.eval_mode == "fixed") & (r.all.gain == 1.0)]
    repeated = attn[~attn.deterministic.astype(bool)]
    first = attn[attn.seed == repeated.seed.iloc[0]] if len(repeated) else attn
    nondet = first[~first.deterministic.astype(bool)]
    det = first[first.deterministic.astype(bool)]
    if len(nondet) < 2:
        return None
    nd_spread = nondet.final_val_loss.max() - nondet.final_val_loss.min()
    d_spread = det.final_val_loss.max() - det.final_val_loss.min() if len(det) >= 2 else math.nan
    devices = sorted({read_record(p)["provenance"]["device"] for p in nondet.path})
    ours = (f"non-deterministic {', '.join(_fmt(x) for x in sorted(nondet.final_val_loss))} (spread {nd_spread:.4f}); "
            f"deterministic spread {_fmt(d_spread, 4)}; device {', '.join(devices)}")
    ok = nd_spread > SPREAD_TOL and not (d_spread > 0)
    return ours, _seeds(nondet), _verdict(ok), "nondeterministic_repeats"


CHECKS = {
    "joint_collapse_10m": _joint_collapse,
    "joint_collapse_124m": _joint_collapse,
    "layer0_gradient": _layer0,
    "representation_drift": _ordering("diag_representation_drift", ("attn_only", "ffn_only", "full"),
                                      "representation_drift"),
    "gain_confound": _gain,
    "central_10m": _central,
    "ffn_vs_no_residual": _ffn_vs_nores,
    "ratio_10m": _absolute,
    "seeds_124m": _absolute,
    "hidden_norm_growth": _ordering("diag_hidden_norm_growth", ("attn_only", "ffn_only"), "hidden_norm_growth"),
    "mixer_test": _mixer,
    "intermediate_reproduction": _intermediate,
    "nondeterministic_repeats": _nondeterministic,
    "original_record": _absolute,
}


def _paper_text(rows: pd.DataFrame) -> str:
    parts = []
    for _, row in rows.iterrows():
        value = f"{row['value']:g}" + (f" ± {row['std']:g}" if not pd.isna(row["std"]) else "")
        parts.append(f"{row['variant']} {row['quantity'].replace('_', ' ')}: {value}")
    return "; ".join(parts)


def scale_note(results_dir: str | Path, stand_in: str = "cpu") -> str:
    """One paragraph saying what the ``stand_in`` rows are: the size of its model (from its
    records) against the paper's 10M, and which claims wait for paper-scale records."""
    records = load_records(results_dir)
    sizes = records[(records.profile == stand_in) & (records.variant == "full")]["n_params"]
    size = f"a {sizes.max() / 1e6:.2g}M-parameter" if len(sizes) else "a small"
    missing = [p for p in PAPER_SCALE if not (records.profile == p).any()]
    waiting = (f"There are no {' or '.join(f'`{p}`' for p in missing)} records yet, so every row at "
               f"{'that profile' if len(missing) == 1 else 'those profiles'} reads `not run at this scale`."
               if missing else "Records exist at both paper profiles.")
    return (f"**Scale.** The `{stand_in}` rows come from {size} stand-in for the paper's 10M model, "
            f"trained on the same character corpus. They test the paper's qualitative claims (who collapses, "
            f"who recovers, which confound matters); its absolute 10M and 124M numbers are checked only at "
            f"`paper-10m` and `paper-124m`. {waiting}")


def build(results_dir: str | Path, stand_in: str = "cpu") -> pd.DataFrame:
    """The scorecard: for every claim of :func:`residual_lib.paper.claims` and every profile
    of its scale (``stand_in`` being the small profile that stands in for 10M), the paper's
    values, ours, the seeds, the verdict and the rule applied."""
    records = load_records(results_dir)
    claims = paper.claims()
    rows = []
    for claim, group in claims.groupby("claim", sort=False):
        scales = set(group["scale"])
        for scale in scales:
            part = group[group.scale == scale]
            for profile in profiles_for_scale(scale, stand_in):
                r = _Records(records, profile)
                result = CHECKS[claim](r, part) if len(r.all) else None
                ours, seeds, verdict, rule = result if result else ("—", "—", "not run at this scale", "")
                rows.append({"claim": claim, "scale": scale, "section": part["section"].iloc[0],
                             "statement": part["statement"].iloc[0], "paper": _paper_text(part),
                             "profile": profile, "ours": ours, "seeds": seeds, "verdict": verdict,
                             "rule": RULES.get(rule, "")})
    table = pd.DataFrame(rows)
    assert set(table.verdict) <= set(VERDICTS)
    return table
