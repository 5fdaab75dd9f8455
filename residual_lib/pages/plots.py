"""The book's figures, one function per figure (seaborn / matplotlib). Each returns the
matplotlib Figure and draws only from the frames it is given; :func:`show` displays one
with its caption, cross-reference name and alt text.

Figures are drawn 5 inches wide at 110 dpi (550 CSS pixels) and shown as 2x PNGs: at a
laptop's column width they show at their own size, and a phone's 358-pixel column shows
them at 0.65 of it, so that 10.5-point tick labels are still 10 CSS pixels tall there.
Legends sit outside the data, and losses are labelled in nats.
"""

from __future__ import annotations

import textwrap
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .names import display_name, prose_names
from ..study.analysis import variant_order
from ..study.scaling import size_text

WIDTH = 5.0  # inches: 5 in x 110 dpi = 550 CSS pixels, shown at >= 0.6 of that in a phone's column
DPI = 110
sns.set_theme(context="notebook", style="whitegrid", font_scale=0.95)
try:  # sharp PNGs in notebooks: twice the pixels at the same displayed size
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("retina")
except ImportError:  # pragma: no cover - plain matplotlib without IPython
    pass



@contextmanager
def seeded_jitter(seed: int = 0):
    """Seaborn draws a strip plot's jitter from NumPy's global generator: seed it for the
    block (and restore it after), so that a page draws the same figure every time it is built."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)

def show(fig: plt.Figure, name: str, caption: str, alt: str) -> None:
    """Display ``fig`` as a numbered figure of the book: ``name`` is its cross-reference
    target (``fig-...``), ``caption`` (MyST markdown) goes under it, ``alt`` is the text a
    screen reader gives instead. The three travel in the output's metadata; the book build
    moves them into the cell's ``mystnb`` metadata (:func:`residual_lib.pages.book._clean_executed`).
    In a plain notebook the figure simply displays."""
    from IPython.display import display

    if not name.startswith("fig-"):
        raise ValueError(f"figure names start with 'fig-': {name!r}")
    # the variants as the prose names them: tick labels (fixed here, or a categorical axis would
    # redraw its own), then legends and titles
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [label.get_text() for label in axis.get_ticklabels()]
            if any(display_name(label) != label for label in labels):
                axis.set_ticks(axis.get_ticklocs(), labels=[display_name(label) for label in labels])
    for text in fig.findobj(plt.Text):
        if text.get_text():
            text.set_text(display_name(text.get_text()))
    fig.set_dpi(DPI)
    display(fig, metadata={"residual_lib": {"name": name, "caption": prose_names(caption), "alt": prose_names(alt)}})
    plt.close(fig)


def _legend_outside(ax: plt.Axes, title: str | None = None) -> None:
    """Move the axes' legend to the right of the data."""
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title=title)


PALETTE = {"full": "#1b9e77", "attn_only": "#d95f02", "ffn_only": "#7570b3", "no_residual": "#666666",
           "mixer": "#e7298a"}


def block_variants() -> plt.Figure:
    """The four block variants: which identity paths each keeps (two by two)."""
    fig, axes = plt.subplots(2, 2, figsize=(WIDTH, 6.6))
    specs = [("full", True, True), ("attn_only", True, False), ("ffn_only", False, True), ("no_residual", False, False)]
    for ax, (name, attn_res, ffn_res) in zip(axes.flat, specs):
        ax.set_xlim(0, 5)
        ax.set_ylim(0, 10)
        ax.axis("off")
        ax.set_title(display_name(name), color=PALETTE[name], fontweight="bold", fontsize=12)
        boxes = [(9.0, "y"), (6.8, "FFN(LN2(·))"), (5.0, "h"), (2.9, "Attn(LN1(·))"), (0.8, "x")]
        for y, label in boxes:
            shaded = "(" in label
            ax.text(1.9, y, label, ha="center", va="center", fontsize=11,
                    bbox=dict(boxstyle="round", fc="#eeeeee" if shaded else "white", ec="#333333"))
        for y0, y1 in ((1.3, 2.4), (3.4, 4.5), (5.5, 6.3), (7.3, 8.5)):
            ax.annotate("", (1.9, y1), (1.9, y0), arrowprops=dict(arrowstyle="->", color="#333333"))
        for kept, (y0, y1) in ((attn_res, (0.8, 5.0)), (ffn_res, (5.0, 9.0))):
            style = dict(arrowstyle="->", color=PALETTE[name] if kept else "#999999",
                         linestyle="-" if kept else ":", connectionstyle="arc3,rad=-0.45", lw=2.2 if kept else 1.2)
            ax.annotate("", (3.5, y1), (3.5, y0), arrowprops=style)
            ax.text(4.35, (y0 + y1) / 2, "identity" if kept else "removed", rotation=90, va="center",
                    ha="center", fontsize=10, color=PALETTE[name] if kept else "#666666")
    fig.tight_layout(h_pad=1.5)
    return fig


def _steps_axis(ax) -> None:
    """At most six ticks on a training-step axis, with thousands separated (20,000), so that
    labels of five digits do not run into each other at the page's width."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def loss_curves(curve: pd.DataFrame, value: str = "loss", floor: float | None = None, title: str = "",
                ylabel: str = "validation loss (nats)") -> plt.Figure:
    """Loss against step per variant: the mean over its runs, and where it has several, each run's own
    curve thin beneath it. Not a band of ± 1 std: when a variant's seeds split (FFNOnly's that leave
    the floor and those that stay), a band would show a spread no run has."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    order = variant_order(curve)
    several = curve.groupby("variant")["key"].nunique() > 1 if len(curve) else pd.Series(dtype=bool)
    if several.any():
        sns.lineplot(data=curve[curve.variant.isin(several[several].index)], x="step", y=value, hue="variant",
                     hue_order=order, palette=PALETTE, units="key", estimator=None, lw=0.7, alpha=0.4, legend=False,
                     ax=ax)
    sns.lineplot(data=curve, x="step", y=value, hue="variant", hue_order=order, palette=PALETTE, errorbar=None,
                 lw=2, ax=ax)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1, label=f"floor {floor:.3f}")
        ax.legend()
    ax.set(ylabel=ylabel, xlabel="training step", title=title)
    _legend_outside(ax)
    fig.tight_layout()
    return fig


def final_losses(frame: pd.DataFrame, value: str = "final_val_loss", floor: float | None = None,
                 title: str = "", references: dict[str, float] | None = None) -> plt.Figure:
    """Final validation loss per seed (points) over a box per variant; ``floor`` dashed and
    each of ``references`` (legend label -> loss; a NaN one is left out) as a labelled
    horizontal line."""
    order = variant_order(frame)
    shown = [(label, y) for label, y in (references or {}).items() if y is not None and np.isfinite(y)]
    fig, ax = plt.subplots(figsize=(WIDTH, 4.4 if shown else 3.8))
    sns.boxplot(data=frame, x="variant", y=value, order=order, color="#f2f2f2", fliersize=0, ax=ax)
    with seeded_jitter():
        sns.stripplot(data=frame, x="variant", y=value, order=order, hue="variant",
                      palette={v: PALETTE.get(v, "#333333") for v in order}, size=7, jitter=0.15, legend=False, ax=ax)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1, label=f"floor {floor:.3f}")
    styles = [dict(color="#a6761d", ls="-.", lw=1.4), dict(color="#1f78b4", ls=":", lw=1.6),
              dict(color="#666666", ls=(0, (5, 2, 1, 2)), lw=1.2)]
    for (label, y), style in zip(shown, styles * len(shown)):
        ax.axhline(y, label=f"{label} {y:.3f}", **style)
    if shown:  # several lines: the legend goes under the data, where the labels have the full width
        # one column: two would widen the figure past its 5 inches, and shrink it on a phone
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1, frameon=False)
    elif floor is not None:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set(ylabel="final validation loss (nats)", xlabel="", title=title)
    ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    return fig


def layer0_gradients(curve: pd.DataFrame, marker_step: int | None = None) -> plt.Figure:
    """Layer-0 gradient norm against step, log scale: one line per run (``key``), coloured
    by variant."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    data = curve.assign(grad_norm_layer0=curve["grad_norm_layer0"].clip(lower=1e-12))
    sns.lineplot(data=data, x="step", y="grad_norm_layer0", hue="variant", hue_order=variant_order(curve),
                 palette=PALETTE, units="key", estimator=None, lw=0.8, alpha=0.8, ax=ax)
    ax.set_yscale("log")
    if marker_step is not None:
        ax.axvline(marker_step, color="black", ls=":", lw=1)
    ax.set(ylabel="block-0 gradient norm, pre-clip", xlabel="training step", title="Gradient reaching the first block")
    _legend_outside(ax)
    fig.tight_layout()
    return fig


def gain_curves(curve: pd.DataFrame, spread: pd.DataFrame, tolerance: float) -> plt.Figure:
    """Training loss per gain (top) and the spread across gains at each step (bottom)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH, 5.6), sharex=True, height_ratios=(2, 1))
    gains = sorted(curve["gain"].unique())  # viridis without its pale yellow end, which white hides
    colours = dict(zip(gains, plt.get_cmap("viridis")(np.linspace(0.0, 0.78, len(gains)))))
    sns.lineplot(data=curve, x="step", y="loss", hue="gain", palette=colours, ax=top)
    top.set(ylabel="training loss (nats)", title="Runtime gain g on every sublayer output")
    _legend_outside(top, title="gain g")
    bottom.plot(spread.step, spread.spread, color="black", label="spread")
    bottom.axhline(tolerance, color="red", ls="--", lw=1, label=f"tolerance {tolerance}")
    bottom.set(ylabel="max − min (nats)", xlabel="training step", yscale="log")
    bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def gain_timing(spread: pd.DataFrame, tolerance: float, within: int, until: int | None = None) -> plt.Figure:
    """The spread of the gains' validation losses against step, one line per seed
    (:func:`residual_lib.study.gains.gain_spread`), up to step ``until``; the tolerance and the
    paper's scaled step ``within`` marked."""
    if until is not None:
        spread = spread[spread.step <= until]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6))
    sns.lineplot(data=spread.assign(seed=spread.seed.astype(str)), x="step", y="spread", hue="seed",
                 palette="colorblind", marker="o", markersize=3, ax=ax)
    ax.axhline(tolerance, color="red", ls="--", lw=1)
    ax.axvline(within, color="black", ls=":", lw=1)
    ax.set(ylabel="max − min over gains (nats)", xlabel="training step", yscale="log",
           title="When the gains' validation losses meet")
    _legend_outside(ax, title="seed")
    fig.tight_layout()
    return fig


def eval_spread(estimates: pd.DataFrame) -> plt.Figure:
    """Random-batch evaluations of each final model around its fixed-batch loss."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.8))
    order = variant_order(estimates)
    with seeded_jitter():
        sns.stripplot(data=estimates, x="variant", y="deviation", order=order, hue="variant", palette=PALETTE,
                      jitter=0.2, alpha=0.7, legend=False, ax=ax)
    ax.axhline(0, color="black", lw=1)
    ax.set(ylabel="random − fixed batches (nats)", xlabel="", title="Evaluation noise of nanoGPT-style validation")
    ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    return fig


def alpha_heatmap(matrix: np.ndarray, title: str = "") -> plt.Figure:
    """Attention diagonal mass alpha_tt, layers x heads."""
    fig, ax = plt.subplots(figsize=(min(WIDTH, 1.6 + 1.0 * matrix.shape[1]), 1.2 + 0.7 * matrix.shape[0]))
    sns.heatmap(matrix, vmin=0, vmax=1, annot=True, fmt=".2f", cmap="magma",
                cbar_kws={"label": r"$\alpha_{tt}$ (attention on its own position)"}, ax=ax)
    ax.set(xlabel="head", ylabel="layer", title=title)
    fig.tight_layout()
    return fig


def ladder_gaps(table: pd.DataFrame, points: pd.DataFrame | None = None) -> plt.Figure:
    """The scale ladder: each gap of :func:`residual_lib.study.scaling.ladder_gaps` against the
    parameter count (log scale), the mean over seeds with its 95% t interval (none for a
    rung with one seed), one panel per gap, stacked; with ``points``
    (:func:`residual_lib.study.scaling.ladder_gap_points`) every seed's gap as a small dot beside
    its rung's mean."""
    gaps = list(dict.fromkeys(table["gap"]))
    fig, axes = plt.subplots(max(1, len(gaps)), 1, figsize=(WIDTH, 3.0 * max(1, len(gaps))), squeeze=False,
                             sharex=True)
    colors = {"attn_only - full": PALETTE["attn_only"], "ffn_only - floor": PALETTE["ffn_only"]}
    ticks = sorted(set(table["n_params"]))
    for ax, gap in zip(axes[:, 0], gaps):
        color = colors.get(gap, "black")
        part = table[table["gap"] == gap].sort_values("n_params")
        half = (part["mean"] - part["t_low"]).fillna(0)
        ax.errorbar(part["n_params"], part["mean"], yerr=half, marker="o", capsize=4, color=color, zorder=3)
        if points is not None and len(points):
            mine = points[points["gap"] == gap]
            # the seeds sit just right of their rung's mean (a log-scale offset), so neither hides the other
            ax.scatter(mine["n_params"] * 1.12, mine["value"], s=14, color=color, alpha=0.55, lw=0, zorder=2)
        for _, row in part.iterrows():  # the seed count, short enough not to collide with its neighbours
            ax.annotate(f"n={row['seeds']}", (row["n_params"], row["mean"]), textcoords="offset points",
                        xytext=(-6, -14), ha="right", fontsize=9, color="#333333")
        ax.axhline(0, color="black", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xticks(ticks, [size_text(n) for n in ticks])
        ax.minorticks_off()
        ax.margins(x=0.15, y=0.3)
        ax.set(ylabel="gap (nats)", title=gap)
    axes[-1, 0].set_xlabel("parameters (log scale)")
    fig.tight_layout()
    return fig


def escape_curves(curve: pd.DataFrame, floor: float, tolerance: float, order: list[str]) -> plt.Figure:
    """FFNOnly's validation loss per run, one panel per escape-study condition (``condition``
    column), with the floor of the evaluation batches and the band that counts as "at the
    floor"; runs are coloured by their outcome (``escaped`` column: True, False)."""
    conditions = [c for c in order if c in set(curve["condition"])]
    cols = min(2, len(conditions))
    rows = -(-len(conditions) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH, 2.6 * rows + 0.6), sharey=True, sharex=True, squeeze=False)
    colours = {True: "#d95f02", False: "#7570b3"}
    for ax, condition in zip(axes.flat, conditions):
        part = curve[curve.condition == condition]
        for (_, escaped), run in part.groupby(["key", "escaped"], sort=False):
            ax.plot(run["step"], run["loss"], color=colours[bool(escaped)], lw=1.2 if escaped else 0.8,
                    alpha=0.95 if escaped else 0.55)
        ax.axhspan(floor - tolerance, floor + tolerance, color="#dddddd", zorder=0)
        ax.axhline(floor, color="black", ls="--", lw=1)
        # the runs on the floor lie one over the other: the count says how many there are
        outcome = part.groupby("key")["escaped"].first().astype(bool)
        said = (f"{outcome.sum()} of {len(outcome)} runs {'escapes' if outcome.sum() == 1 else 'escape'}" if len(outcome) > 1
                else f"the one run {'escapes' if outcome.all() else 'stays'}")
        ax.text(0.97, 0.95, said, transform=ax.transAxes, ha="right", va="top", fontsize=10,
                bbox=dict(boxstyle="square,pad=0.15", fc="white", ec="none"))
        # long condition names wrap, so that no title widens the figure beyond its design width
        ax.set(title=textwrap.fill(condition, 24), xlabel="training step", ylabel="val loss (nats)")
        ax.tick_params(labelbottom=True)  # every panel keeps its step axis
    for ax in list(axes.flat)[len(conditions):]:
        ax.axis("off")
    ymin = min(curve["loss"].min(), floor - 3 * tolerance)
    axes.flat[0].set_ylim(ymin - 0.05, floor + 0.25)
    handles = [plt.Line2D([], [], color=colours[True], label="escapes"),
               plt.Line2D([], [], color=colours[False], label="stays at the floor")]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def escape_distances(runs: pd.DataFrame, thresholds, order: list[str], input_blind: float | None = None
                     ) -> plt.Figure:
    """How far below its floor every FFNOnly run ends (``below_floor``, nats; negative:
    above it), one row of points per setting (``setting`` column, in ``order``), with a
    line at each threshold an escape is counted at and, in red, at ``input_blind`` (the most
    a model that ignores its input can end below the floor)."""
    settings = [s for s in order if s in set(runs["setting"])]
    fig, ax = plt.subplots(figsize=(WIDTH, 1.1 + 0.7 * len(settings)))
    with seeded_jitter():
        sns.stripplot(data=runs, x="below_floor", y="setting", order=settings, hue="setting", hue_order=settings,
                      palette=["#7570b3", "#d95f02", "#1b9e77", "#666666"][:len(settings)], size=6, jitter=0.18,
                      legend=False, ax=ax)
    for t, style in zip(thresholds, (":", "--", "-.")):
        ax.axvline(t, color="black", lw=0.9, ls=style)
        ax.annotate(f"{t:g}", (t, 1.0), xycoords=("data", "axes fraction"), xytext=(2, 2),
                    textcoords="offset points", fontsize=9)
    if input_blind is not None:
        ax.axvline(input_blind, color="#d62728", lw=0.9)
        ax.annotate("input-blind", (input_blind, 0.0), xycoords=("data", "axes fraction"), xytext=(2, 2),
                    textcoords="offset points", fontsize=9, color="#d62728")
    ax.axvline(0, color="#999999", lw=0.8)
    low, high = min(-0.05, runs.below_floor.min() - 0.02), max(max(thresholds) + 0.05, runs.below_floor.max() + 0.03)
    ax.set_xlim(low, high)
    ax.set(xlabel="nats below the floor at the end of training", ylabel="")
    fig.tight_layout()
    return fig


def budget_curves(curve: pd.DataFrame, floor: float, line: float, bigram: float) -> plt.Figure:
    """The budget study's validation curves (``variant``, ``key``, ``step``, ``loss``): every
    FFNOnly run, thin, with the anchors (AttnOnly, NoResidual) in their colours; the floor of the
    evaluation batches (dashed), the line an escape must cross (dotted) and the bigram reference
    (dash-dotted)."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.4))
    for (variant, _), run in curve.groupby(["variant", "key"], sort=False):
        ffn = variant == "ffn_only"
        ax.plot(run["step"], run["loss"], color=PALETTE.get(variant, "black"), lw=0.9 if ffn else 1.3,
                alpha=0.6 if ffn else 0.9)
    ax.axhline(floor, color="black", ls="--", lw=1)
    ax.axhline(floor - line, color="black", ls=":", lw=1)
    ax.axhline(bigram, color="black", ls="-.", lw=1)
    runs = [plt.Line2D([], [], color=PALETTE[v], label=v) for v in ("ffn_only", "attn_only", "no_residual")
            if v in set(curve["variant"])]
    lines = [plt.Line2D([], [], color="black", ls="--", label="floor"),
             plt.Line2D([], [], color="black", ls=":", label=f"floor − {line:g}"),
             plt.Line2D([], [], color="black", ls="-.", label="bigram")]
    # below the axes, the runs in the first row and the reference lines in the second (a legend
    # fills its columns first); beside the axes it would take a third of a phone's width
    blank = plt.Line2D([], [], alpha=0, label=" ")
    runs += [blank] * (3 - len(runs))
    ax.legend(handles=[h for pair in zip(runs, lines) for h in pair], loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=3, frameon=False)
    ax.set(xlabel="training step", ylabel="val loss (nats)", title="Ten times the budget")
    _steps_axis(ax)
    ax.set_ylim(min(curve["loss"].min(), bigram) - 0.1, floor + 0.4)
    fig.tight_layout()
    return fig


def survival(km: pd.DataFrame, steps: int, flat_after: int, stay: float | None) -> plt.Figure:
    """The Kaplan-Meier share of FFNOnly runs still on the floor (``step``, ``on_floor``) to
    step ``steps``; dotted, the step after which an escape rules out the structural reading, and
    dashed, the share on the floor that reading needs (``stay``; None: not drawn)."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    x = [*km["step"], steps]
    y = [*km["on_floor"], km["on_floor"].iloc[-1]]
    ax.step(x, y, where="post", color=PALETTE["ffn_only"], lw=1.6)
    ax.axvline(flat_after, color="black", ls=":", lw=1)
    if stay is not None:
        ax.axhline(stay, color="black", ls="--", lw=1)
    ax.set(xlabel="training step", ylabel="share still on the floor", ylim=(-0.02, 1.05), xlim=(0, steps),
           title="FFNOnly's time on the floor (Kaplan–Meier)")
    _steps_axis(ax)
    fig.tight_layout()
    return fig
