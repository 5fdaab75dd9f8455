"""The paper's reported figures, as data.

Every number attributed to arXiv:2608.14689 lives in ``paper_claims.csv`` beside this
file, one row per reported value: ``claim`` (an identifier shared by the values of one
claim), ``section``, ``scale`` (10M, 124M or both), ``variant`` (a variant name,
``partial`` for all three partial variants, or an expression such as
``attn_only-ffn_only`` for a gap), ``quantity``, ``value``, ``std`` when the paper gives
one and ``std_kind`` (``population`` or ``sample``) where it can be told, ``seeds``,
``inferred`` (the fields read from context rather than stated, e.g. ``seeds``), the paper's
``statement`` and a ``note`` where the summary leaves something undefined or contradicts
itself. These are the paper's numbers, never this
project's measurements.
"""

from __future__ import annotations

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
        raise KeyError(f"no single paper value for {claim}/{variant}/{quantity}: see residual_lib/paper_claims.csv")
    return float(rows["value"].iloc[0])


def section(number: int | str) -> pd.DataFrame:
    """The paper's reported values for one of its sections, for display beside ours."""
    table = claims()
    rows = table[table.section == str(number)]
    return rows[["claim", "scale", "variant", "quantity", "value", "std", "seeds", "inferred", "statement", "note"]].rename(
        columns={"value": "paper's value", "std": "paper's std", "note": "about the value"}).reset_index(drop=True)
