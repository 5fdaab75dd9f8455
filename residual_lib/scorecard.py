"""The scorecard: one row per claim of the paper and profile, with a verdict computed
from run records by a stated rule.

Verdicts (:data:`VERDICTS`):

* ``reproduced`` -- the records show what the claim says;
* ``partly reproduced`` -- it holds in some seeds and fails in others (the row gives the counts);
* ``agrees with the paper's confirmed result`` -- for a result the paper itself set aside
  as an anomaly (its intermediate reproduction): ours agrees with the paper's controlled
  result instead;
* ``not reproduced`` -- the records contradict the claim;
* ``new evidence`` -- a test the paper could not decide, decided here: evidence on the
  paper's hypothesis, not a reproduction of a result;
* ``not testable here`` -- the records exist but the claim cannot be tested with them (a
  platform effect), or no record could test it (a quantity the paper does not define: so
  at every profile, records or not);
* ``inconclusive`` -- an absolute number of the paper's model, against a smaller stand-in;
* ``not run at this scale`` -- no records at a profile of the claim's scale.

Scales: a 10M claim is checked at ``paper-10m`` (the paper's setting) and at ``cpu``
(a ~0.8M-parameter stand-in); a claim the central sweep decides also at ``cpu-dropout``,
the stand-in with ``paper-10m``'s dropout (:data:`residual_lib.profiles.DROPOUT_TWIN`); a
124M claim only at ``paper-124m``.

Thresholds. Every number a rule compares with is a module constant listed in
:data:`THRESHOLDS` with plausible alternatives; :func:`sensitivity` recomputes every verdict
at each alternative, and a verdict that changes is marked fragile on the grid.

The floor. Every "at the floor" compares a loss with the unigram cross-entropy *on the
tokens that loss was measured on* (``eval_floor``: the fixed evaluation batches for fixed
evaluation, the expected value over random windows for random evaluation; see
:func:`residual_lib.data.eval_floor`), so the comparison is symmetric: a variant is at the
floor when it is within ``FLOOR_TOL`` nats of it on either side.

Each rule (:data:`RULES`) is its text and its check, registered together by :func:`rule`
right above the check, the text built from the same constants and paper values the check
uses; each claim (:data:`CLAIMS`) names its rule. Rows come in the claims file's order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from . import analysis, paper
from .paths import default_results_dir
from .profiles import DROPOUT_TWIN
from .records import controlled, diverged, load_records, off_recipe_lines, recipe_runs, usable
from .tables import number

FLOOR_TOL = 0.05  # nats either side of the evaluation floor: "at the floor"
RECOVERY_MARGIN = 0.5  # nats below the floor: "recovers"
REL_TOL = 0.02  # agreement with a paper number at the paper's own profile
SPREAD_TOL = 0.01  # run-to-run spread that counts as "the runs differ"
GAIN_TOL = 0.05  # final-loss spread across gains that counts as "equivalent"
SEED_SPREAD = 0.1  # seed-to-seed std that counts as "a large spread" (the paper's anomaly: 0.544, paper_claims.csv)
ALPHA_NEAR_ONE = 0.9  # alpha_tt that counts as "~1"
LAYER0_ZERO = analysis.LAYER0_ZERO  # block-0 gradient norm that rounds to the paper's 0.000
LAYER0_FROM = analysis.LAYER0_FROM  # where "from step 300 onward" starts, as a share of training
DRIFT_REL = 0.1  # relative agreement of a growth or drift figure with the paper's
NOISE_SHARE = 0.1  # evaluation noise below this share of a discrepancy cannot explain it
ESCAPE_CONFIDENCE = 0.95  # the escape rate's Clopper-Pearson interval
PARTIAL = ("attn_only", "ffn_only", "no_residual")

VERDICTS = ("reproduced", "partly reproduced", "agrees with the paper's confirmed result", "not reproduced",
            "new evidence", "not testable here", "inconclusive", "not run at this scale")
PAPER_SCALE = {"paper-10m": "10M", "paper-124m": "124M"}


def stand_ins(stand_in: str = "cpu") -> tuple[str, ...]:
    """The stand-in profile and its dropout twin (when it has one), in the grid's order."""
    return (stand_in, DROPOUT_TWIN[stand_in]) if stand_in in DROPOUT_TWIN else (stand_in,)


def profiles_for_scale(scale: str, stand_in: str = "cpu", central: bool = True) -> tuple[str, ...]:
    """Profiles at which a claim of ``scale`` (10M, 124M or both) is checked; a claim the
    central sweep decides (``central``) also at the stand-in's dropout twin."""
    small = stand_ins(stand_in) if central else (stand_in,)
    return {"10M": ("paper-10m", *small), "124M": ("paper-124m",),
            "both": ("paper-10m", *small, "paper-124m")}[scale]


# the paper's values quoted in the rules, read from the claims file like every other paper number
_PAPER_FULL_LAYER0 = paper.value("layer0_full", "full", "layer0_grad_norm_from_step_300")
_PAPER_GAIN_STEPS = paper.value("gain_confound", "attn_only", "steps_to_equivalence")
_PAPER_ANOMALY = paper.claims().query("claim == 'intermediate_reproduction'").iloc[0]
_FROM = (f"from {analysis.LAYER0_FROM:.0%} of training on (the paper's step 300, read as a share of "
         f"its {analysis.PAPER_10M_STEPS:,}-step 10M run)")


@dataclass(frozen=True)
class Rule:
    """A verdict rule: the text the pages show and the check that applies it, written side
    by side from the same constants and paper values. ``check(records, paper_rows)`` returns
    ``(ours, seeds, verdict)``, or None when the records cannot answer. A ``central`` rule
    reads only the central sweep (fixed batches, gain 1, one deterministic run per variant
    and seed), so it is judged at the stand-in's dropout twin too. A rule that needs no
    records (``needs_records`` false) is applied at every profile, records or not."""

    name: str
    text: str
    check: Callable
    central: bool = True
    needs_records: bool = True


#: Every rule, by name, in the order they are defined below.
RULES: dict[str, Rule] = {}


def rule(name: str, text: str, central: bool = True, needs_records: bool = True):
    """Register the decorated check as rule ``name``, with ``text``."""
    def register(check):
        RULES[name] = Rule(name, text, check, central, needs_records)
        return check

    return register


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _seeds(frame: pd.DataFrame) -> str:
    seeds = sorted(set(int(s) for s in frame["seed"]))
    return ", ".join(map(str, seeds)) if len(seeds) <= 4 else f"{len(seeds)} seeds"


def _count(k: int, n: int, what: str) -> str:
    return f"{what} in {k} of {n} seeds"


class _Records:
    """The records of one profile, with the slices the rules use."""

    def __init__(self, frame: pd.DataFrame, profile: str):
        self.profile = profile
        self.all = recipe_runs(frame[frame.profile == profile])  # an overridden run is not the profile's
        self.central = controlled(self.all)
        base = self.all[(self.all.gain == 1.0) & (self.all.replicate == 0) & self.all.deterministic.astype(bool)
                        & (self.all.init_noise == 0)]
        self.random = base[base.eval_mode == "random"]
        self.floor = float(self.central["eval_floor"].iloc[0]) if len(self.central) else math.nan

    def means(self, frame=None) -> pd.Series:
        frame = self.central if frame is None else frame
        return frame.groupby("variant")["final_val_loss"].mean()

    def has(self, variants, frame=None) -> bool:
        frame = self.central if frame is None else frame
        return set(variants) <= set(frame["variant"])

    def by_seed(self, frame=None) -> pd.DataFrame:
        """Final losses, one row per seed, one column per variant."""
        frame = self.central if frame is None else frame
        return frame.pivot_table(index="seed", columns="variant", values="final_val_loss")


def _agrees(ours: float, claim_row: pd.Series) -> bool:
    std = claim_row["std"] if not pd.isna(claim_row["std"]) else 0.0
    return abs(ours - claim_row["value"]) <= max(2 * std, REL_TOL * abs(claim_row["value"]))


def _verdict(ok: bool) -> str:
    return "reproduced" if ok else "not reproduced"


def _share(k: int, n: int) -> str:
    return "reproduced" if k == n else "partly reproduced" if k else "not reproduced"


# --------------------------------------------------------------------------- the claims


@rule("joint_collapse",
      f"reproduced if every partial variant ends within {FLOOR_TOL} nats of the floor of its "
      "evaluation batches under random-batch evaluation (first seed). Random evaluation changes "
      "how a loss is measured, not what is trained: its noise is shown beside the verdict", central=False)
def _joint_collapse(r: _Records, rows):
    frame = r.random if r.has(("full", *PARTIAL), r.random) else None
    if frame is None:
        return None
    first = frame[frame.seed == frame.seed.min()]
    means = r.means(first)
    floor = float(first["eval_floor"].iloc[0])
    ratios = {v: means[v] / means["full"] for v in PARTIAL}
    ours = ("; ".join(f"{v} {_fmt(means[v])} ({ratios[v]:.2f}×)" for v in PARTIAL)
            + f"; floor of random evaluation {_fmt(floor)}")
    ok = all(abs(means[v] - floor) <= FLOOR_TOL for v in PARTIAL)
    if r.profile in PAPER_SCALE:
        ok = ok and all(_agrees(means[v], rows.iloc[0]) for v in PARTIAL)
    noise = analysis.val_estimates(r.central)
    if len(noise):
        misorder = analysis.misorder_probability(noise, "attn_only", "ffn_only")
        ours += (f". Random evaluation moves a final model's loss by sd {noise.deviation.std():.3f} nats "
                 f"(max {noise.deviation.abs().max():.3f}) and misorders attn_only and ffn_only in "
                 f"{misorder:.0%} of draws: it cannot turn a {means['ffn_only'] - means['attn_only']:.1f}-nat "
                 "difference into a joint collapse")
    return ours, _seeds(first), _verdict(ok)


@rule("layer0_starved",
      f"block 0's gradient norm, median over the logged steps {_FROM}: a run is starved if the "
      f"median is below {LAYER0_ZERO} (0.000 to three decimals). Reproduced if every seed is "
      "starved, partly if some are, not reproduced if none. The paper measured this in nanoGPT runs "
      "in which every partial variant had collapsed; the controlled runs here are the ones in which "
      "AttnOnly recovers")
def _layer0_starved(r: _Records, rows):
    variant = rows.variant.iloc[0]  # the claim's variant: attn_only, ffn_only or no_residual
    frame = r.central[r.central.variant == variant]
    if frame.empty:
        return None
    table = analysis.layer0_after(frame, LAYER0_FROM, LAYER0_ZERO).sort_values("seed")
    starved = table["median"] < LAYER0_ZERO
    at_floor = dict(zip(frame.seed, (frame.final_val_loss - r.floor).abs() <= FLOOR_TOL))
    tracks = all(bool(at_floor.get(s)) == bool(st) for s, st in zip(table.seed, starved))
    per_seed = ", ".join(f"{s}: {number(m)}" for s, m in zip(table.seed, table["median"]))
    ours = (f"median {number(table['median'].median())} (per seed {per_seed}); "
            f"{_count(int(starved.sum()), len(table), 'starved')}"
            + ("; starved exactly in the seeds at the floor" if tracks and variant == "ffn_only" else ""))
    return ours, _seeds(frame), _share(int(starved.sum()), len(table))


@rule("layer0_full",
      f"reproduced if full's block-0 median gradient norm ({_FROM}) stays above {LAYER0_ZERO} in every "
      f"seed; at paper-10m its mean must also agree with the paper's {_PAPER_FULL_LAYER0:g}")
def _layer0_full(r: _Records, rows):
    frame = r.central[r.central.variant == "full"]
    if frame.empty:
        return None
    table = analysis.layer0_after(frame, LAYER0_FROM, LAYER0_ZERO)
    ok = bool((table["median"] > LAYER0_ZERO).all())
    ours = f"median {table['median'].median():.3f} (mean {table['mean'].mean():.3f})"
    if r.profile in PAPER_SCALE:
        ok = ok and _agrees(float(table["mean"].mean()), rows.iloc[0])
    return ours, _seeds(frame), _verdict(ok)


_DRIFT = "drift |h_L - h_1| / |h_1|, end"


@rule("hidden_norm_growth",
      "the paper defines neither its growth nor its drift figures; its drift figures (full, ffn_only, "
      "attn_only) are compared per variant with the drift |h_L − h_1| / |h_1| of the final model (mean "
      f"over the central seeds; the other definitions are in chapter 7). A variant agrees if ours is within "
      f"{DRIFT_REL:.0%} of the paper's: reproduced if every variant agrees, partly if some do. The paper's "
      "figures come from runs in which every partial variant had collapsed; a variant in another state here "
      "(AttnOnly recovers) need not agree")
def _growth(r: _Records, rows):
    drift = rows[rows.quantity == "representation_drift"]
    variants = [v for v in drift.variant if v in set(r.central.variant)]
    if len(variants) < 2:
        return None
    frame = r.central[r.central.variant.isin(variants)]
    ours_drift = (analysis.growth_definitions(frame).query("definition == @_DRIFT")
                  .groupby("variant")["value"].mean())
    parts, agree = [], 0
    for v in variants:
        theirs = float(drift[drift.variant == v]["value"].iloc[0])
        ok = abs(ours_drift[v] - theirs) <= DRIFT_REL * theirs
        agree += ok
        parts.append(f"{v} {ours_drift[v]:.2f} (paper {theirs:g}, {'agrees' if ok else 'differs'})")
    states = []
    if "attn_only" in variants:
        attn = r.central[r.central.variant == "attn_only"].final_val_loss.mean()
        if attn < r.floor - RECOVERY_MARGIN:
            states.append("attn_only recovered here, unlike in the paper's diagnostic runs")
    ours = f"drift {'; '.join(parts)}" + (f"; {states[0]}" if states else "")
    return ours, _seeds(frame), _share(agree, len(variants))


@rule("gain_confound",
      f"the final losses of all gains lie within {GAIN_TOL} nats of each other, and their validation "
      f"losses on the fixed batches (every evaluation, {GAIN_TOL}-nat spread) come together within the "
      f"paper's ~{_PAPER_GAIN_STEPS:.0f} steps, read as a share of a {analysis.PAPER_10M_STEPS:,}-step run (an "
      "assumption) and rounded up to the next evaluation: reproduced if both, partly reproduced if only "
      "the final losses agree. One-batch training losses are too noisy for the timing: they cross "
      f"{GAIN_TOL} nats by chance", central=False)
def _gain(r: _Records, rows):
    gains = r.all[(r.all.eval_mode == "fixed") & (r.all.replicate == 0) & (r.all.variant == "attn_only")
                  & (r.all.init_noise == 0)]
    if len(gains):  # the seed the gain sweep was run at: the one with the most gains
        gains = gains[gains.seed == gains.groupby("seed")["gain"].nunique().idxmax()]
    if gains.gain.nunique() < 2:
        return None
    by_gain = gains.groupby("gain")["final_val_loss"].mean()
    spread = by_gain.max() - by_gain.min()
    curve = analysis.curves(gains, "val")
    _, merged = analysis.gain_equivalence(curve, GAIN_TOL)
    paper_steps = float(rows[rows.quantity == "steps_to_equivalence"]["value"].iloc[0])
    steps = int(gains.steps.iloc[0])
    within = int(round(paper_steps / analysis.PAPER_10M_STEPS * steps))
    evals = sorted(set(curve.step))
    by = next((s for s in evals if s >= within), evals[-1])  # the first evaluation at or after it
    ours = (f"final-loss spread {spread:.3f} over gains {', '.join(f'{g:g}' for g in by_gain.index)}; validation "
            f"curves within {GAIN_TOL} from step {f'{merged:,}' if merged is not None else '—'} of {steps:,} (the "
            f"paper's ~{paper_steps:.0f} steps, read as a share of an assumed {analysis.PAPER_10M_STEPS:,}-step run, "
            f"is step {within} here, evaluated at {by})")
    final_ok, fast = spread <= GAIN_TOL, merged is not None and merged <= by
    verdict = "reproduced" if final_ok and fast else "partly reproduced" if final_ok else "not reproduced"
    return ours, _seeds(gains), verdict


@rule("asymmetry",
      f"per seed, attn_only recovers (> {RECOVERY_MARGIN} nats below the floor) and ends more than "
      f"{RECOVERY_MARGIN} nats below that seed's ffn_only. Reproduced if every seed does and the Welch "
      "95% interval of the gap excludes 0, partly if some seeds do; at paper-10m the means must also "
      f"agree with the paper's within {REL_TOL:.0%}")
def _asymmetry(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only")):
        return None
    wide = r.by_seed()[["attn_only", "ffn_only"]].dropna()
    holds = (wide.attn_only < r.floor - RECOVERY_MARGIN) & (wide.ffn_only - wide.attn_only > RECOVERY_MARGIN)
    gap = analysis.welch_gap(wide.ffn_only, wide.attn_only)
    means = wide.mean()
    ours = (f"attn_only {_fmt(means.attn_only)}, ffn_only {_fmt(means.ffn_only)}; gap {_fmt(gap['gap'])}"
            + (f" (Welch 95% CI {gap['ci_low']:.2f} to {gap['ci_high']:.2f})" if "ci_low" in gap else "")
            + f"; {_count(int(holds.sum()), len(wide), 'holds')}")
    if "ci_low" not in gap:  # a single seed per variant: no interval, no verdict
        return ours, _seeds(wide.reset_index()), "inconclusive"
    verdict = _share(int(holds.sum()), len(wide))
    if verdict == "reproduced" and gap["ci_low"] <= 0:
        verdict = "not reproduced"
    if verdict == "reproduced" and r.profile in PAPER_SCALE:
        for v in ("attn_only", "ffn_only"):
            row = rows[rows.variant == v]
            if not row.empty and not _agrees(means[v], row.iloc[0]):
                verdict = "not reproduced"
    return ours, _seeds(wide.reset_index()), verdict


@rule("ffn_collapse",
      f"the paper claims collapse in every seed: reproduced if ffn_only ends within {FLOOR_TOL} nats "
      "of the floor in every seed, not reproduced if any seed escapes. The row gives the escape rate "
      f"with its {ESCAPE_CONFIDENCE:.0%} Clopper-Pearson interval over every ffn_only seed of the profile")
def _ffn_collapse(r: _Records, rows):
    if not r.has(("ffn_only",)):
        return None
    ffn = r.central[r.central.variant == "ffn_only"].sort_values("seed")
    at_floor = (ffn.final_val_loss - r.floor).abs() <= FLOOR_TOL
    escaped = ffn[~at_floor.to_numpy()]
    rate = analysis.escape_rate(len(escaped), len(ffn), ESCAPE_CONFIDENCE)
    ours = (f"ffn_only {_fmt(ffn.final_val_loss.mean())} ± {_fmt(ffn.final_val_loss.std())}, floor {_fmt(r.floor)}; "
            f"escapes in {len(escaped)} of {len(ffn)} seeds ({rate['rate']:.0%}, {ESCAPE_CONFIDENCE:.0%} interval "
            f"{rate['low']:.0%} to {rate['high']:.0%})"
            + (f": {', '.join(f'seed {s} ({v:.3f})' for s, v in zip(escaped.seed, escaped.final_val_loss))}"
               if len(escaped) else ""))
    ok = bool(at_floor.all())
    if ok and r.profile in PAPER_SCALE:
        ok = _agrees(float(ffn.final_val_loss.mean()), rows.iloc[0])
    return ours, _seeds(ffn), _verdict(ok)


@rule("ffn_vs_no_residual",
      f"per seed, |ffn_only − no_residual| ≤ {FLOOR_TOL} nats: reproduced in every seed, "
      "partly reproduced in some")
def _ffn_vs_nores(r: _Records, rows):
    if not r.has(("ffn_only", "no_residual")):
        return None
    wide = r.by_seed()[["ffn_only", "no_residual"]].dropna()
    diff = wide.ffn_only - wide.no_residual
    close = diff.abs() <= FLOOR_TOL
    ours = (f"per seed {', '.join(analysis.signed(d) for d in diff)}; "
            f"{_count(int(close.sum()), len(diff), 'within tolerance')}"
            + (f" (largest |gap| there {diff[close].abs().max():.4f})" if close.any() else ""))
    return ours, _seeds(wide.reset_index()), _share(int(close.sum()), len(diff))


@rule("absolute",
      "an absolute value of the paper's model: compared at the paper's profile only (agreement within "
      f"max(2 std, {REL_TOL:.0%})); inconclusive at a stand-in scale")
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
        return ours, _seeds(r.central), "inconclusive"
    return ours, _seeds(r.central), _verdict(_agrees(value, first))


@rule("alpha_routing",
      "the paper proposes that attention can learn α_tt ≈ 1 and reports no measurement of it: new "
      "evidence. It counts for the proposal if "
      f"attn_only has a layer whose heads average α_tt ≥ {ALPHA_NEAR_ONE} (mean over seeds) and attends "
      "to itself more than full does (the control), against it otherwise")
def _alpha(r: _Records, rows):
    if not r.has(("attn_only", "full")):
        return None
    frame = r.central[r.central.variant.isin(["attn_only", "full"])]
    table = analysis.alpha_summary(frame).groupby("variant")[["mean", "max_head", "max_layer"]].mean()
    block = int(frame.block_size.iloc[0])
    uniform = analysis.uniform_causal_alpha(block)
    attn, full = table.loc["attn_only"], table.loc["full"]
    ok = attn["max_layer"] >= ALPHA_NEAR_ONE and attn["mean"] > full["mean"]
    ours = (("for" if ok else "against") + " the proposal: "
            f"attn_only mean α_tt {attn['mean']:.3f} (best layer {attn['max_layer']:.3f}, best head "
            f"{attn['max_head']:.3f}); full {full['mean']:.3f} ({full['max_layer']:.3f}, {full['max_head']:.3f}); "
            f"uniform causal attention {uniform:.3f}")
    return ours, _seeds(frame), "new evidence"


@rule("undefined",
      "the paper's summary does not define this quantity, so no record can test it",
      needs_records=False)
def _undefined(r: _Records, rows):
    return "—", "—", "not testable here"


@rule("mixer_test",
      "the paper's own test was inconclusive. Here the share of the ffn_only − attn_only gap the "
      "position-blind mixer (uniform causal averaging in place of attention, attention residual kept) "
      "closes is measured under controlled conditions, beside the share its no-mixing control (the same "
      "layers without the averaging, so no path between positions) closes: what the mixer closes beyond "
      "the control is what cross-position mixing buys. New evidence on the routing hypothesis, not a "
      "reproduction", central=False)
def _mixer(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only", "mixer")):
        return None
    c = r.central
    means = r.means()
    gap = means["ffn_only"] - means["attn_only"]
    closed = (means["ffn_only"] - means["mixer"]) / gap
    above = analysis.welch_gap(c[c.variant == "mixer"].final_val_loss, c[c.variant == "attn_only"].final_val_loss)
    below = analysis.welch_gap(c[c.variant == "ffn_only"].final_val_loss, c[c.variant == "mixer"].final_val_loss)
    between = "ci_low" in above and "ci_low" in below and above["ci_low"] > 0 and below["ci_low"] > 0
    ours = (f"mixer {_fmt(means['mixer'])} (attn_only {_fmt(means['attn_only'])}, ffn_only {_fmt(means['ffn_only'])}): "
            f"closes {closed:.0%} of the ffn_only − attn_only gap"
            + ("; both Welch 95% intervals exclude 0" if between else ""))
    if "pointwise" in means:
        control = (means["ffn_only"] - means["pointwise"]) / gap
        ours += (f"; the no-mixing control {_fmt(means['pointwise'])} closes {control:.0%}, so mixing itself "
                 f"closes {closed - control:.0%}")
    else:
        ours += "; no record of the no-mixing control yet"
    return ours, _seeds(c[c.variant == "mixer"]), "new evidence"


@rule("intermediate_reproduction",
      f"the paper's {_PAPER_ANOMALY.value:.3f} ± {_PAPER_ANOMALY['std']:.3f} was an "
      "anomaly of one environment. If attn_only's "
      f"seed-to-seed std here is below {SEED_SPREAD} nats the seeds agree with the "
      f"paper's confirmed (controlled) result; a spread of {SEED_SPREAD} or more "
      "reproduces the anomaly")
def _intermediate(r: _Records, rows):
    attn = r.central[r.central.variant == "attn_only"]
    if len(attn) < 2:
        return None
    std = attn.final_val_loss.std()
    verdict = "reproduced" if std >= SEED_SPREAD else "agrees with the paper's confirmed result"
    ours = (f"attn_only {_fmt(attn.final_val_loss.mean())} ± {_fmt(std)}"
            + (": seed-stable, as in the paper's controlled sweep; the anomaly's large spread does not appear"
               if std < SEED_SPREAD else ": a large seed spread, like the anomaly's"))
    return ours, _seeds(attn), verdict


@rule("nondeterministic_repeats",
      f"reproduced if non-deterministic repeats of one seed differ by more than "
      f"{SPREAD_TOL} nats while deterministic repeats are identical. On a CPU, where "
      "kernels are deterministic whatever the flag, identical repeats mean not testable "
      "here", central=False)
def _nondeterministic(r: _Records, rows):
    attn = r.all[(r.all.variant == "attn_only") & (r.all.eval_mode == "fixed") & (r.all.gain == 1.0)
                 & (r.all.init_noise == 0)]
    repeated = attn[~attn.deterministic.astype(bool)]
    first = attn[attn.seed == repeated.seed.iloc[0]] if len(repeated) else attn
    nondet = first[~first.deterministic.astype(bool)]
    det = first[first.deterministic.astype(bool)]
    if len(nondet) < 2:
        return None
    nd_spread = nondet.final_val_loss.max() - nondet.final_val_loss.min()
    d_spread = det.final_val_loss.max() - det.final_val_loss.min() if len(det) >= 2 else math.nan
    devices = sorted(set(nondet.device))
    ours = (f"non-deterministic {', '.join(_fmt(x, 4) for x in sorted(nondet.final_val_loss))} (spread {nd_spread:.4f}); "
            f"deterministic spread {_fmt(d_spread, 4)}; device {', '.join(devices)}")
    if nd_spread == 0 and all(not d.startswith("cuda") for d in devices):
        return (ours + ": the repeats are bitwise equal, since CPU kernels are deterministic whether or not the "
                "flag asks for it", _seeds(nondet), "not testable here")
    ok = nd_spread > SPREAD_TOL and not (d_spread > 0)
    return ours, _seeds(nondet), _verdict(ok)


@rule("eval_noise_explains",
      "the paper proposes that fixed validation batches explain why its nanoGPT runs put AttnOnly at the "
      "floor and its controlled runs did not. Every central record re-evaluates its final model on fresh "
      "random batches: random evaluation could explain the discrepancy only if it moved a final loss by a "
      f"sizeable share of it. Not reproduced if its largest deviation is below {NOISE_SHARE:.0%} of the "
      "discrepancy and it never ranks attn_only above ffn_only; reproduced if a deviation reaches the "
      "discrepancy; inconclusive in between")
def _eval_noise(r: _Records, rows):
    noise = analysis.val_estimates(r.central)
    if noise.empty or not {"attn_only", "ffn_only"} <= set(noise.variant):
        return None
    discrepancy = float(rows.iloc[0]["value"])
    sd, largest = float(noise.deviation.std()), float(noise.deviation.abs().max())
    misorder = analysis.misorder_probability(noise, "attn_only", "ffn_only")
    ours = (f"random evaluation moves a final loss by sd {sd:.3f} nats (largest {largest:.3f}, "
            f"{largest / discrepancy:.1%} of the {discrepancy:.2f}-nat discrepancy between the paper's nanoGPT and "
            f"controlled values) and misorders attn_only "
            f"and ffn_only in {misorder:.0%} of draws")
    if largest >= discrepancy:
        verdict = "reproduced"
    elif largest < NOISE_SHARE * discrepancy and misorder == 0:
        verdict = "not reproduced"
    else:
        verdict = "inconclusive"
    return ours, _seeds(r.central), verdict


@dataclass(frozen=True)
class Claim:
    """A claim of the paper as the pages name it, and the rule that judges it."""

    title: str
    rule: str
    #: Shown under the title in the grid: what the paper itself later made of the claim.
    note: str = ""


#: Every claim of ``paper_claims.csv``: its short name (the chapters' and the verdict lists')
#: and its rule in :data:`RULES`.
CLAIMS: dict[str, Claim] = {
    "joint_collapse_10m": Claim("Joint collapse of the partial variants (10M)", "joint_collapse",
                                "the paper's initial observation, replaced by its controlled runs"),
    "joint_collapse_124m": Claim("Joint collapse of the partial variants (124M)", "joint_collapse"),
    "layer0_starved_attn_only": Claim("Block-0 gradient starvation: AttnOnly", "layer0_starved",
                                      "measured in the paper's runs in which AttnOnly had collapsed"),
    "layer0_starved_ffn_only": Claim("Block-0 gradient starvation: FFNOnly", "layer0_starved"),
    "layer0_starved_no_residual": Claim("Block-0 gradient starvation: NoResidual", "layer0_starved"),
    "layer0_full": Claim("Full keeps a block-0 gradient", "layer0_full"),
    "hidden_norm_growth": Claim("Hidden-norm growth / drift: AttnOnly > FFNOnly", "hidden_norm_growth"),
    "gain_confound": Claim("Runtime gain is a confound", "gain_confound"),
    "asymmetry_10m": Claim("The asymmetry: AttnOnly recovers, FFNOnly does not", "asymmetry"),
    "ffn_collapse_10m": Claim("FFNOnly collapses in every seed", "ffn_collapse"),
    "ffn_vs_no_residual": Claim("FFNOnly ≈ NoResidual", "ffn_vs_no_residual"),
    "ratio_10m": Claim(f"FFNOnly/AttnOnly ratio {paper.value('ratio_10m', 'ffn_only/attn_only', 'ratio'):.2f}×",
                       "absolute"),
    "seeds_124m": Claim("AttnOnly's seed spread at 124M", "absolute"),
    "alpha_routing": Claim("Routing: AttnOnly learns α_tt ≈ 1", "alpha_routing"),
    "asymmetry_by_scale": Claim(
        "Asymmetry +{:.1f}% (124M) vs +{:.1f}% (10M)".format(
            *(paper.value("asymmetry_by_scale", "attn_only-ffn_only", f"relative_gap_percent_{scale}")
              for scale in ("124m", "10m"))), "undefined"),
    "mixer_test": Claim("The mixer test", "mixer_test"),
    "intermediate_reproduction": Claim(
        f"The intermediate reproduction ({_PAPER_ANOMALY.value:.3f} ± {_PAPER_ANOMALY['std']:.3f})",
        "intermediate_reproduction"),
    "nondeterministic_repeats": Claim("Non-deterministic repeats differ", "nondeterministic_repeats"),
    "original_record": Claim("The originally recorded values", "absolute"),
    "eval_noise_explains": Claim("Fixed batches explain the nanoGPT discrepancy", "eval_noise_explains"),
}
TITLES = {name: claim.title for name, claim in CLAIMS.items()}


def _paper_text(rows: pd.DataFrame) -> str:
    parts = []
    for _, row in rows.iterrows():
        value = f"{row['value']:g}" + (f" ± {row['std']:g}" if not pd.isna(row["std"]) else "")
        if not pd.isna(row.get("std_kind")) and not pd.isna(row["std"]):
            value += f" ({row['std_kind']} std)"
        parts.append(f"{row['variant']} {row['quantity'].replace('_', ' ')}: {value}")
    return "; ".join(parts)


def _paper_notes(rows: pd.DataFrame) -> str:
    notes = [str(n) for n in rows["note"] if not pd.isna(n)]
    if any(not pd.isna(i) and "seeds" in str(i) for i in rows["inferred"]):
        notes.append("the seed is inferred, not stated in the summary")
    return "; ".join(dict.fromkeys(notes))


def scale_note(results_dir: str | Path | None = None, stand_in: str = "cpu") -> str:
    """One paragraph saying what the ``stand_in`` rows are: the size of its model (from its
    records) against the paper's 10M, and which claims wait for paper-scale records."""
    records = load_records(results_dir or default_results_dir())
    sizes = records[(records.profile == stand_in) & (records.variant == "full")]["n_params"]
    size = f"a {sizes.max() / 1e6:.2g}M-parameter" if len(sizes) else "a small"
    missing = [p for p in PAPER_SCALE if not (records.profile == p).any()]
    waiting = (f"There are no {' or '.join(f'`{p}`' for p in missing)} records yet, so every row at "
               f"{'that profile' if len(missing) == 1 else 'those profiles'} that records could decide reads "
               "`not run at this scale`."
               if missing else "Records exist at both paper profiles.")
    twin = DROPOUT_TWIN.get(stand_in)
    dropout = ""
    if twin:
        variants = sorted(set(controlled(records[records.profile == twin]).variant))
        have = (f"its records so far cover {', '.join(variants)}" if variants else "it has no records yet")
        dropout = (f" The `{twin}` rows train the same model with dropout 0.2 ({have}). `{stand_in}` follows "
                   f"nanoGPT's CPU recipe, which has no dropout; `paper-10m` follows nanoGPT's shakespeare_char "
                   f"recipe, whose dropout is 0.2 (the summary itself states no dropout). Dropout is the only "
                   f"setting in which the two stand-ins differ, so `{twin}` is the closer analogue of `paper-10m` "
                   f"wherever regularisation can matter, as it does for whether FFNOnly leaves the floor; claims "
                   f"that need runs other than the central sweep's (the gain, the mixer, random evaluation) are "
                   f"judged at `{stand_in}` only.")
    return (f"**Scale.** The `{stand_in}` rows come from {size} stand-in for the paper's 10M model, "
            f"trained on the same character corpus. They test the paper's qualitative claims (who collapses, "
            f"who recovers, which confound matters); its absolute 10M and 124M numbers are checked only at "
            f"`paper-10m` and `paper-124m`.{dropout} {waiting}" + _diverged_note(records)
            + _off_recipe_note(records))


def _off_recipe_note(records: pd.DataFrame) -> str:
    lines = off_recipe_lines(records)
    if not lines:
        return ""
    return (f" {len(lines)} record{'s are' if len(lines) > 1 else ' is'} not part of {'their' if len(lines) > 1 else 'its'} "
            f"profile (a field was overridden when it was trained) and left out of every verdict: "
            + "; ".join(lines) + ".")


def _diverged_note(records: pd.DataFrame) -> str:
    bad = diverged(records)
    if not len(bad):
        return ""
    runs = "; ".join(f"{r.profile} {r.variant} seed {r.seed}" for r in bad.itertuples())
    return (f" {len(bad)} run{'s' if len(bad) > 1 else ''} diverged (non-finite loss) and "
            f"{'are' if len(bad) > 1 else 'is'} left out of every verdict: {runs}.")


def build(results_dir: str | Path | None = None, stand_in: str = "cpu", records: pd.DataFrame | None = None
          ) -> pd.DataFrame:
    """The scorecard: for every claim of :func:`residual_lib.paper.claims` and every profile
    of its scale (``stand_in`` being the small profile that stands in for 10M), the paper's
    values, ours, the seeds, the verdict and the rule applied. Rows come in the order of
    the claims file, then of :func:`profiles_for_scale`. ``records``: the frame of
    :func:`residual_lib.records.load_records`, when the caller has it already."""
    if records is None:
        records = load_records(results_dir or default_results_dir())
    records = usable(records)  # a diverged run has no losses to judge (scale_note lists it)
    claims = paper.claims()
    rows = []
    for claim, group in claims.groupby("claim", sort=False):
        applied = RULES[CLAIMS[claim].rule]
        for scale in dict.fromkeys(group["scale"]):
            part = group[group.scale == scale]
            for profile in profiles_for_scale(scale, stand_in, applied.central):
                r = _Records(records, profile)
                result = applied.check(r, part) if len(r.all) or not applied.needs_records else None
                ours, seeds, verdict = result if result else ("—", "—", "not run at this scale")
                rows.append({"claim": claim, "scale": scale, "section": part["section"].iloc[0],
                             "statement": part["statement"].iloc[0], "paper": _paper_text(part),
                             "paper_note": _paper_notes(part), "profile": profile, "ours": ours, "seeds": seeds,
                             "verdict": verdict, "rule": applied.text if result else ""})
    table = pd.DataFrame(rows)
    assert set(table.verdict) <= set(VERDICTS)
    return table


@dataclass(frozen=True)
class Threshold:
    """A number a verdict rule compares with: the module constant ``name``, what it means,
    the plausible alternatives :func:`sensitivity` tries, and the commit that set its
    present value (with its time, ISO 8601), so that a reader can see whether it was set
    before or after the records it judges (a test checks these against the history when it
    is there)."""

    name: str
    meaning: str
    alternatives: tuple[float, ...]
    set_on: str
    commit: str

    @property
    def value(self) -> float:
        return globals()[self.name]


#: Every threshold that decides a verdict.
THRESHOLDS = (
    Threshold("FLOOR_TOL", "nats either side of the floor that count as at the floor", (0.02, 0.10),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("RECOVERY_MARGIN", "nats below the floor (and below ffn_only) that count as recovered", (0.25, 1.0),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("LAYER0_ZERO", "block-0 gradient norm that counts as the paper's 0.000", (1e-4, 1e-3),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("LAYER0_FROM", "share of training after which block 0 is read (the paper's step 300)", (0.03, 0.12),
              "2026-12-03T04:48:36+00:00", "5380c9f"),
    Threshold("GAIN_TOL", "nats within which gains count as equivalent", (0.02, 0.10), "2026-12-02T11:41:02+00:00",
              "8008129"),
    Threshold("SEED_SPREAD", "seed-to-seed std that counts as a large spread", (0.05, 0.2),
              "2026-12-03T04:48:36+00:00", "5380c9f"),
    Threshold("SPREAD_TOL", "run-to-run spread that counts as the repeats differ", (0.005, 0.02),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("ALPHA_NEAR_ONE", "α_tt that counts as ≈ 1", (0.8, 0.95), "2026-12-03T04:48:36+00:00",
              "5380c9f"),
    Threshold("REL_TOL", "relative agreement with a paper number at its own profile", (0.01, 0.05),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("DRIFT_REL", "relative agreement of a drift figure with the paper's", (0.05, 0.2),
              "2026-12-03T16:56:55+00:00", "54b7525"),
    Threshold("NOISE_SHARE", "share of a discrepancy below which evaluation noise cannot explain it", (0.05, 0.2),
              "2026-12-03T16:56:55+00:00", "54b7525"),
)


class thresholds:
    """Within ``with thresholds(FLOOR_TOL=0.02): ...`` the rules use the given values."""

    def __init__(self, **values):
        unknown = set(values) - {t.name for t in THRESHOLDS}
        if unknown:
            raise ValueError(f"unknown threshold(s) {', '.join(sorted(unknown))}: choose from "
                             f"{', '.join(t.name for t in THRESHOLDS)}")
        self.values, self.saved = values, {}

    def __enter__(self):
        self.saved = {name: globals()[name] for name in self.values}
        globals().update(self.values)
        return self

    def __exit__(self, *exc):
        globals().update(self.saved)


def sensitivity(results_dir: str | Path | None = None, stand_in: str = "cpu", records: pd.DataFrame | None = None,
                table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every verdict recomputed at each alternative of every threshold: one row per
    threshold and alternative, with the verdicts that change (``changes``: a list of
    ``(claim, profile, before, after)``)."""
    if records is None:
        records = load_records(results_dir or default_results_dir())
    base = build(stand_in=stand_in, records=records) if table is None else table
    base = base.set_index(["claim", "profile"])["verdict"]
    rows = []
    for t in THRESHOLDS:
        for alt in t.alternatives:
            with thresholds(**{t.name: alt}):
                other = build(stand_in=stand_in, records=records).set_index(["claim", "profile"])["verdict"]
            changed = [(c, p, base[(c, p)], other[(c, p)]) for c, p in base.index if base[(c, p)] != other[(c, p)]]
            rows.append({"threshold": t.name, "meaning": t.meaning, "value": t.value, "alternative": alt,
                         "set_on": t.set_on, "commit": t.commit, "changes": changed})
    return pd.DataFrame(rows)


def threshold_table(sensitivity_table: pd.DataFrame, records: pd.DataFrame, stand_in: str = "cpu") -> pd.DataFrame:
    """One row per threshold for the scorecard page: its value, meaning, the alternatives
    tried and what each changes, and when it was set against when the stand-in records it
    judges were made (their ``provenance.finished_at``)."""
    from .records import read_record

    judged = records[records.profile.isin(stand_ins(stand_in))]
    made = pd.to_datetime(pd.Series([read_record(p)["provenance"].get("finished_at") for p in judged.path],
                                    dtype=object), utc=True)
    rows = []
    for name, group in sensitivity_table.groupby("threshold", sort=False):
        first = group.iloc[0]
        effects = []
        for alt, changes in zip(group.alternative, group.changes):
            said = "; ".join(f"{TITLES.get(c, c)} at {p}: {a} → {b}" for c, p, a, b in changes)
            effects.append(f"{alt:g}: {said or 'no verdict changes'}")
        set_on = pd.Timestamp(first.set_on)
        before = int((made < set_on).sum())
        when = f"{set_on:%Y-%m-%d %H:%M} UTC, commit {first.commit}"
        if len(made):
            after = int((made >= set_on).sum())
            when += (f": before all {len(made)} stand-in records it judges" if not before else
                     f": after {before} of the {len(made)} stand-in records it judges" + (
                         f" (the other {after} were made later)" if after else ""))
        rows.append({"threshold": name, "meaning": first.meaning, "value": f"{first.value:g}",
                     "at the alternatives": "; ".join(effects), "set": when})
    return pd.DataFrame(rows)


def fragile(sensitivity_table: pd.DataFrame) -> set[tuple[str, str]]:
    """The ``(claim, profile)`` cells whose verdict changes at some plausible threshold."""
    return {(c, p) for changes in sensitivity_table["changes"] for c, p, *_ in changes}


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def _word(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else f"{n:,}"


#: How the count sentence names each verdict (singular, plural).
_COUNTED = {
    "reproduced": ("is reproduced", "are reproduced"),
    "partly reproduced": ("holds in part", "hold in part"),
    "agrees with the paper's confirmed result": ("agrees with the paper's confirmed result instead of its anomaly",
                                                 "agree with the paper's confirmed results instead of its anomalies"),
    "not reproduced": ("is not reproduced", "are not reproduced"),
    "new evidence": ("is new evidence on a question the paper left open",
                     "are new evidence on questions the paper left open"),
    "not testable here": ("cannot be tested with these records", "cannot be tested with these records"),
    "inconclusive": ("is an absolute number of the paper's model, which a smaller stand-in cannot check",
                     "are absolute numbers of the paper's model, which a smaller stand-in cannot check"),
}


def count_sentence(table: pd.DataFrame, profile: str) -> str:
    """The verdicts at ``profile`` in a sentence: how many claims it checks and what became of them."""
    checked = table[(table.profile == profile) & (table.verdict != "not run at this scale")]
    claims = table.claim.nunique()
    counts = checked.drop_duplicates("claim").verdict.value_counts()
    parts = [f"{_word(int(counts[v]))} {_COUNTED[v][int(counts[v]) > 1]}" for v in VERDICTS if v in counts]
    if not parts:
        return f"None of the {claims} claims has records at `{profile}` yet."
    listed = parts[0] if len(parts) == 1 else "; ".join(parts[:-1]) + "; and " + parts[-1]
    n = checked.claim.nunique()
    return (f"Of the paper's {claims} claims, {_word(n)} can be checked at `{profile}`"
            + (f" (the other {_word(claims - n)} are about models this profile does not train)" if claims > n else "")
            + f": {listed}.")


def headline(table: pd.DataFrame, records: pd.DataFrame, stand_in: str = "cpu") -> str:
    """The book's outcome in plain words, from the scorecard and the records: the paper's
    central claim, whether the asymmetry held at the stand-in (with its numbers), whether
    FFNOnly collapsed in every seed (with and without dropout), and what waits for a GPU."""
    rows = table.set_index(["claim", "profile"])
    central = controlled(usable(records[records.profile == stand_in]))
    means = central.groupby("variant")["final_val_loss"].mean()
    sizes = central[central.variant == "full"]["n_params"]
    text = ("The paper's central claim is an asymmetry: without its attention residual (FFNOnly) a Pre-LN "
            "transformer collapses to the loss of a model that ignores its input, while without its feed-forward "
            "residual (AttnOnly) it still learns.")
    verdict = rows.verdict.get(("asymmetry_10m", stand_in))
    if verdict and verdict != "not run at this scale" and {"attn_only", "ffn_only"} <= set(means.index):
        size = f"a {sizes.max() / 1e6:.2g}M-parameter stand-in" if len(sizes) else "a small stand-in"
        floor = float(central.eval_floor.iloc[0])
        held = {"reproduced": "holds in every seed", "partly reproduced": "holds in some seeds only",
                "not reproduced": "does not hold"}.get(verdict, "cannot be decided yet")
        text += (f" On {size} trained on two CPU cores it {held}: AttnOnly ends at {means['attn_only']:.3f} nats "
                 f"and FFNOnly at {means['ffn_only']:.3f}, against a floor of {floor:.3f}.")
    collapse = []
    for profile in stand_ins(stand_in):
        row = rows.loc[("ffn_collapse_10m", profile)] if ("ffn_collapse_10m", profile) in rows.index else None
        if row is None or row.verdict == "not run at this scale":
            continue
        ffn = controlled(usable(records[records.profile == profile]))
        ffn = ffn[ffn.variant == "ffn_only"]
        k = int(((ffn.eval_floor - ffn.final_val_loss) > FLOOR_TOL).sum())
        setting = "without dropout" if profile == stand_in else "with dropout 0.2"
        collapse.append((setting, k, len(ffn)))
    if collapse:
        if any(k for _, k, _ in collapse):
            text += (" What does not hold as stated is that FFNOnly collapses in every seed: it leaves the floor in "
                     + " and ".join(f"{k} of {n} seeds {setting}" for setting, k, n in collapse) + ".")
        else:
            text += (" FFNOnly stays at the floor in every seed ("
                     + " and ".join(f"{n} seeds {setting}" for setting, k, n in collapse) + ").")
    missing = [p for p in PAPER_SCALE if not (records.profile == p).any()]
    if missing:
        text += (" The paper's own 10M and 124M runs wait for a GPU, so its absolute numbers are not checked yet."
                 if len(missing) == 2 else f" The `{missing[0]}` runs wait for a GPU.")
    return text


#: Each verdict's symbol and short label in the verdict grid (a symbol as well as a colour,
#: so the grid reads without colour too); the CSS classes are ``v-<slug>``.
GRID_LABELS = {
    "reproduced": ("✓", "reproduced"),
    "partly reproduced": ("◐", "partly"),
    "agrees with the paper's confirmed result": ("✓", "agrees with the confirmed result"),
    "not reproduced": ("✗", "not reproduced"),
    "new evidence": ("★", "new evidence"),
    "not testable here": ("∅", "not testable here"),
    "inconclusive": ("?", "inconclusive"),
    "not run at this scale": ("·", "not run at this scale"),
}


def verdict_slug(verdict: str) -> str:
    return "v-" + "".join(c if c.isalnum() else "-" for c in verdict.lower()).strip("-").replace("--", "-")


def grid(table: pd.DataFrame, stand_in: str = "cpu") -> pd.DataFrame:
    """The verdict grid: one row per claim (its title, in the claims file's order), one
    column per profile (the stand-in, paper-10m, paper-124m); empty where a claim is not
    checked at that profile. Where a claim has rows at two scales for one profile (e.g.
    10M and 124M values of one claim), the first is shown."""
    columns = [*stand_ins(stand_in), "paper-10m", "paper-124m"]
    out = table.drop_duplicates(["claim", "profile"]).pivot(index="claim", columns="profile", values="verdict")
    out = out.reindex(index=list(dict.fromkeys(table.claim)), columns=columns)
    out.index = [TITLES.get(c, c) for c in out.index]
    return out


def claim_anchor(claim: str) -> str:
    """The id of a claim's block on the scorecard page."""
    return "claim-" + claim.replace("_", "-")


def badge(verdict: str) -> str:
    """A verdict as an inline HTML badge: its symbol and label, coloured by verdict."""
    import html

    symbol, label = GRID_LABELS[verdict]
    return (f'<span class="verdict {verdict_slug(verdict)}" title="{html.escape(verdict)}">'
            f'<span class="verdict-symbol" aria-hidden="true">{symbol}</span> {html.escape(label)}</span>')


def grid_html(frame: pd.DataFrame, link: str = "scorecard.html", fragile_cells: set | None = None) -> str:
    """:func:`grid` as an HTML table: each cell a symbol and a short label, classed by
    verdict; each claim links to its block on the scorecard page (``link``). A cell of
    ``fragile_cells`` (``(claim, profile)`` pairs, :func:`fragile`) is marked: its verdict
    changes at a plausible value of a threshold."""
    import html

    ids = {title: claim for claim, title in TITLES.items()}
    fragile_cells = fragile_cells or set()
    head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in frame.columns)
    rows = []
    for claim, verdicts in frame.iterrows():
        cells = []
        for profile, verdict in verdicts.items():
            if not isinstance(verdict, str):
                cells.append('<td class="verdict-none" title="not a claim at this profile">—</td>')
                continue
            symbol, label = GRID_LABELS[verdict]
            shaky = (ids.get(claim, claim), profile) in fragile_cells
            mark = ('<span class="verdict-fragile" title="changes at a plausible threshold: see the threshold table">'
                    ' fragile</span>' if shaky else "")
            cells.append(f'<td class="verdict {verdict_slug(verdict)}" title="{html.escape(verdict)}">'
                         f'<span class="verdict-symbol" aria-hidden="true">{symbol}</span>'
                         f'<span class="verdict-label"> {html.escape(label)}</span>{mark}</td>')
        name = html.escape(str(claim)).replace("/", "/<wbr>")  # "FFNOnly/AttnOnly" breaks on a phone
        if claim in ids:
            name = f'<a href="{link}#{claim_anchor(ids[claim])}">{name}</a>'
            note = CLAIMS[ids[claim]].note
            name += f'<span class="claim-note">{html.escape(note)}</span>' if note else ""
        rows.append(f"<tr><th scope=\"row\">{name}</th>{''.join(cells)}</tr>")
    return (f'<div class="table-scroll"><table class="verdict-grid" id="verdict-grid"><thead><tr>'
            f'<th scope="col">claim</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def claims_html(table: pd.DataFrame) -> str:
    """Every claim of :func:`build` as a block that fits the text column: its title and
    verdicts (always visible), then, expandable, the paper's statement and values, ours per
    profile, and the rule. Each block's id is :func:`claim_anchor`."""
    import html

    blocks = []
    order = {p: i for i, p in enumerate(["paper-10m", "paper-124m"])}
    for claim, rows in table.groupby("claim", sort=False):
        rows = rows.sort_values("profile", key=lambda c: c.map(lambda p: order.get(p, -1)), kind="stable")
        first = rows.iloc[0]  # the small stand-in first: the profile with records
        verdicts = " ".join(f'<span class="claim-verdict"><span class="claim-profile">{html.escape(r.profile)}'
                            f"</span> {badge(r.verdict)}</span>" for r in rows.itertuples())
        per_profile = "".join(
            f"<tr><th scope=\"row\">{html.escape(r.profile)}</th><td>{badge(r.verdict)}</td>"
            f"<td>{html.escape(str(r.ours))}</td><td>{html.escape(str(r.seeds))}</td></tr>"
            for r in rows.itertuples())
        rule = next((r for r in rows.rule if r), "")
        note = f"<p><em>About the paper's values:</em> {html.escape(first.paper_note)}</p>" if first.paper_note else ""
        blocks.append(
            f'<details class="claim-block" id="{claim_anchor(claim)}">'
            f'<summary><span class="claim-title">{html.escape(TITLES.get(claim, claim))}</span>'
            f'<span class="claim-verdicts">{verdicts}</span></summary>'
            f'<p><em>The paper (section {html.escape(str(first.section))}):</em> {html.escape(first.statement)}</p>'
            f"<p><em>The paper's values:</em> {html.escape(first.paper)}</p>{note}"
            f'<div class="table-scroll"><table class="claim-rows"><thead><tr><th scope="col">profile</th>'
            f'<th scope="col">verdict</th><th scope="col">ours</th><th scope="col">seeds</th></tr></thead>'
            f"<tbody>{per_profile}</tbody></table></div>"
            + (f"<p><em>Rule:</em> {html.escape(rule)}</p>" if rule else "") + "</details>")
    return f'<div class="claim-blocks" id="scorecard-claims">{"".join(blocks)}</div>'


def verdict_box(claims: list[str], records: pd.DataFrame, table: pd.DataFrame | None = None):
    """The box that opens a chapter (an IPython ``HTML`` object): the verdict of each of
    ``claims`` at the page's profile with what the records show, each linking to its block on
    the scorecard page, and one line on what the page shows (profile, seeds and number of
    records). ``records`` are the page's, as :func:`residual_lib.sections.notebook_records`
    returns them: their ``attrs`` name the profile and the results folder."""
    import html

    from IPython.display import HTML

    profile, results_dir = records.attrs["profile"], records.attrs["results_dir"]
    table = build(results_dir, stand_in=profile) if table is None else table
    profiles = stand_ins(profile)
    rows = table[table.claim.isin(claims) & table.profile.isin(profiles)
                 & ((table.profile == profile) | (table.verdict != "not run at this scale"))]
    items = []
    for claim in claims:
        for row in rows[rows.claim == claim].itertuples():
            where = f" <code>{html.escape(row.profile)}</code>" if row.profile != profile else ""
            items.append(f'<li>{badge(row.verdict)}{where} <a href="../book/scorecard.html#{claim_anchor(claim)}">'
                         f"{html.escape(TITLES.get(claim, claim))}</a>. {html.escape(str(row.ours))}.</li>")
    shown = ""
    left_out = records.attrs.get("diverged") or []
    if left_out:
        runs = f"{len(left_out)} run{'s' if len(left_out) > 1 else ''}"
        shown += (f'<p class="verdict-box-scope"><strong>Left out:</strong> {runs} that diverged '
                  f"(non-finite loss): {html.escape('; '.join(left_out))}.</p>")
    if len(records):
        seed_list = sorted(set(int(x) for x in records.seed))
        seeds = ("seed " if len(seed_list) == 1 else "seeds ") + ", ".join(map(str, seed_list))
        n_runs = f"{len(records)} run{'s' if len(records) != 1 else ''}"
        shown += (f'<p class="verdict-box-scope">This page shows the <code>{html.escape(profile)}</code> profile\'s '
                 f"records: {n_runs}, {seeds}, read from <code>results/{html.escape(profile)}/"
                 f"</code>. The verdict rules and the other profiles are on the "
                 f'<a href="../book/scorecard.html">scorecard</a>.</p>')
    title = " and ".join(f"<code>{html.escape(p)}</code>" for p in profiles if (rows.profile == p).any()) or \
        f"<code>{html.escape(profile)}</code>"
    return HTML(f'<div class="verdict-box"><p class="verdict-box-title">Verdicts at {title}'
                f'</p><ul>{"".join(items)}</ul>{shown}</div>')
