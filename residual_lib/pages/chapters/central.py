"""What chapter 6 finds: the controlled multi-seed sweep's final losses, per variant and per
seed, and the gaps between variants, as the tables and quoted numbers ``notebooks/06_central.py``
shows."""

from __future__ import annotations

import pandas as pd

from ...study import analysis
from .. import scorecard

#: The gaps the chapter tests: the asymmetry, FFNOnly against the No-Residual anchor, and what
#: AttnOnly loses to Full.
GAP_PAIRS = [("ffn_only", "attn_only"), ("ffn_only", "no_residual"), ("attn_only", "full")]
#: The captions and alt texts of the final-loss and validation-curve figures.
FINAL_CAPTION = ("Final validation loss on the fixed batches, one point per seed over a box per variant. The dashed"
                 " line is the floor of those batches.")
FINAL_ALT = ("Box and strip chart of final validation loss in nats for the four variants, one point per seed, with a"
             " dashed floor line.")
CURVES_CAPTION = ("Validation loss on the fixed batches during training: the mean over seeds (thick) and each seed's"
                  " own curve (thin); the dashed line is the floor of those batches.")
CURVES_ALT = ("Line chart of validation loss in nats against training step for the four variants: a thick mean line"
              " per variant over thin lines for its seeds, with a dashed floor line.")


def loss_summary(records: pd.DataFrame, floor: float) -> pd.DataFrame:
    """:func:`analysis.variant_summary` of the final loss with each variant's distance below the
    unigram floor: how far a variant got from predicting character frequencies alone."""
    summary = analysis.variant_summary(records)
    summary["below the floor"] = floor - summary["mean"]
    return summary


#: How far (nats) a variant's median final loss may lie from its mean before the prose quotes both.
SKEWED = 0.01


def quoted_numbers(records: pd.DataFrame, summary: pd.DataFrame, floor: float) -> dict[str, str]:
    """The numbers the book's prose quotes from this sweep, by glue name: each variant's final loss
    (``<variant>_result``, mean ± std over seeds when there are several, and the median where it lies
    more than :data:`SKEWED` from the mean), the floor, the model's
    size (Full's parameter count) and the seeds per variant (the fewest any variant has)."""
    medians = records.groupby("variant")["final_val_loss"].median()
    quoted = {}
    for variant, row in summary.iterrows():
        text = f"{row['mean']:.3f}" + (f" ± {row['std']:.3f}" if row["seeds"] > 1 else "")
        if abs(medians.get(variant, row["mean"]) - row["mean"]) > SKEWED:  # a few seeds pull the mean away
            text += f" (median {medians[variant]:.3f})"
        quoted[f"{variant}_result"] = text
    quoted["eval_floor"] = f"{floor:.3f}"
    full = records.variant == "full"
    n_params = int(records.loc[full, "n_params"].max()) if full.any() else 0
    quoted["n_params"] = f"{n_params / 1e6:.2g}M-parameter"
    n_seeds = int(summary["seeds"].min())
    quoted["n_seeds"] = f"{n_seeds} seed{'' if n_seeds == 1 else 's'}"
    return quoted


def per_seed_table(records: pd.DataFrame, floor: float) -> pd.DataFrame:
    """Final loss per seed (rows) and variant (columns), with whether FFNOnly ends at the floor
    (within ``scorecard.FLOOR_TOL``): the asymmetry and collapse in every seed are read seed by
    seed, and they can come apart."""
    per_seed = records.pivot_table(index="seed", columns="variant", values="final_val_loss")
    per_seed = per_seed[analysis.variant_order(records)]
    if "ffn_only" in per_seed:
        per_seed["ffn_only at the floor"] = (per_seed["ffn_only"] - floor).abs() <= scorecard.FLOOR_TOL
    return per_seed


def gaps(records: pd.DataFrame, floor: float) -> pd.DataFrame:
    """:func:`analysis.gap_table` of :data:`GAP_PAIRS`, with FFNOnly's mean distance to the floor
    as a last row (a constant has no spread, so it has no test or interval)."""
    table = analysis.gap_table(records, GAP_PAIRS)
    ffn = records.loc[records.variant == "ffn_only", "final_val_loss"]
    table.loc["ffn_only − floor", ["gap", "n_a"]] = [ffn.mean() - floor, len(ffn)]
    table[["n_a", "n_b"]] = table[["n_a", "n_b"]].astype("Int64")
    return table
