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
* ``not testable here`` -- the records exist but the claim cannot be tested with them
  (a platform effect, or a quantity the paper does not define);
* ``inconclusive`` -- an absolute number of the paper's model, against a smaller stand-in;
* ``not run at this scale`` -- no records at a profile of the claim's scale.

Scales: a 10M claim is checked at ``paper-10m`` (the paper's setting) and at ``cpu``
(a ~0.8M-parameter stand-in); a 124M claim only at ``paper-124m``.

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
from .records import controlled, diverged, load_records, usable

FLOOR_TOL = 0.05  # nats either side of the evaluation floor: "at the floor"
RECOVERY_MARGIN = 0.5  # nats below the floor: "recovers"
REL_TOL = 0.02  # agreement with a paper number at the paper's own profile
SPREAD_TOL = 0.01  # run-to-run spread that counts as "the runs differ"
GAIN_TOL = 0.05  # final-loss spread across gains that counts as "equivalent"
SEED_SPREAD = 0.1  # seed-to-seed std that counts as "a large spread" (the paper's anomaly: 0.544, paper_claims.csv)
ALPHA_NEAR_ONE = 0.9  # alpha_tt that counts as "~1"
LAYER0_ZERO = analysis.LAYER0_ZERO
PARTIAL = ("attn_only", "ffn_only", "no_residual")

VERDICTS = ("reproduced", "partly reproduced", "agrees with the paper's confirmed result", "not reproduced",
            "new evidence", "not testable here", "inconclusive", "not run at this scale")
PAPER_SCALE = {"paper-10m": "10M", "paper-124m": "124M"}


def profiles_for_scale(scale: str, stand_in: str = "cpu") -> tuple[str, ...]:
    """Profiles at which a claim of ``scale`` (10M, 124M or both) is checked."""
    return {"10M": ("paper-10m", stand_in), "124M": ("paper-124m",),
            "both": ("paper-10m", stand_in, "paper-124m")}[scale]


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
    ``(ours, seeds, verdict)``, or None when the records cannot answer."""

    name: str
    text: str
    check: Callable


#: Every rule, by name, in the order they are defined below.
RULES: dict[str, Rule] = {}


def rule(name: str, text: str):
    """Register the decorated check as rule ``name``, with ``text``."""
    def register(check):
        RULES[name] = Rule(name, text, check)
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
        self.all = frame[frame.profile == profile]
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
      "how a loss is measured, not what is trained: its noise is shown beside the verdict")
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
    table = analysis.layer0_after(frame).sort_values("seed")
    starved = table["median"] < LAYER0_ZERO
    at_floor = dict(zip(frame.seed, (frame.final_val_loss - r.floor).abs() <= FLOOR_TOL))
    tracks = all(bool(at_floor.get(s)) == bool(st) for s, st in zip(table.seed, starved))
    per_seed = ", ".join(f"{s}: {m:.0e}" for s, m in zip(table.seed, table["median"]))
    ours = (f"median {table['median'].median():.1e} (per seed {per_seed}); "
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
    table = analysis.layer0_after(frame)
    ok = bool((table["median"] > LAYER0_ZERO).all())
    ours = f"median {table['median'].median():.3f} (mean {table['mean'].mean():.3f})"
    if r.profile in PAPER_SCALE:
        ok = ok and _agrees(float(table["mean"].mean()), rows.iloc[0])
    return ours, _seeds(frame), _verdict(ok)


@rule("hidden_norm_growth",
      "the paper does not define its growth or drift figures; each plausible definition is "
      "computed (chapter 7). Reproduced if attn_only > ffn_only under every definition (means "
      "over the central seeds), not reproduced if ffn_only ≥ attn_only under every one, "
      "inconclusive if the definitions disagree")
def _growth(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only")):
        return None
    frame = r.central[r.central.variant.isin(["attn_only", "ffn_only", "full"])]
    table = analysis.growth_definitions(frame).groupby(["definition", "variant"], sort=False)["value"].mean().unstack()
    higher = (table["attn_only"] > table["ffn_only"])
    ours = (f"attn_only > ffn_only under {int(higher.sum())} of {len(table)} definitions; e.g. "
            + "; ".join(f"{d}: attn_only {table.loc[d, 'attn_only']:.2f}, ffn_only {table.loc[d, 'ffn_only']:.2f}"
                        for d in list(table.index)[:2]))
    verdict = "reproduced" if higher.all() else "not reproduced" if not higher.any() else "inconclusive"
    return ours, _seeds(frame), verdict


@rule("gain_confound",
      f"the final losses of all gains lie within {GAIN_TOL} nats of each other, and the training "
      f"curves come within {GAIN_TOL} of each other within the paper's ~{_PAPER_GAIN_STEPS:.0f} steps "
      f"(read as a share of a {analysis.PAPER_10M_STEPS:,}-step run, an assumption): reproduced if "
      "both, partly reproduced if only the final "
      "losses agree")
def _gain(r: _Records, rows):
    gains = r.all[(r.all.eval_mode == "fixed") & (r.all.replicate == 0) & (r.all.variant == "attn_only")
                  & (r.all.init_noise == 0)]
    if len(gains):  # the seed the gain sweep was run at: the one with the most gains
        gains = gains[gains.seed == gains.groupby("seed")["gain"].nunique().idxmax()]
    if gains.gain.nunique() < 2:
        return None
    by_gain = gains.groupby("gain")["final_val_loss"].mean()
    spread = by_gain.max() - by_gain.min()
    _, merged = analysis.gain_equivalence(analysis.curves(gains, "train"), GAIN_TOL)
    paper_steps = float(rows[rows.quantity == "steps_to_equivalence"]["value"].iloc[0])
    within = int(round(paper_steps / analysis.PAPER_10M_STEPS * int(gains.steps.iloc[0])))
    ours = (f"final-loss spread {spread:.3f} over gains {', '.join(f'{g:g}' for g in by_gain.index)}; "
            f"training curves within {GAIN_TOL} from step {merged if merged is not None else '—'} of "
            f"{int(gains.steps.iloc[0]):,} (the paper's {paper_steps:.0f} of {analysis.PAPER_10M_STEPS:,} is step "
            f"{within} here)")
    final_ok, fast = spread <= GAIN_TOL, merged is not None and merged <= within
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
      "of the floor in every seed, not reproduced if any seed escapes (the row counts them)")
def _ffn_collapse(r: _Records, rows):
    if not r.has(("ffn_only",)):
        return None
    ffn = r.central[r.central.variant == "ffn_only"].sort_values("seed")
    at_floor = (ffn.final_val_loss - r.floor).abs() <= FLOOR_TOL
    escaped = ffn[~at_floor.to_numpy()]
    ours = (f"ffn_only {_fmt(ffn.final_val_loss.mean())} ± {_fmt(ffn.final_val_loss.std())}, floor {_fmt(r.floor)}; "
            f"{_count(int(at_floor.sum()), len(ffn), 'at the floor')}"
            + (f"; escaped: {', '.join(f'seed {s} ({v:.3f})' for s, v in zip(escaped.seed, escaped.final_val_loss))}"
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
    ours = (f"per seed {', '.join(f'{d:+.3f}' for d in diff)}; {_count(int(close.sum()), len(diff), 'within tolerance')}"
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
      "the paper predicts α_tt ≈ 1 but measured none: new evidence. It counts for the prediction if "
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
    ours = (("for" if ok else "against") + " the prediction: "
            f"attn_only mean α_tt {attn['mean']:.3f} (best layer {attn['max_layer']:.3f}, best head "
            f"{attn['max_head']:.3f}); full {full['mean']:.3f} ({full['max_layer']:.3f}, {full['max_head']:.3f}); "
            f"uniform causal attention {uniform:.3f}")
    return ours, _seeds(frame), "new evidence"


@rule("undefined",
      "the paper's summary does not define this quantity, so no record can test it")
def _undefined(r: _Records, rows):
    if r.central.empty:
        return None
    return "—", _seeds(r.central), "not testable here"


@rule("mixer_test",
      "the paper's own test was inconclusive. Here the share of the ffn_only − attn_only gap the "
      "position-blind mixer (uniform causal averaging in place of attention, attention residual kept) "
      "closes is measured under controlled conditions: new evidence on the routing hypothesis, not a "
      "reproduction")
def _mixer(r: _Records, rows):
    if not r.has(("attn_only", "ffn_only", "mixer")):
        return None
    c = r.central
    means = r.means()
    closed = (means["ffn_only"] - means["mixer"]) / (means["ffn_only"] - means["attn_only"])
    above = analysis.welch_gap(c[c.variant == "mixer"].final_val_loss, c[c.variant == "attn_only"].final_val_loss)
    below = analysis.welch_gap(c[c.variant == "ffn_only"].final_val_loss, c[c.variant == "mixer"].final_val_loss)
    between = "ci_low" in above and "ci_low" in below and above["ci_low"] > 0 and below["ci_low"] > 0
    ours = (f"mixer {_fmt(means['mixer'])} (attn_only {_fmt(means['attn_only'])}, ffn_only {_fmt(means['ffn_only'])}): "
            f"closes {closed:.0%} of the ffn_only − attn_only gap"
            + ("; both Welch 95% intervals exclude 0" if between else ""))
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
      "here")
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
        return ours + ": bitwise equal, as CPU kernels are", _seeds(nondet), "not testable here"
    ok = nd_spread > SPREAD_TOL and not (d_spread > 0)
    return ours, _seeds(nondet), _verdict(ok)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper as the pages name it, and the rule that judges it."""

    title: str
    rule: str


#: Every claim of ``paper_claims.csv``: its short name (the chapters' and the verdict lists')
#: and its rule in :data:`RULES`.
CLAIMS: dict[str, Claim] = {
    "joint_collapse_10m": Claim("Joint collapse of the partial variants (10M)", "joint_collapse"),
    "joint_collapse_124m": Claim("Joint collapse of the partial variants (124M)", "joint_collapse"),
    "layer0_starved_attn_only": Claim("Block-0 gradient starvation: AttnOnly", "layer0_starved"),
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
               f"{'that profile' if len(missing) == 1 else 'those profiles'} reads `not run at this scale`."
               if missing else "Records exist at both paper profiles.")
    return (f"**Scale.** The `{stand_in}` rows come from {size} stand-in for the paper's 10M model, "
            f"trained on the same character corpus. They test the paper's qualitative claims (who collapses, "
            f"who recovers, which confound matters); its absolute 10M and 124M numbers are checked only at "
            f"`paper-10m` and `paper-124m`. {waiting}" + _diverged_note(records))


def _diverged_note(records: pd.DataFrame) -> str:
    bad = diverged(records)
    if not len(bad):
        return ""
    runs = "; ".join(f"{r.profile} {r.variant} seed {r.seed}" for r in bad.itertuples())
    return f" {len(bad)} run(s) diverged (non-finite loss) and are left out of every verdict: {runs}."


def build(results_dir: str | Path | None = None, stand_in: str = "cpu") -> pd.DataFrame:
    """The scorecard: for every claim of :func:`residual_lib.paper.claims` and every profile
    of its scale (``stand_in`` being the small profile that stands in for 10M), the paper's
    values, ours, the seeds, the verdict and the rule applied. Rows come in the order of
    the claims file, then of :func:`profiles_for_scale`."""
    # a diverged run has no losses to judge (scale_note lists it)
    records = usable(load_records(results_dir or default_results_dir()))
    claims = paper.claims()
    rows = []
    for claim, group in claims.groupby("claim", sort=False):
        for scale in dict.fromkeys(group["scale"]):
            part = group[group.scale == scale]
            for profile in profiles_for_scale(scale, stand_in):
                r = _Records(records, profile)
                applied = RULES[CLAIMS[claim].rule]
                result = applied.check(r, part) if len(r.all) else None
                ours, seeds, verdict = result if result else ("—", "—", "not run at this scale")
                rows.append({"claim": claim, "scale": scale, "section": part["section"].iloc[0],
                             "statement": part["statement"].iloc[0], "paper": _paper_text(part),
                             "paper_note": _paper_notes(part), "profile": profile, "ours": ours, "seeds": seeds,
                             "verdict": verdict, "rule": applied.text if result else ""})
    table = pd.DataFrame(rows)
    assert set(table.verdict) <= set(VERDICTS)
    return table


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
    "not run at this scale": ("·", "not run yet"),
}


def verdict_slug(verdict: str) -> str:
    return "v-" + "".join(c if c.isalnum() else "-" for c in verdict.lower()).strip("-").replace("--", "-")


def grid(table: pd.DataFrame, stand_in: str = "cpu") -> pd.DataFrame:
    """The verdict grid: one row per claim (its title, in the claims file's order), one
    column per profile (the stand-in, paper-10m, paper-124m); empty where a claim is not
    checked at that profile. Where a claim has rows at two scales for one profile (e.g.
    10M and 124M values of one claim), the first is shown."""
    columns = [stand_in, "paper-10m", "paper-124m"]
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


def grid_html(frame: pd.DataFrame, link: str = "scorecard.html") -> str:
    """:func:`grid` as an HTML table: each cell a symbol and a short label, classed by
    verdict; each claim links to its block on the scorecard page (``link``)."""
    import html

    ids = {title: claim for claim, title in TITLES.items()}
    head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in frame.columns)
    rows = []
    for claim, verdicts in frame.iterrows():
        cells = []
        for verdict in verdicts:
            if not isinstance(verdict, str):
                cells.append('<td class="verdict-none" title="not a claim at this scale">—</td>')
                continue
            symbol, label = GRID_LABELS[verdict]
            cells.append(f'<td class="verdict {verdict_slug(verdict)}" title="{html.escape(verdict)}">'
                         f'<span class="verdict-symbol" aria-hidden="true">{symbol}</span> {html.escape(label)}</td>')
        name = html.escape(str(claim))
        if claim in ids:
            name = f'<a href="{link}#{claim_anchor(ids[claim])}">{name}</a>'
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
    rows = table[table.claim.isin(claims) & (table.profile == profile)]
    items = []
    for claim in claims:
        for row in rows[rows.claim == claim].itertuples():
            items.append(f'<li>{badge(row.verdict)} <a href="../book/scorecard.html#{claim_anchor(claim)}">'
                         f"{html.escape(TITLES.get(claim, claim))}</a>. {html.escape(str(row.ours))}.</li>")
    shown = ""
    left_out = records.attrs.get("diverged") or []
    if left_out:
        shown += (f'<p class="verdict-box-scope"><strong>Left out:</strong> {len(left_out)} run(s) that diverged '
                  f"(non-finite loss): {html.escape('; '.join(left_out))}.</p>")
    if len(records):
        seeds = ", ".join(str(s) for s in sorted(set(int(x) for x in records.seed)))
        shown += (f'<p class="verdict-box-scope">This page shows the <code>{html.escape(profile)}</code> profile\'s '
                 f"records: {len(records)} run(s), seed(s) {seeds}, read from <code>results/{html.escape(profile)}/"
                 f"</code>. The verdict rules and the other profiles are on the "
                 f'<a href="../book/scorecard.html">scorecard</a>.</p>')
    return HTML(f'<div class="verdict-box"><p class="verdict-box-title">Verdicts at <code>{html.escape(profile)}</code>'
                f'</p><ul>{"".join(items)}</ul>{shown}</div>')
