"""Chapter 4, the initial observation: under nanoGPT-style random evaluation the partial variants sit at
the floor, and block 0's gradient starves in the variants that collapse."""

from __future__ import annotations

import pandas as pd

from ...run.profiles import BOOK_PROFILE, get_profile
from ...study import analysis
from .. import scorecard
from ..tables import number, scientific

#: The scorecard claims the chapter's verdict box shows.
CLAIMS = ["joint_collapse_10m", "layer0_starved_attn_only", "layer0_starved_ffn_only", "layer0_starved_no_residual",
          "layer0_full"]
#: The block-0 columns of :func:`analysis.layer0_after` the chapter tabulates (sub-modules where logged).
LAYER0_PARTS = ["median", "starved", "median_attn", "median_mlp", "median_ln"]
#: What the starvation finding adds when AttnOnly recovers with a block 0 that is not starved.
NOT_STARVED = (" The paper measured starvation in nanoGPT runs in which every partial variant had collapsed, AttnOnly"
               " included, and there it tracked collapse too. What does not hold is its generalisation, the premise"
               " of section 7 that AttnOnly recovers while starved: in the runs where AttnOnly recovers, its block 0"
               " is not starved.")


def quoted(stand_in: str = BOOK_PROFILE) -> dict[str, str]:
    """The constants the chapter's prose quotes, by glue name, as it writes them: where block 0 is read from
    (a share of training, the paper's run length, that share at ``stand_in``) and the starvation threshold."""
    steps = get_profile(stand_in).max_iters
    return {"layer0_from": f"{analysis.LAYER0_FROM:.0%}", "paper_10m_steps": f"{analysis.PAPER_10M_STEPS:,}",
            "layer0_from_step": f"{round(analysis.LAYER0_FROM * steps):,}", "stand_in_steps": f"{steps:,}",
            "layer0_zero": scientific(scorecard.LAYER0_ZERO, 1)}


def loss_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Final validation loss per variant, its ratio to full's (the paper's "N x degradation") and how far below
    the floor of the runs' evaluation it ends, in nats. With one seed per variant the spread columns
    (std, min, max) are left out: they would repeat the mean or read "—"."""
    summary = analysis.variant_summary(runs)
    if runs.groupby("variant").seed.nunique().max() == 1:
        summary = summary.drop(columns=[c for c in ("std", "min", "max") if c in summary.columns])
    summary["ratio to full"] = analysis.degradation_ratios(runs)
    summary["below the floor"] = runs["eval_floor"].iloc[0] - summary["mean"]
    return summary


def _seeds(runs: pd.DataFrame) -> str:
    return ", ".join(str(s) for s in sorted(set(runs.seed)))


def curves_caption(runs: pd.DataFrame) -> str:
    """The caption of the validation curves under random evaluation, naming the seeds drawn."""
    return ("Validation loss of the four variants under nanoGPT-style random evaluation, seed"
            f" {_seeds(runs)} (the section's runs{'; the mean over seeds thick, each seed thin' if runs.seed.nunique() > 1 else ''})."
            " The dashed"
            " line is the expected floor of random evaluation; FFNOnly and NoResidual lie on it, one over the other.")


#: The alt text of the validation curves under random evaluation.
CURVES_ALT = ("Line chart of validation loss in nats against training step for full, attn_only, ffn_only and"
              " no_residual (with several seeds, a thick mean line over a thin line per seed), with a dashed"
              " horizontal floor line.")


def layer0_table(layer0: pd.DataFrame) -> pd.DataFrame:
    """Per variant, the median over runs of :func:`analysis.layer0_after`'s block-0 statistics; sub-module
    columns are dropped for records that do not log them."""
    per_variant = layer0.groupby("variant")[LAYER0_PARTS].median()
    return per_variant.reindex(analysis.variant_order(layer0)).dropna(axis=1, how="all")


def starvation_tracks(central: pd.DataFrame, layer0: pd.DataFrame) -> str:
    """The sentence that block-0 starvation tracks collapse: the median block-0 gradient of the variants that
    learn, of no_residual, and of ffn_only split into the seeds at the floor (within the scorecard's
    ``FLOOR_TOL``) and those that escape. ``central`` holds the controlled runs ``layer0`` was read from."""
    learn = layer0[layer0.variant.isin(["full", "attn_only"])]["median"].median()
    no_residual = layer0[layer0.variant == "no_residual"]["median"].median()
    text = (f"After the cut-off, block 0's gradient has a median of {learn:.2f} in the variants that learn (full and"
            f" attn_only), and {number(no_residual)} in no_residual")
    ffn_layer0 = layer0[layer0.variant == "ffn_only"].set_index("seed")["median"]
    if len(ffn_layer0):
        ffn = central[central.variant == "ffn_only"].set_index("seed")
        collapsed = (ffn.final_val_loss - ffn.eval_floor).abs() <= scorecard.FLOOR_TOL
        n = int(collapsed.sum())
        text += (f"; ffn_only's is {number(ffn_layer0[collapsed].median())} in the {n} seed{'s' if n != 1 else ''}"
                 f" that {'stay' if n != 1 else 'stays'} at the floor")
        escaped = ffn_layer0[~collapsed.reindex(ffn_layer0.index, fill_value=True)]
        if len(escaped):
            m = len(escaped)
            text += f" and {number(escaped.median())} in the {m} that escape{'s' if m == 1 else ''}"
            starved = escaped[escaped < scorecard.LAYER0_ZERO]
            if len(starved):
                who = ", ".join(str(s) for s in starved.index)
                text += (f". Starvation does not decide collapse by itself: seed{'s' if len(starved) > 1 else ''}"
                         f" {who} left the floor with block 0 below the {scientific(scorecard.LAYER0_ZERO)} line"
                         f" ({', '.join(scientific(v) for v in starved)})")
            else:
                text += ": here every starved seed is also a collapsed one"
    return text + "."


def starvation_finding(central: pd.DataFrame, layer0: pd.DataFrame) -> str:
    """:func:`starvation_tracks`, and where AttnOnly's block 0 is not starved in every run (it learns with a
    live gradient), what that leaves of the paper's claim."""
    attn_starved = (layer0[layer0.variant == "attn_only"]["median"] < scorecard.LAYER0_ZERO).all()
    return starvation_tracks(central, layer0) + ("" if attn_starved else NOT_STARVED)


def layer0_caption(central: pd.DataFrame) -> str:
    """The caption of the block-0 gradient curves, naming the seeds of the controlled runs."""
    return ("Gradient norm of the first transformer block before clipping, log scale: one line per run, the"
            f" controlled runs of every seed ({_seeds(central)}), whose medians the table above gives. The dotted"
            f" line marks {analysis.LAYER0_FROM:.0%} of training, from where those medians are taken.")


#: The alt text of the block-0 gradient curves.
LAYER0_ALT = ("Line chart, log-scale y axis, of the block-0 gradient norm against training step per variant, with a"
              f" dotted vertical line at {analysis.LAYER0_FROM:.0%} of training.")
