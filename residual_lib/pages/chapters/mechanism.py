"""What chapter 7 finds: the evidence for the cross-position routing hypothesis (attention's
diagonal mass α_tt, hidden-norm growth, block-0 gradients, the position-blind mixer test) as
the tables and sentences ``notebooks/07_mechanism.py`` shows."""

from __future__ import annotations

import pandas as pd

from ...study import analysis
from .. import scorecard
from ..names import display_name
from ..tables import listing, number

#: The scorecard claims the chapter's verdict box shows.
CLAIMS = ["alpha_routing", "hidden_norm_growth", "mixer_test", "layer0_starved_attn_only", "layer0_starved_ffn_only"]
#: The column of :func:`alpha_table` the mixer finding reads: AttnOnly's best layer.
BEST_LAYER = "best layer (mean over heads)"
ALPHA_COLUMNS = {"mean": "mean α_tt", "max_layer": BEST_LAYER, "max_head": "best head"}
#: The column of :func:`growth_table` that holds the paper's ordering, per definition.
ORDERING = "attn_only > ffn_only"
#: The mixer test's differences: the mixer against both ends of the gap, the control against
#: FFNOnly, and the mixer against its control (what mixing adds).
MIXER_GAPS = [("mixer", "attn_only"), ("ffn_only", "mixer"), ("ffn_only", "pointwise"), ("pointwise", "mixer")]
#: Nats either side of the bigram reference that count as "at the bigram level".
BIGRAM_LEVEL = 0.05


def alpha_table(summary: pd.DataFrame, block_size: int) -> pd.DataFrame:
    """Mean α_tt, best layer and best head per variant (means over seeds of
    :func:`analysis.alpha_summary`), with uniform causal attention as the last row: the value
    attention takes when it spreads evenly and singles out no position, the baseline for ≈ 1."""
    alpha = summary.groupby("variant")[list(ALPHA_COLUMNS)].mean()
    alpha = alpha.reindex(analysis.variant_order(summary)).rename(columns=ALPHA_COLUMNS)
    alpha.loc["uniform causal attention"] = analysis.uniform_causal_alpha(int(block_size))
    return alpha


def alpha_caption(seed: int) -> str:
    """The caption of the α_tt heat map of AttnOnly's run at ``seed``."""
    return (f"Attention diagonal mass α_tt of AttnOnly (seed {seed}), per layer and head: the share of attention each"
            " position puts on itself (1 would be pure self-routing).")


#: The alt text of the α_tt heat map.
ALPHA_ALT = ("Heat map of alpha_tt values between 0 and 1, layers as rows and heads as columns, each cell annotated"
             " with its value.")


def growth_table(growth: pd.DataFrame) -> pd.DataFrame:
    """Every hidden-norm growth definition (rows) per variant (means over seeds of
    :func:`analysis.growth_definitions`), with :data:`ORDERING`, whether AttnOnly's figure
    exceeds FFNOnly's as the paper's does, when both are recorded: the paper names no definition."""
    wide = growth.pivot_table(index="definition", columns="variant", values="value", sort=False)
    wide = wide[[v for v in ("attn_only", "ffn_only", "full") if v in wide]]
    if {"attn_only", "ffn_only"} <= set(wide):
        wide[ORDERING] = wide["attn_only"] > wide["ffn_only"]
    return wide


def _ordering(larger: pd.Series) -> str:
    """The sentence on the paper's ordering, from :data:`ORDERING` per definition."""
    if larger.all():
        return "AttnOnly's figure exceeds FFNOnly's under every definition, as in the paper. "
    if not larger.any():
        return "FFNOnly's figure exceeds AttnOnly's under every definition: the paper's ordering is reversed. "
    return (f"AttnOnly's figure exceeds FFNOnly's under {int(larger.sum())} of the {len(larger)} definitions: the"
            " ordering depends on the definition. ")


#: The headers of :func:`analysis.growth_vs_paper`'s table at the tolerance ``scorecard.DRIFT_REL``.
AGREEMENT_HEADERS = {"ours": "ours (mean)", "paper": "the paper's value", "agrees": f"within {scorecard.DRIFT_REL:.0%}"}


def _seed_range(values: pd.DataFrame | None, variant: str, definition: str) -> tuple[float, float] | None:
    """The smallest and largest seed's value of ``variant`` under ``definition``, from
    :func:`analysis.growth_definitions`' frame; None without it or with one seed."""
    if values is None:
        return None
    part = values[(values.variant == variant) & (values.definition == definition)].value
    return (float(part.min()), float(part.max())) if len(part) > 1 else None


def drift_finding(agreement: pd.DataFrame, growth: pd.DataFrame, records: pd.DataFrame,
                  values: pd.DataFrame | None = None) -> str:
    """Which variants' drift agrees with the paper's (``agreement``: :func:`analysis.growth_vs_paper`
    with a tolerance), with each one's seed range (``values``: :func:`analysis.growth_definitions`)
    and a warning where the mean agrees but the seeds lie outside the tolerance; which growth
    definitions agree with the paper's growth; whether AttnOnly's growth exceeds FFNOnly's
    (``growth``: :func:`growth_table`); and, when AttnOnly's drift differs but it recovered, that the
    paper's figures come from collapsed runs, a possible reason these records cannot test."""
    tol = scorecard.DRIFT_REL
    drift = agreement[agreement.definition == analysis.DRIFT_DEFINITION].set_index("variant")
    ranges = {v: _seed_range(values, v, analysis.DRIFT_DEFINITION) for v in drift.index}
    listed = {ok: [f"{display_name(v)} ({drift.loc[v, 'ours']:.3f} against {drift.loc[v, 'paper']:.1f}"
                   + (f"; seeds {ranges[v][0]:.2f} to {ranges[v][1]:.2f}" if ranges[v] else "") + ")"
                   for v in drift.index[drift.agrees == ok]] for ok in (True, False)}
    agree, differ = (listing(listed[ok]) or "no variant" for ok in (True, False))
    plural = {ok: len(listed[ok]) > 1 for ok in (True, False)}
    text = (f"Under the drift definition, {agree} {'agree' if plural[True] else 'agrees'} with the paper within"
            f" {tol:.0%}; {differ} {'do' if plural[False] else 'does'} not. ")
    def loose(variant: str, definition: str, paper: float) -> bool:  # a seed beyond the tolerance of the paper's
        span = _seed_range(values, variant, definition)
        return bool(span) and (span[0] < paper * (1 - tol) or span[1] > paper * (1 + tol))

    spread = [display_name(v) for v in drift.index[drift.agrees] if loose(v, analysis.DRIFT_DEFINITION,
                                                                          drift.loc[v, "paper"])]
    if spread:
        text += (f"For {listing(spread)} that is the mean's agreement only: {'its' if len(spread) == 1 else 'their'} "
                 f"seeds spread beyond {tol:.0%} of the paper's figure. ")
    grown = agreement[(agreement.definition != analysis.DRIFT_DEFINITION) & agreement.agrees]
    if len(grown):
        said = [f"{display_name(r.variant)}'s `{r.definition}` ({r.ours:.3f} against {r.paper:g}"
                + (f"; seeds {span[0]:.2f} to {span[1]:.2f}" if (span := _seed_range(values, r.variant, r.definition))
                   else "") + ")" for r in grown.itertuples()]
        wide = [f"{display_name(r.variant)}'s `{r.definition}`" for r in grown.itertuples()
                if loose(r.variant, r.definition, r.paper)]
        one = len(said) == 1
        text += f"Under the growth definitions, {listing(said)} {'agrees' if one else 'agree'} with the paper's " \
                f"hidden-norm growth within {tol:.0%}"
        if wide and len(wide) == len(said):
            text += f" in {'its mean' if one else 'their means'} only: {'its' if one else 'their'} seeds spread beyond it. "
        elif wide:
            text += (f"; {listing(wide)} only in {'its mean' if len(wide) == 1 else 'their means'}, "
                     f"{'its' if len(wide) == 1 else 'their'} seeds spreading beyond it. ")
        else:
            text += ". "
    if ORDERING in growth:
        text += _ordering(growth[ORDERING])
    floor = records["eval_floor"].iloc[0]
    attn_loss = records.loc[records.variant == "attn_only", "final_val_loss"].mean()
    attn_differs = "attn_only" in drift.index and not drift.loc["attn_only", "agrees"]
    if attn_differs and attn_loss < floor - scorecard.RECOVERY_MARGIN:
        text += ("The paper does not say which runs its figures come from, but it reports them beside its nanoGPT"
                 " diagnostics, in which every partial variant had collapsed to the floor. AttnOnly is here in another"
                 f" state: it recovered, ending {floor - attn_loss:.3f} nats below the floor, and a model that uses its"
                 " layers need not grow or drift as a collapsed one does. That is a possible reason its drift differs"
                 " from the paper's, not one these records can test.")
    return text


def layer0_by_seed(layer0: pd.DataFrame) -> pd.DataFrame:
    """Block 0's median gradient norm (:func:`analysis.layer0_after`), seeds as rows and variants
    as columns: starvation must hold seed by seed, not only on average."""
    return layer0.pivot_table(index="seed", columns="variant", values="median")


#: The caption of :func:`layer0_by_seed`'s table.
LAYER0_CAPTION = f"Block-0 gradient norm, median from {analysis.LAYER0_FROM:.0%} of training"


def starvation_premise(layer0: pd.DataFrame) -> str:
    """Whether the hypothesis's premise holds: AttnOnly's and FFNOnly's block 0 both starved (median
    over seeds of :func:`analysis.layer0_after`'s medians below ``scorecard.LAYER0_ZERO``)."""
    median = layer0.groupby("variant")["median"].median()
    starved = {v: m < scorecard.LAYER0_ZERO for v, m in median.items()}
    if starved.get("attn_only") and starved.get("ffn_only"):
        verdict = "The premise holds here: both are starved."
    elif not starved.get("attn_only"):
        verdict = "The premise does not hold here: the variant that recovers is not starved."
    else:
        verdict = "Only AttnOnly is starved here."
    return (f"AttnOnly's block 0 keeps a median gradient of {number(median.get('attn_only', float('nan')))}; FFNOnly's"
            f" is {number(median.get('ffn_only', float('nan')))}. " + verdict)


def loss_summary(records: pd.DataFrame, floor: float, bigram: float) -> pd.DataFrame:
    """:func:`analysis.variant_summary` of the final loss with each variant's distance below the
    unigram floor and above the bigram reference (a loss below it reads more than one character)."""
    summary = analysis.variant_summary(records)
    summary["below the floor"] = floor - summary["mean"]
    summary["above the bigram"] = summary["mean"] - bigram
    return summary


#: The headers of :func:`loss_summary`'s distances, in nats.
LOSS_HEADERS = {"below the floor": "below the floor (nats)", "above the bigram": "above the bigram reference (nats)"}


def missing_runs(absent: list, profile: str) -> str:
    """The sentence listing the runs the page leaves out (``records.attrs["missing"]``) and the
    command that makes them; empty when none is missing."""
    if not absent:
        return ""
    command = f"python -m residual_lib sweep notebooks/07_mechanism.py --profile {profile}"
    return f"Runs not recorded yet, left out (`{command}` makes them): {', '.join(display_name(run.label()) for run in absent)}."


def mixer_references(records: pd.DataFrame, bigram: float) -> dict[str, float]:
    """The mixer figure's reference lines beside the floor: the no-mixing control's mean (NaN
    before its runs are recorded) and the bigram reference."""
    control = records.loc[records.variant == "pointwise", "final_val_loss"]
    return {f"no-mixing control (mean of {len(control)} seeds)": control.mean(), "bigram reference": bigram}


def mixer_caption(records: pd.DataFrame) -> str:
    """The mixer figure's caption, which names the control's line only once its runs are recorded."""
    control = (records.variant == "pointwise").any()
    return ("Final validation loss per seed of AttnOnly, FFNOnly and the mixer (attention replaced by a uniform"
            " average over the positions up to the current one), with the unigram floor of the fixed batches dashed,"
            " the bigram reference dotted and, "
            + ("dash-dotted, the mean of the no-mixing control (the mixer's layers without the average)." if control
               else "once its runs are recorded, the mean of the no-mixing control."))


#: The alt text of the mixer figure.
MIXER_ALT = ("Box and strip chart of final validation loss in nats for attn_only, ffn_only and the mixer, with"
             " horizontal lines for the floor, the bigram reference and the no-mixing control.")


def share_text(shares: dict, name: str) -> str:
    """One share of :func:`analysis.mixer_shares` as a percentage, with its bootstrap interval
    when it has one (each variant it needs has two seeds or more)."""
    low, high = shares[f"{name}_low"], shares[f"{name}_high"]
    text = f"{shares[name]:.0%}" + ("" if pd.isna(low) else f" (95% bootstrap interval {low:.0%} to {high:.0%})")
    return text.replace("-", "−")


#: How close to the bigram reference (nats, per seed) the no-mixing control must end to be read as
#: a model of the current character alone.
AT_BIGRAM = 0.01


def _signed(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


def mixer_finding(shares: dict, records: pd.DataFrame, bigram: float, attn_alpha: float,
                  from_floor: dict | None = None) -> str:
    """The mixer test's finding: how much of the FFNOnly–AttnOnly gap the mixer closes
    (``shares``: :func:`analysis.mixer_shares`), whether it reads beyond the current character,
    and, once the control is recorded, what the control's share measures and whether mixing itself
    closes any of the gap. ``attn_alpha``: AttnOnly's best-layer α_tt, which agrees with a mixing
    result when it is far from 1. ``from_floor``: the same shares measured from the unigram floor
    (``mixer_shares(..., baseline=floor)``), given beside them."""
    means = records.groupby("variant")["final_val_loss"].mean()
    below = bigram - means["mixer"]
    text = ("The paper could not decide this test; here it runs under clean conditions, as new evidence rather than a"
            f" reproduction. The position-blind mixer closes {share_text(shares, 'mixer')} of the"
            f" {shares['gap']:.3f}-nat gap between FFNOnly and AttnOnly, ending {abs(below):.3f} nats"
            + (" below the bigram reference: it uses more than the current character. " if below > 0
               else " above the bigram reference. "))
    if not shares["n_pointwise"]:
        return text + ("The no-mixing control has no record yet (the runs are listed above), so this share cannot yet"
                       " be split into what the mixer's extra layers add and what mixing adds.")
    control = records.loc[records.variant == "pointwise", "final_val_loss"] - bigram
    text += f"Its no-mixing control closes {share_text(shares, 'pointwise')} on its own"
    if control.abs().max() <= AT_BIGRAM:
        spread = (_signed(control.iloc[0]) if len(control) == 1 else
                  f"{_signed(control.min())} to {_signed(control.max())} nats per seed")
        text += (f" and ends on the bigram reference ({spread}), the best a model that sees only the current"
                 " character can do. That share is what an identity path carrying the current token past the"
                 " mixing buys (FFNOnly has none around its attention sublayer, whose output carries the current"
                 " token only as much as attention weights it), not anything the extra per-position layers add. ")
    else:
        text += f", ending {_signed(control.mean())} nats from the bigram reference: that part is not mixing. "
    text += f"Cross-position mixing closes {share_text(shares, 'mixing')} of the gap beyond the control"
    if not shares["mixing_low"] > 0:  # a NaN bound (one seed) excludes nothing either
        text += ("; its interval does not exclude zero, so this test does not show that mixing itself closes any of"
                 " the gap.")
    else:
        text += (", an interval that excludes zero: uniform averaging over the positions up to the current one, which"
                 " can neither route by content nor single out the current token, closes that much of it. That fits"
                 " the cross-position part of the paper's hypothesis, not its α_tt ≈ 1 self-routing.")
        if shares["mixer"] < 1:
            text += (" The gap left between the mixer and AttnOnly mixes any routing effect with attention's general"
                     " modelling advantage, which this test cannot separate.")
        if attn_alpha < scorecard.ALPHA_NEAR_ONE:
            text += " AttnOnly's α_tt, far from 1 (above), points the same way."
    if from_floor is not None and not pd.isna(from_floor.get("mixer")):
        text += (" Measured from the unigram floor instead of FFNOnly's mean (which FFNOnly's escaped seeds pull"
                 f" down), the gap is {from_floor['gap']:.3f} nats, and the mixer closes"
                 f" {share_text(from_floor, 'mixer')} of it")
        if not pd.isna(from_floor.get("pointwise")):
            text += (f", the control {share_text(from_floor, 'pointwise')} and mixing"
                     f" {share_text(from_floor, 'mixing')}")
        text += "."
    return text


def paper_mixer_text(paper_mixer: float, bigram: float, setting) -> str:
    """The paper's mixer loss beside the bigram reference of its setting (``setting``: the
    ``paper-10m`` profile, ``bigram``: its reference): at that level the mixer read only the
    current character, as a model that has not recovered does."""
    offset = paper_mixer - bigram
    return (f"The paper's mixer ended at {paper_mixer:.3f}, {abs(offset):.3f} nats {'above' if offset > 0 else 'below'}"
            f" the bigram reference of the 10M setting ({bigram:.3f}: context {setting.block_size},"
            f" {setting.eval_iters} batches of {setting.batch_size}). "
            + ("It sits at about the bigram level, the loss a model that reads only the current character can reach;"
               " it was run in the environment where the paper's own AttnOnly baseline did not recover."
               if abs(offset) < BIGRAM_LEVEL else "It is not at the bigram level."))
