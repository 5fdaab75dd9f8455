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
    return rows[["claim", "scale", "variant", "quantity", "value", "std", "seeds", "statement", "note"]].rename(
        columns={"value": "paper's value", "std": "paper's std", "note": "about the value"}).reset_index(drop=True)


def section_view(number: int | str):
    """The paper's values for one section as the book shows them, in one expandable block
    (the chapter's results come first): a compact table (claim, scale, variant, quantity,
    value ± std, seeds), then each claim's statement and what the summary leaves unstated.
    Labelled as the paper's."""
    import html

    from IPython.display import HTML

    from .scorecard import TITLES
    from .tables import number as fmt
    from .tables import table

    rows = section(number)
    shown = rows.assign(
        claim=rows.claim.map(lambda c: TITLES.get(c, c)),
        value=[fmt(v) + ("" if pd.isna(s) else f" ± {fmt(s)}") for v, s in zip(rows["paper's value"],
                                                                             rows["paper's std"])])
    values = table(shown[["claim", "scale", "variant", "quantity", "value", "seeds"]],
                   headers={"value": "the paper's value"}, caption=f"The paper's values, section {number}")
    items = []
    for claim, part in rows.groupby("claim", sort=False):
        notes = " ".join(dict.fromkeys(n for n in part["about the value"] if isinstance(n, str) and n))
        items.append(f"<li><strong>{html.escape(TITLES.get(claim, claim))}</strong>: "
                     f"{html.escape(part.statement.iloc[0])}"
                     + (f" <em>{html.escape(notes)}</em>" if notes else "") + "</li>")
    statements = "".join(items)
    return HTML(f'<details class="paper-values"><summary>The paper\'s values for section {number} '
                f"({len(rows)} reported values) and its statements</summary>"
                f'<div class="table-scroll">{values.to_html()}</div><ul>{statements}</ul></details>')
