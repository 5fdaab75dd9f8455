"""Chapter 12's look inside the models at the paper's setting: block 0's gradient from the paper's
step 300 on, and α_tt, attention's weight on a position's own token, against attention spread evenly
and the line the scorecard counts as ≈ 1. :mod:`residual_lib.pages.chapters.paper_scale` re-exports
these for ``notebooks/12_paper_scale.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...run.architecture import CENTRAL_VARIANTS
from ...study import analysis, paper
from ...study.sections import central_sweep
from .. import scorecard
from ..names import display_name
from ..tables import listing, number


def layer0_note() -> str:
    """What the block-0 table reads, with the paper's figures and the step it starts from."""
    claims = paper.claims()
    stated = claims[claims.quantity == "layer0_grad_norm_from_step_300"].set_index("variant")["value"]
    start = analysis.LAYER0_FROM * analysis.PAPER_10M_STEPS
    return (f"The paper reports block 0's gradient norm at exactly {stated['ffn_only']:.3f} from step {start:,.0f} on "
            f"for every partial variant, and about {stated['full']:.3f} for Full. Step {start:,.0f} is "
            f"{analysis.LAYER0_FROM:.0%} of the {analysis.PAPER_10M_STEPS:,} steps of `paper-10m`, which takes nanoGPT's "
            "schedule (the summary gives none), so the table reads each "
            f"run from {analysis.LAYER0_FROM:.0%} of its steps on; a norm below {analysis.LAYER0_ZERO:g} rounds to "
            f"{0:.3f}. Each row reads every seed of its variant, as the scorecard's block-0 claims (each about one "
            "variant) do, so a row may count seeds that the comparisons between variants leave out.")


def layer0(records: pd.DataFrame) -> pd.DataFrame:
    """Block 0's gradient from the paper's step 300 on (:func:`analysis.layer0_after`, its share of
    a run) per variant: median norm, the share of logged steps that round to the paper's 0.000,
    and the paper's value. Each row reads every seed of its variant, as the scorecard's claims on
    block 0, each about one variant, do; so a row may have more seeds than another."""
    runs = analysis.layer0_after(records)
    if not len(runs):
        return pd.DataFrame(columns=["variant", "seeds", "from step", "median norm", "share at 0.000", "the paper"])
    claims = paper.claims()
    stated = claims[claims.quantity == "layer0_grad_norm_from_step_300"].set_index("variant")["value"]
    grouped = runs.groupby("variant")
    out = pd.DataFrame({"seeds": grouped.size(), "from step": grouped.from_step.first(),
                        "median norm": grouped["median"].median(), "share at 0.000": grouped.starved.mean()})
    out["the paper"] = [f"{stated[v]:.3f}" if v in stated.index else "—" for v in out.index]
    out = out.reindex([v for v in CENTRAL_VARIANTS if v in out.index])
    out.index = [display_name(v) for v in out.index]
    return out.rename_axis("variant").reset_index()


def layer0_text(table: pd.DataFrame, records: pd.DataFrame | None = None) -> str:
    """The block-0 table (:func:`layer0`) in a sentence: each variant's median, and how often the
    partial variants' gradient rounds to the paper's 0.000; with the ``records`` it was read from,
    whether an AttnOnly that recovers does so with a starved block 0, as the paper's section 7 has it."""
    if not len(table):
        return ""
    rows = table.set_index("variant")
    medians = listing(f"{number(rows.loc[v, 'median norm'])} for {v}" for v in rows.index)
    partial = [v for v in rows.index if v != "Full"]
    text = f"From step {int(rows['from step'].iloc[0]):,} on, block 0's median gradient norm is {medians}."
    if partial:
        shares = listing(f"{_share(rows.loc[v, 'share at 0.000'])} {v}'s" for v in partial)
        text += f" It rounds to 0.000 in {shares} logged steps, where the paper reports 0.000 throughout."
    if "AttnOnly" in partial:
        text += (" The summary is not consistent about where the paper measured AttnOnly's 0.000: its sections 4 and"
                 " 8 place it in the nanoGPT runs, in which AttnOnly had collapsed ([chapter 4](../notebooks/04_joint_collapse.html)),"
                 " while its section 7 sets it beside the sweep in which AttnOnly recovers, and builds the routing"
                 " proposal on recovery despite a starved block 0.")
        attn = records[records.variant == "attn_only"] if records is not None else ()
        recovered = len(attn) and bool(((attn.eval_floor - attn.final_val_loss) > scorecard.RECOVERY_MARGIN).all())
        if recovered and rows.loc["AttnOnly", "share at 0.000"] <= 0:
            text += (" Here AttnOnly recovers with its block 0 keeping a gradient at every logged step from step "
                     f"{int(rows['from step'].iloc[0]):,} on, so that premise does not hold at this setting.")
    return text


def _share(x: float) -> str:
    """A share of steps as a sentence says it: "none of", "all of", "97% of", and never a
    rounded "0%" or "100%" for a share that is neither."""
    if x <= 0 or x >= 1:
        return "none of" if x <= 0 else "all of"
    return "under 1% of" if x < 0.005 else "over 99% of" if x >= 0.995 else f"{x:.0%} of"


#: The α tables' headers (a header's underscores are otherwise read as spaces).
ALPHA_HEADERS = {"mean": "mean α_tt"}


def alpha(records: pd.DataFrame) -> pd.DataFrame:
    """α_tt (attention's weight on a position's own token) per variant, as the scorecard's routing
    rule reads it: the mean over layers and heads (``mean``, shown as :data:`ALPHA_HEADERS` names
    it), the layer with the highest mean, and the largest head, each a mean over the seeds of the
    central sweep of ``records`` (the seeds at which every variant has a run), which the rule reads."""
    runs = analysis.alpha_summary(central_sweep(records))
    grouped = runs.groupby("variant")
    out = pd.DataFrame({"seeds": grouped.size(), "mean": grouped["mean"].mean(),
                        "best layer": grouped.max_layer.mean(), "largest head": grouped.max_head.mean()})
    out = out.reindex([v for v in CENTRAL_VARIANTS if v in out.index])
    out.index = [display_name(v) for v in out.index]
    return out.rename_axis("variant").reset_index()


def alpha_text(table: pd.DataFrame, uniform: float) -> str:
    """AttnOnly's α_tt (the :func:`alpha` table) against uniform attention, the line the scorecard
    asks of a layer before it counts α_tt as ≈ 1, and Full, the control the proposal needs it to
    exceed (the scorecard's routing rule, said in words)."""
    rows = table.set_index("variant")
    if "AttnOnly" not in rows.index:
        return f"Attention spread evenly over the causal window would give α_tt = {uniform:.3f}."
    attn, line = rows.loc["AttnOnly"], scorecard.ALPHA_NEAR_ONE
    seeds = int(attn["seeds"])
    over = (f" (each seed's own, averaged over the {seeds} seeds of the central sweep, as the scorecard reads them)"
            if seeds > 1 else "")
    text = (f"AttnOnly's α_tt averages {attn['mean']:.3f} over its layers and heads; its most self-attending layer "
            f"averages {attn['best layer']:.3f} and its largest head {attn['largest head']:.3f}{over}, against "
            f"{uniform:.3f} for attention spread evenly over the causal window and the {line:g} the scorecard asks "
            f"of a layer's mean before it counts α_tt as ≈ 1: {'a' if attn['best layer'] >= line else 'no'} layer "
            "reaches the paper's proposed self-routing.")
    if "Full" not in rows.index:
        return text + " The scorecard's verdict waits for Full, its control."
    full = rows.loc["Full", "mean"]
    return text + (f" Full, the control, averages {full:.3f}, {'less' if full < attn['mean'] else 'no less'} than "
                   f"AttnOnly's {attn['mean']:.3f}; the scorecard counts the proposal as supported only where both "
                   "hold: a layer at the line, and AttnOnly above Full.")


def uniform_alpha(records: pd.DataFrame) -> float:
    """α_tt of attention spread evenly over the causal window of these records' context."""
    return analysis.uniform_causal_alpha(int(records.block_size.iloc[0])) if len(records) else np.nan
