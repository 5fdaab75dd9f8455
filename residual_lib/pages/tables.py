"""How the book shows a table: one formatting rule for every page.

:func:`table` turns a data frame into a styled table with readable column headers, numbers
to three decimals with a true minus sign (very small or very large ones in scientific
notation, so a gradient of 4.5×10⁻⁷ does not print as 0.000), ``—`` for a missing value, confidence bounds as one ``[low, high]`` column, and no pandas
index. The
rendered HTML sits in a box that scrolls sideways on its own when it is wider than the page
(``_static/verdicts.css``), so a wide table never widens the page.
"""

from __future__ import annotations

import html
import math
import numbers
import re

import numpy as np
import pandas as pd

from ..core.text import listing, p_text, plural, scientific, signed  # noqa: F401 (the pages' helpers, here too)
from .names import display_name

MISSING = "—"

#: Readable headers for the record and analysis fields the pages show; any other name has
#: its underscores replaced by spaces.
HEADERS = {
    "final_val_loss": "final val loss (nats)",
    "best_val_loss": "best val loss (nats)",
    "eval_floor": "floor (nats)",
    "mean": "mean (nats)",
    "std": "std (nats)",
    "sem": "s.e.m. (nats)",
    "boot_low": "bootstrap 95% CI low",
    "boot_high": "bootstrap 95% CI high",
    "ci_low": "Welch 95% CI low",
    "ci_high": "Welch 95% CI high",
    "n_params": "parameters",
    "seeds": "seeds",
    "variant": "variant",
    "p_value": "p",
    "median_attn": "median, attention",
    "median_mlp": "median, MLP",
    "median_ln": "median, LayerNorm",
    "from_step": "from step",
    "paper_note": "about the paper's values",
}


def header(name) -> str:
    """The readable header of a column name."""
    if not isinstance(name, str):
        return str(name)
    return HEADERS.get(name, display_name(name).replace("_", " "))


def number(value, decimals: int = 3, small: bool = True, grouped: bool = False) -> str:
    """One cell: ``—`` when missing, integers as they are (with thousands separators from
    10,000), floats to ``decimals`` places with a true minus sign (and no "−0.000": a value
    that rounds to zero is 0), or in scientific notation (:func:`scientific`) when fixed
    decimals would hide them (below 10^-decimals in size: gradient norms, p-values) or make
    them long (10^6 and above); with ``small`` False (a column of everyday magnitudes, such as
    loss differences), a value that rounds to zero is written 0.000; with ``grouped`` (a column
    that holds a number of 10,000 or more), integers from 1,000 take separators too, so that a
    column reads 2,000 beside 16,384, not 2000."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{value:,}" if abs(value) >= (1_000 if grouped else 10_000) else str(value)
    if isinstance(value, numbers.Real):
        size = abs(float(value))
        if size == 0:
            return f"{0:.{decimals}f}"
        if math.isinf(size):
            return "∞" if value > 0 else "−∞"
        if (small and size < 0.5 * 10 ** -decimals) or size >= 1e6:
            return scientific(float(value))
        text = f"{value:.{decimals}f}"
        return text.replace("-", "−") if float(text) != 0 else text.lstrip("-")
    text = str(value)
    return MISSING if text in ("", "nan", "NaN", "None") else display_name(text)


#: Pairs of bound columns shown as one "[low, high]" column, under this header.
INTERVALS = {("ci_low", "ci_high"): "Welch 95% CI", ("boot_low", "boot_high"): "bootstrap 95% CI",
             ("slope_low", "slope_high"): "95% t interval of the slope", ("t_low", "t_high"): "95% t interval"}


def _intervals(frame: pd.DataFrame, decimals: int) -> pd.DataFrame:
    for (low, high), name in INTERVALS.items():
        if low in frame and high in frame:
            # the bounds of a difference or a slope: everyday magnitudes, so a bound near 0 reads 0.000
            text = [MISSING if number(a, decimals) == MISSING
                    else f"[{number(a, decimals, small=False)}, {number(b, decimals, small=False)}]"
                    for a, b in zip(frame[low], frame[high])]
            frame = frame.drop(columns=[high]).rename(columns={low: name})
            frame[name] = text
    return frame


def _floats(column: pd.Series) -> pd.Series:
    """A column's finite floating-point numbers (none for a column of integers or text)."""
    values = pd.to_numeric(column, errors="coerce")
    return values[np.isfinite(values)] if pd.api.types.is_float_dtype(values) else values.iloc[0:0]


def _spans(column: pd.Series, decimals: int = 3) -> bool:
    """Whether a column holds a quantity that spans orders of magnitude (gradient norms,
    p-values): no value negative, some positive and below what its ``decimals`` show (a zero
    among them is a norm that is exactly 0). Such a column writes its small values in
    scientific notation, as the sentences do; any other writes them as 0.000."""
    values = _floats(column)
    small = (values > 0) & (values < 0.5 * 10 ** -decimals)
    return bool(len(values)) and bool((values >= 0).all()) and bool(small.any())


#: Columns of p-values, which keep the prose's form (0.006, and 4.5×10⁻⁷ only below 0.001).
P_COLUMNS = {"p_value", "p"}


def _all_tiny(column: pd.Series, decimals: int) -> bool:
    """Whether every number of a column lies below what ``decimals`` (two or more) fixed places
    show with two significant digits (0.01 at three): a column of block-0 gradient norms, say."""
    values = _floats(column)
    return decimals >= 2 and bool(len(values)) and bool((values.abs() < 10 ** -(decimals - 1)).all())


def _cell(value, decimals: int, spans: bool, grouped: bool, tiny: bool = False) -> str:
    """One cell of :func:`table`. In a column that spans orders of magnitude and whose values are
    all ``tiny`` (:func:`_all_tiny`), every non-zero value is written in scientific notation, so
    that 5.8×10⁻⁴ does not read 0.001 beside 2.3×10⁻⁴; a column that also holds everyday values
    (a spread of 0.026 and of 4.0×10⁻⁴) writes only what would round to 0 that way."""
    if spans and tiny and isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
            and float(value) != 0 and math.isfinite(float(value)):
        return scientific(float(value))
    return number(value, decimals, spans, grouped)


def _grouped(column: pd.Series) -> bool:
    """Whether a column holds an integer of 10,000 or more (its integers from 1,000 then take separators)."""
    return any(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) and abs(v) >= 10_000
               for v in column)


#: A cell of text that reads as one number ("8,750", "−0.012", "3.2×10⁻⁴") or the missing mark.
_NUMBER_TEXT = re.compile(r"^[−+-]?[\d,]*\.?\d+(×10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|[eE][−+-]?\d+)?%?$")
#: Digits alone, seven or more: an identifier (a short commit), not a number a table writes (it groups them).
_IDENTIFIER = re.compile(r"^\d{7,}$")


def _reads_as_numbers(column: pd.Series) -> bool:
    """Whether a column of text holds numbers only (and dashes for the missing), such as steps
    written with separators: aligned to the right, as the numeric columns are."""
    cells = [MISSING if str(v).strip() in ("", "nan", "None", "<NA>") else str(v).strip() for v in column]
    return any(c != MISSING for c in cells) and all(
        c == MISSING or (_NUMBER_TEXT.match(c) and not _IDENTIFIER.match(c)) for c in cells)


def table(frame: pd.DataFrame | pd.Series, headers: dict[str, str] | None = None, decimals: int | dict = 3,
          index: bool | str = False, caption: str | None = None, anchor: str | None = None, blocks: bool = False):
    """``frame`` as the book shows it (a pandas Styler; displays as HTML in a notebook).

    ``headers`` renames columns on top of :data:`HEADERS`; ``decimals`` is one count for every
    column or ``{column: count}`` for some (the others take 3); ``index=True`` keeps the index as
    the first column (named after it), a string names it; ``caption`` goes above the table;
    ``anchor`` names the table: its id is ``T_<anchor>`` (pandas prefixes ``T_``), which a link
    to the evidence of a claim names. A frame may name, in ``frame.attrs["everyday"]``, columns of everyday
    magnitudes (losses in nats) that keep fixed decimals even where :func:`_spans` would read them as spanning
    orders of magnitude. ``blocks``: a table of sentences rather than numbers, which at any width
    (not only a phone's) shows each row as a block of "header  value" lines when it does not fit
    its column, instead of scrolling sideways (``_static/phone.css``)."""
    everyday = set(getattr(frame, "attrs", {}).get("everyday", ()))
    per_column = decimals if isinstance(decimals, dict) else {}
    decimals = 3 if isinstance(decimals, dict) else decimals
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    frame = frame.copy()
    if index is not False:
        name = index if isinstance(index, str) else (frame.index.name or "")
        frame = frame.reset_index(names=[name] if frame.index.nlevels == 1 else None)
    else:
        frame = frame.reset_index(drop=True)
    frame = _intervals(frame, decimals)  # two bounds in one column: narrower tables
    names = {**HEADERS, **(headers or {})}
    places = [per_column.get(c, decimals) for c in frame.columns]
    plain = [c in everyday for c in frame.columns]
    probabilities = [c in P_COLUMNS for c in frame.columns]  # written as the prose writes p (p_text)
    frame.columns = [names.get(c, header(c)) if isinstance(c, str) else header(c) for c in frame.columns]
    if frame.columns.duplicated().any():
        raise ValueError(f"two columns share a header: {list(frame.columns)}; pass headers= to tell them apart")
    text = pd.DataFrame({c: [_cell(v, d, not p and _spans(frame[c], d), _grouped(frame[c]), not q and _all_tiny(
        frame[c], d)) for v in frame[c]] for c, d, p, q in zip(frame.columns, places, plain, probabilities)},
        index=frame.index)
    styler = text.style.hide(axis="index").set_table_attributes(f'class="book-table{" book-table-blocks" if blocks else ""}"')
    if anchor:  # pandas names a table T_<uuid>: the anchor is T_<anchor>
        styler = styler.set_uuid(anchor)
    numeric = [c for c, dtype in zip(frame.columns, frame.dtypes)
               if (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))
               or (not pd.api.types.is_numeric_dtype(dtype) and _reads_as_numbers(frame[c]))]
    if numeric:
        styler = styler.set_properties(subset=numeric, **{"text-align": "right", "font-variant-numeric": "tabular-nums"})
    if caption:
        styler = styler.set_caption(caption)
    return styler


def folded(styler, summary: str):
    """A long table folded under a one-line summary (an HTML ``<details>``), for tables a reader
    consults rather than reads: closed, it takes one line of the page, also on a phone."""
    from IPython.display import HTML

    return HTML(f'<details class="book-fold"><summary>{html.escape(summary)}</summary>{styler.to_html()}</details>')


def mean_std(values: pd.Series, seeds: bool = False) -> str:
    """``values`` as "mean ± std" (the std only when there are several), with ``seeds`` also
    "(n seeds)": how a table cell quotes a loss over seeds."""
    text = f"{values.mean():.3f}" + (f" ± {values.std():.3f}" if len(values) > 1 else "")
    return text + (f" ({len(values)} {plural('seed', len(values))})" if seeds else "")


def missing_runs(absent: list) -> pd.DataFrame:
    """Runs a page would show that have no record yet (``records.attrs["missing"]``), one per row."""
    return pd.DataFrame({"run": [display_name(run.label()) for run in absent]})


def still_to_come(absent: list) -> str:
    """The planned runs without a record, in plan order, as a phrase: ``FFNOnly and Full at seed
    1337, then AttnOnly at seeds 42 and 123`` (seeds that lack the same variants said together)."""
    by_seed: dict[int, list[str]] = {}
    for run in absent:
        by_seed.setdefault(run.seed, []).append(display_name(run.variant))
    groups: list[tuple[list[str], list[int]]] = []
    for seed, names in by_seed.items():
        if groups and groups[-1][0] == names:
            groups[-1][1].append(seed)
        else:
            groups.append((names, [seed]))
    return ", then ".join(f"{listing(names)} at {plural('seed', len(seeds))} {listing(seeds)}"
                          for names, seeds in groups)


def narrow(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """``table`` with the stand-in's seed count in ``column``'s header where every row shares it,
    and no line break inside "1.580 ± 0.003" or "≈ 1.48": a narrower table that wraps between values."""
    seeds = table[column].str.extract(r" \((\d+) seeds?\)$")[0] if len(table) else pd.Series([None])
    if seeds.notna().all() and seeds.nunique() == 1:
        n = int(seeds.iloc[0])
        table = table.assign(**{column: table[column].str.replace(r" \(\d+ seeds?\)$", "", regex=True)}).rename(
            columns={column: f"{column[:-1]}, {n} {plural('seed', n)})"})
    return table.replace({r" ([±÷]) ": "\u00a0\\1\u00a0", "≈ ": "≈\u00a0"}, regex=True)
