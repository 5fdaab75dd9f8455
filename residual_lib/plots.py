"""The book's figures, one function per figure (seaborn / matplotlib). Each returns the
matplotlib Figure and draws only from the frames it is given."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .analysis import variant_order

PALETTE = {"full": "#1b9e77", "attn_only": "#d95f02", "ffn_only": "#7570b3", "no_residual": "#666666",
           "mixer": "#e7298a"}


def block_variants() -> plt.Figure:
    """The four block variants: which identity paths each keeps."""
    fig, axes = plt.subplots(1, 4, figsize=(11, 3.6))
    specs = [("full", True, True), ("attn_only", True, False), ("ffn_only", False, True), ("no_residual", False, False)]
    for ax, (name, attn_res, ffn_res) in zip(axes, specs):
        ax.set_xlim(0, 4)
        ax.set_ylim(0, 10)
        ax.axis("off")
        ax.set_title(name, color=PALETTE[name], fontweight="bold")
        boxes = [(8.4, "y"), (6.3, "FFN(LN2(·))"), (4.6, "h"), (2.5, "Attn(LN1(·))"), (0.8, "x")]
        for y, label in boxes:
            shaded = "(" in label
            ax.text(1.6, y, label, ha="center", va="center", fontsize=9,
                    bbox=dict(boxstyle="round", fc="#eeeeee" if shaded else "white", ec="#333333"))
        for y0, y1 in ((1.2, 2.1), (2.9, 4.2), (5.0, 5.9), (6.7, 8.0)):
            ax.annotate("", (1.6, y1), (1.6, y0), arrowprops=dict(arrowstyle="->", color="#333333"))
        for kept, (y0, y1) in ((attn_res, (0.8, 4.6)), (ffn_res, (4.6, 8.4))):
            style = dict(arrowstyle="->", color=PALETTE[name] if kept else "#bbbbbb",
                         linestyle="-" if kept else ":", connectionstyle="arc3,rad=-0.45", lw=2 if kept else 1)
            ax.annotate("", (3.0, y1), (3.0, y0), arrowprops=style)
            ax.text(3.55, (y0 + y1) / 2, "+ identity" if kept else "removed", rotation=90, va="center",
                    fontsize=8, color=PALETTE[name] if kept else "#999999")
    fig.suptitle("Pre-LN block variants: solid arcs are the identity paths that are kept", fontsize=10)
    fig.tight_layout()
    return fig


def loss_curves(curve: pd.DataFrame, value: str = "loss", floor: float | None = None, title: str = "",
                ylabel: str = "validation loss") -> plt.Figure:
    """Loss against step per variant; with several seeds, the mean and a band of +- 1 std."""
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(data=curve, x="step", y=value, hue="variant", hue_order=variant_order(curve), palette=PALETTE,
                 errorbar="sd", ax=ax)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1, label=f"unigram floor {floor:.3f}")
        ax.legend()
    ax.set(ylabel=ylabel, title=title)
    fig.tight_layout()
    return fig


def final_losses(frame: pd.DataFrame, value: str = "final_val_loss", floor: float | None = None,
                 title: str = "") -> plt.Figure:
    """Final validation loss per seed (points) over a box per variant."""
    order = variant_order(frame)
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.boxplot(data=frame, x="variant", y=value, order=order, color="#f2f2f2", fliersize=0, ax=ax)
    sns.stripplot(data=frame, x="variant", y=value, order=order, hue="variant", palette=PALETTE, size=7,
                  jitter=0.15, legend=False, ax=ax)
    if floor is not None:
        ax.axhline(floor, color="black", ls="--", lw=1, label=f"unigram floor {floor:.3f}")
        ax.legend(loc="lower right")
    ax.set(ylabel="final validation loss", title=title)
    fig.tight_layout()
    return fig


def layer0_gradients(curve: pd.DataFrame, marker_step: int | None = None) -> plt.Figure:
    """Layer-0 gradient norm against step, log scale, per variant."""
    fig, ax = plt.subplots(figsize=(7, 4))
    data = curve.assign(grad_norm_layer0=curve["grad_norm_layer0"].clip(lower=1e-12))
    sns.lineplot(data=data, x="step", y="grad_norm_layer0", hue="variant", hue_order=variant_order(curve),
                 palette=PALETTE, errorbar="sd", ax=ax)
    ax.set_yscale("log")
    if marker_step is not None:
        ax.axvline(marker_step, color="black", ls=":", lw=1)
    ax.set(ylabel="layer-0 gradient norm (pre-clip)", title="Gradient reaching the first block")
    fig.tight_layout()
    return fig


def gain_curves(curve: pd.DataFrame, spread: pd.DataFrame, tolerance: float) -> plt.Figure:
    """Training loss per gain (top) and the spread across gains at each step (bottom)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, height_ratios=(2, 1))
    sns.lineplot(data=curve, x="step", y="loss", hue="gain", palette="viridis", ax=top)
    top.set(ylabel="training loss", title="Runtime gain g on every sublayer output")
    bottom.plot(spread.step, spread.spread, color="black")
    bottom.axhline(tolerance, color="red", ls="--", lw=1, label=f"tolerance {tolerance}")
    bottom.set(ylabel="max - min across gains", yscale="log")
    bottom.legend()
    fig.tight_layout()
    return fig


def eval_spread(estimates: pd.DataFrame) -> plt.Figure:
    """Random-batch evaluations of each final model around its fixed-batch loss."""
    fig, ax = plt.subplots(figsize=(7, 4))
    order = variant_order(estimates)
    sns.stripplot(data=estimates, x="variant", y="deviation", order=order, hue="variant", palette=PALETTE,
                  jitter=0.2, alpha=0.7, legend=False, ax=ax)
    ax.axhline(0, color="black", lw=1)
    ax.set(ylabel="random-batch estimate - fixed-batch loss", title="Evaluation noise of nanoGPT-style validation")
    fig.tight_layout()
    return fig


def alpha_heatmap(matrix: np.ndarray, title: str = "") -> plt.Figure:
    """Attention diagonal mass alpha_tt, layers x heads."""
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * matrix.shape[1], 1.0 + 0.6 * matrix.shape[0]))
    sns.heatmap(matrix, vmin=0, vmax=1, annot=True, fmt=".2f", cmap="magma", cbar_kws={"label": "alpha_tt"}, ax=ax)
    ax.set(xlabel="head", ylabel="layer", title=title)
    fig.tight_layout()
    return fig


def ladder(table: pd.DataFrame) -> plt.Figure:
    """The scale ladder: each gap of :func:`residual_lib.analysis.ladder_gaps` against the
    parameter count (log scale), mean +- 1 std over seeds, one panel per gap."""
    gaps = list(dict.fromkeys(table["gap"]))
    fig, axes = plt.subplots(1, max(1, len(gaps)), figsize=(5.2 * max(1, len(gaps)), 3.8), squeeze=False)
    colors = {"attn_only - full": PALETTE["attn_only"], "ffn_only - floor": PALETTE["ffn_only"]}
    for ax, gap in zip(axes[0], gaps):
        part = table[table["gap"] == gap].sort_values("n_params")
        ax.errorbar(part["n_params"], part["mean"], yerr=part["std"].fillna(0), marker="o", capsize=4,
                    color=colors.get(gap, "black"))
        for _, row in part.iterrows():
            ax.annotate(f"{row['profile']}\n{row['seeds']} seed(s)", (row["n_params"], row["mean"]),
                        textcoords="offset points", xytext=(6, 6), fontsize=8)
        ax.axhline(0, color="black", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set(xlabel="parameters (non-embedding-position, tied head once)", ylabel=f"{gap} (nats)", title=gap)
    fig.tight_layout()
    return fig


def escape_curves(curve: pd.DataFrame, floor: float, tolerance: float, order: list[str]) -> plt.Figure:
    """FFNOnly's validation loss per seed, one panel per escape-study condition (``condition``
    column), with the floor of the evaluation batches and the band that counts as "at the floor"."""
    conditions = [c for c in order if c in set(curve["condition"])]
    cols = min(3, len(conditions))
    rows = -(-len(conditions) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), sharey=True, squeeze=False)
    for ax, condition in zip(axes.flat, conditions):
        part = curve[curve.condition == condition]
        sns.lineplot(data=part, x="step", y="loss", hue="seed", palette="tab10", ax=ax, legend=ax is axes.flat[0])
        ax.axhspan(floor - tolerance, floor + tolerance, color="#dddddd", zorder=0)
        ax.axhline(floor, color="black", ls="--", lw=1)
        ax.set(title=condition, xlabel="step", ylabel="validation loss (nats)")
    for ax in list(axes.flat)[len(conditions):]:
        ax.axis("off")
    ymin = min(curve["loss"].min(), floor - 3 * tolerance)
    axes.flat[0].set_ylim(ymin - 0.05, floor + 0.25)
    fig.suptitle(f"FFNOnly, every seed: the dashed line is the floor, the grey band ±{tolerance} nats", fontsize=10)
    fig.tight_layout()
    return fig

