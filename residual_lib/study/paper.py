"""The paper's reported figures, as data.

Every number attributed to arXiv:2608.14689 lives in ``paper_claims.csv`` beside this
file, one row per reported value: ``claim`` (an identifier shared by the values of one
claim), ``section``, ``scale`` (10M, 124M or both), ``variant`` (a variant name,
``partial`` for all three partial variants, or an expression such as
``ffn_only-attn_only`` for a gap, named so that the paper's value has its sign), ``quantity``, ``value``, ``std`` when the paper gives
one and ``std_kind`` (``population`` or ``sample``) where it can be told, ``seeds``,
``inferred`` (the fields read from context rather than stated, e.g. ``seeds``), the paper's
``statement`` and a ``note`` where the summary leaves something undefined or contradicts
itself. These are the paper's numbers, never this
project's measurements.
"""

from __future__ import annotations

import re
from importlib import resources

import pandas as pd


def claims() -> pd.DataFrame:
    """The paper's reported values (see the module docstring for the columns)."""
    with resources.files(__package__).joinpath("paper_claims.csv").open() as f:
        return pd.read_csv(f, dtype={"section": str, "seeds": str})


def value(claim: str, variant: str, quantity: str) -> float:
    """One reported value, e.g. ``value("central_10m", "attn_only", "final_val_loss")``."""
    table = claims()
    rows = table[(table.claim == claim) & (table.variant == variant) & (table.quantity == quantity)]
    if len(rows) != 1:
        raise KeyError(f"no single paper value for {claim}/{variant}/{quantity}: see residual_lib/study/paper_claims.csv")
    return float(rows["value"].iloc[0])


#: How the book names each quantity of the claims file (its code name is the file's).
QUANTITIES = {
    "final_val_loss": "final validation loss",
    "ratio_to_full": "ratio to Full",
    "ratio_to_full_low": "ratio to Full, low end",
    "ratio_to_full_high": "ratio to Full, high end",
    "layer0_grad_norm_from_step_300": "block-0 gradient norm from step 300",
    "hidden_norm_growth": "hidden-norm growth (×)",
    "representation_drift": "representation drift (×)",
    "steps_to_equivalence": "steps until the gains agree",
    "best_val_loss_gain_2": "best validation loss at gain 2",
    "gap": "gap in final validation loss",
    "final_val_loss_conclusion": "final validation loss (the conclusion's figure)",
    "final_val_loss_std_conclusion": "std of the final validation loss (the conclusion's figure)",
    "ratio": "ratio of final validation losses",
    "alpha_tt": "α_tt (attention on its own position)",
    "relative_gap_percent_124m": "relative gap at 124M (%, the summary does not define it)",
    "relative_gap_percent_10m": "relative gap at 10M (%, the summary does not define it)",
    "final_val_loss_original_s5": "originally recorded final validation loss (section 5)",
    "final_val_loss_original_s7": "originally recorded final validation loss (section 7)",
    "nanogpt_minus_controlled": "nanoGPT's loss minus the controlled one",
}
#: How the book names the variants, and the paper's "partial" (all three partial variants).
VARIANT_NAMES = {"full": "Full", "attn_only": "AttnOnly", "ffn_only": "FFNOnly", "no_residual": "NoResidual",
                 "mixer": "mixer", "pointwise": "pointwise", "partial": "every partial variant"}


def quantity_label(quantity: str) -> str:
    """A quantity of the claims file in words: :data:`QUANTITIES`, or for a per-seed or per-repeat
    value (``final_val_loss_seed_42``, ``final_val_loss_repeat_2``) the quantity with its seed or repeat."""
    if quantity in QUANTITIES:
        return QUANTITIES[quantity]
    match = re.fullmatch(r"(.+)_(seed|repeat)_(\d+)", quantity)
    if match and match.group(1) in QUANTITIES:
        return f"{QUANTITIES[match.group(1)]}, {match.group(2)} {match.group(3)}"
    raise KeyError(f"no name for the quantity {quantity!r}: add it to residual_lib.study.paper.QUANTITIES")


def variant_label(variant: str) -> str:
    """A variant of the claims file in the book's spelling; a gap or ratio (``ffn_only-attn_only``,
    ``ffn_only/attn_only``) with a true minus or a slash between the names."""
    for sign, shown in (("-", " − "), ("/", " / ")):
        if sign in variant:
            return shown.join(VARIANT_NAMES.get(v, v) for v in variant.split(sign))
    return VARIANT_NAMES.get(variant, variant)


def section(number: int | str) -> pd.DataFrame:
    """The paper's reported values for one of its sections, for display beside ours."""
    table = claims()
    rows = table[table.section == str(number)]
    return rows[["claim", "scale", "variant", "quantity", "value", "std", "seeds", "inferred", "statement", "note"]].rename(
        columns={"value": "paper's value", "std": "paper's std", "note": "about the value"}).reset_index(drop=True)
