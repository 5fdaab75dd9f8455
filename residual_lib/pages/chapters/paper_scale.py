"""Chapter 12, the paper's own 10M setting: each variant's final and best loss beside the paper's
values and the stand-in's, block 0's gradient and α_tt at that scale, and the loss curves against
training tokens, as the tables, sentences and figure ``notebooks/12_paper_scale.py`` shows."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...run.architecture import CENTRAL_VARIANTS, display_name
from ...run.profiles import BOOK_PROFILE, PAPER_SCALE, get_profile
from ...storage.records import read_record
from ...study import analysis, paper
from .. import scorecard
from ..plots import PALETTE, WIDTH
from ..tables import listing, missing_runs, plural, signed  # noqa: F401 (missing_runs: the notebook's)

#: nanoGPT's published best validation loss for its ``shakespeare_char`` configuration, the Full
#: model at this setting (nanoGPT's README: "val loss 1.4697", about 3 minutes on one A100). A
#: reference from another codebase, not the paper's value and not a run of this one.
NANOGPT_BEST = 1.4697


#: The scorecard's claims this chapter's records decide at the paper's setting.
CLAIMS = ["asymmetry_10m", "ffn_collapse_10m", "ffn_vs_no_residual", "ratio_10m", "joint_collapse_10m",
          "layer0_starved_attn_only", "layer0_starved_ffn_only", "layer0_starved_no_residual", "layer0_full",
          "alpha_routing"]


def profiles(profile: str) -> tuple[str | None, str]:
    """The profile that runs the paper's setting beside the book's ``profile`` (None where none
    does) and the stand-in its runs are set beside (the book's stand-in when ``profile`` is the
    paper's setting itself)."""
    study = PAPER_SCALE.get(profile)
    return study, (BOOK_PROFILE if profile == study else profile)


def verdict_box(records: pd.DataFrame, study: str | None, stand_in: str, every_run: pd.DataFrame):
    """The scorecard's verdicts at ``study`` on :data:`CLAIMS` (a box, as every chapter opens
    with), or one line where the scorecard has no column for ``study`` (a smoke book's)."""
    if study not in scorecard.profiles_for_scale("10M", stand_in):
        return f"The scorecard judges `paper-10m` only; this book's runs of the setting are at `{study}`."
    scoped = records.copy()
    scoped.attrs = {**records.attrs, "profile": study}
    return scorecard.verdict_box(CLAIMS, scoped, scorecard.build(records.attrs["results_dir"], stand_in, every_run))


def recipe(study: str | None) -> str:
    """The paper's setting as ``study`` holds it, in one sentence for the chapter's opening."""
    if study is None:
        return "No profile runs the paper's setting beside this book's."
    p = get_profile(study)
    return (f"`{study}`: {p.n_layer} layers, {p.n_head} heads, width {p.n_embd}, context {p.block_size}, batch "
            f"{p.batch_size}, dropout {p.dropout:g}, {p.max_iters:,} steps ({p.training_tokens / 1e6:.3g}M training "
            f"tokens), learning rate {p.learning_rate:g} decaying to {p.min_lr:g}, in {p.precision}: nanoGPT's "
            "`shakespeare_char` recipe, which this book reads as the paper's 10M setting (the summary names nanoGPT "
            "and its 10M scale, not the settings).")


def paper_values() -> pd.DataFrame:
    """The paper's 10M value of each central variant as ``paper_claims.csv`` holds it: ``value``,
    and ``text`` as the book quotes it. AttnOnly and FFNOnly are the controlled sweep's means
    (section 6), NoResidual its anchor; the summary gives Full no value, only that the partial
    variants' 3.35 is 2.27 times it, so Full's is that quotient, marked as inferred."""
    claims = paper.claims()

    def row(claim, variant, quantity="final_val_loss"):
        return claims[(claims.claim == claim) & (claims.variant == variant) & (claims.quantity == quantity)].iloc[0]

    out = []
    for variant, (claim, quantity) in {"attn_only": ("asymmetry_10m", None), "ffn_only": ("asymmetry_10m", None),
                                       "no_residual": ("ffn_collapse_10m", None)}.items():
        r = row(claim, variant)
        text = f"{r.value:.3f}" + (f" ± {r['std']:.3f}" if pd.notna(r["std"]) else "")
        text += f" ({r.seeds})" if str(r.seeds).endswith("seeds") else ""
        out.append({"variant": variant, "value": float(r.value), "text": text})
    partial, ratio = row("joint_collapse_10m", "partial"), row("joint_collapse_10m", "partial", "ratio_to_full")
    full = partial.value / ratio.value
    out.append({"variant": "full", "value": full, "text": f"≈ {full:.3f} ({partial.value:g} ÷ {ratio.value:g})"})
    return pd.DataFrame(out).set_index("variant").reindex(CENTRAL_VARIANTS)


def _field(frame: pd.DataFrame, name: str) -> pd.Series:
    """One field of each record of ``frame`` (read from its file: the frame keeps only some)."""
    return pd.Series([read_record(path)[name] for path in frame.path], index=frame.index, dtype=float)


def _mean_text(values: pd.Series) -> str:
    return f"{values.mean():.3f}" + (f" ± {values.std():.3f}" if len(values) > 1 else "")


def comparison(records: pd.DataFrame, stand_in: pd.DataFrame) -> pd.DataFrame:
    """One row per central variant with a record: its seeds, final and best validation loss (mean
    ± std over seeds), the step of the best, the paper's value and the final loss's difference
    from it, and the stand-in's final loss (``stand_in``: its central sweep)."""
    values, rows = paper_values(), []
    for variant in CENTRAL_VARIANTS:
        mine = records[records.variant == variant]
        if not len(mine):
            continue
        theirs = stand_in.loc[stand_in.variant == variant, "final_val_loss"] if len(stand_in) else pd.Series([], dtype=float)
        rows.append({"variant": display_name(variant), "seeds": len(mine), "final": _mean_text(mine.final_val_loss),
                     "best": _mean_text(mine.best_val_loss),
                     "best at step": listing(f"{int(s):,}" for s in _field(mine.sort_values("seed"), "best_step")),
                     "the paper": values.loc[variant, "text"],
                     "final − the paper": signed(mine.final_val_loss.mean() - values.loc[variant, "value"]),
                     "stand-in": _mean_text(theirs) if len(theirs) else "—"})
    return pd.DataFrame(rows, columns=["variant", "seeds", "final", "best", "best at step", "the paper",
                                       "final − the paper", "stand-in"])


def finding(records: pd.DataFrame, absent: list, floor_tol: float) -> str:
    """The chapter's outcome in sentences, for its opening and the introduction: where each
    variant ended at the paper's setting, against the paper's values and the floor."""
    if not len(records):
        study = absent[0].profile.name if absent else "paper-10m"
        return (f"No `{study}` run is recorded yet: {len(absent)} {plural('run', len(absent))} of the paper's own "
                f"setting {'is' if len(absent) == 1 else 'are'} training or queued.")
    study = get_profile(records.profile.iloc[0])
    floor, values = float(records.eval_floor.iloc[0]), paper_values()
    means = records.groupby("variant")[["final_val_loss", "best_val_loss"]].mean()
    seeds = records.groupby("variant").size()
    order = [v for v in CENTRAL_VARIANTS if v in means.index]
    ends = listing(f"{display_name(v)} at {means.loc[v, 'final_val_loss']:.3f}"
                   + (f" (mean of {seeds[v]} seeds)" if seeds[v] > 1 else "") for v in order)
    text = (f"At the paper's own setting (`{study.name}`: {study.training_tokens / 1e6:.3g}M training tokens, "
            f"trained here {scorecard.how_trained(records)}), {ends}, against a floor of {floor:.3f}.")
    said = []
    if "ffn_only" in means.index:
        gap = floor - means.loc["ffn_only", "final_val_loss"]
        said.append(f"FFNOnly {'stays at the floor' if abs(gap) <= floor_tol else f'ends {gap:.3f} below the floor'}"
                    f" (the paper: {values.loc['ffn_only', 'value']:.3f})")
    if "attn_only" in means.index:
        attn = means.loc["attn_only", "final_val_loss"]
        said.append(f"AttnOnly {'recovers' if floor - attn > floor_tol else 'does not recover'}, ending "
                    f"{signed(attn - values.loc['attn_only', 'value'])} from the paper's "
                    f"{values.loc['attn_only', 'value']:.3f}")
    if "full" in means.index:
        best = means.loc["full", "best_val_loss"]
        said.append(f"Full's best loss is {best:.3f}, {signed(best - NANOGPT_BEST)} from nanoGPT's published "
                    f"{NANOGPT_BEST}")
    if said:
        text += " " + "; ".join(said) + "."
    if absent:
        text += f" {len(absent)} more {plural('run', len(absent))} of this setting {'is' if len(absent) == 1 else 'are'} still to come."
    return text


def layer0(records: pd.DataFrame) -> pd.DataFrame:
    """Block 0's gradient from the paper's step 300 on (:func:`analysis.layer0_after`, its share of
    a run) per variant: median norm, the share of logged steps that round to the paper's 0.000,
    and the paper's value."""
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


#: The α tables' headers (a header's underscores are otherwise read as spaces).
ALPHA_HEADERS = {"mean": "mean α_tt"}


def alpha(records: pd.DataFrame) -> pd.DataFrame:
    """α_tt (attention's weight on a position's own token) per variant: the mean over layers and
    heads (``mean``, shown as :data:`ALPHA_HEADERS` names it) and the largest head's."""
    runs = analysis.alpha_summary(records)
    grouped = runs.groupby("variant")
    out = pd.DataFrame({"seeds": grouped.size(), "mean": grouped["mean"].mean(),
                        "largest head": grouped.max_head.max()})
    out = out.reindex([v for v in CENTRAL_VARIANTS if v in out.index])
    out.index = [display_name(v) for v in out.index]
    return out.rename_axis("variant").reset_index()


def curves_figure(curves: pd.DataFrame, floor: float) -> plt.Figure:
    """Validation loss against training tokens (log scale), one colour per variant, the paper's
    setting solid and the stand-in dashed (``curves``: columns profile, variant, tokens, loss,
    means over seeds); the floor dotted. One axis: the two budgets differ twentyfold."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    profiles = list(dict.fromkeys(curves.profile))
    for (profile, variant), part in curves.groupby(["profile", "variant"], sort=False):
        ax.plot(part.tokens / 1e6, part.loss, color=PALETTE[variant], lw=1.8 if profile == profiles[0] else 1.2,
                ls="-" if profile == profiles[0] else "--")
    ax.axhline(floor, color="black", ls=":", lw=1)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="training tokens (millions, log scale)", ylabel="validation loss (nats)")
    variants = [v for v in CENTRAL_VARIANTS if v in set(curves.variant)]
    handles = [plt.Line2D([], [], color=PALETTE[v], lw=2) for v in variants]
    handles += [plt.Line2D([], [], color="#333333", ls=ls) for ls in ("-", "--")[:len(profiles)]]
    labels = [display_name(v) for v in variants] + profiles
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def mean_curves(records: pd.DataFrame, stand_in: pd.DataFrame) -> pd.DataFrame:
    """The validation curves of ``records`` (the paper's setting) and ``stand_in`` as means over
    seeds per profile, variant and step, with the training tokens seen at each step."""
    frame = pd.concat([records, stand_in], ignore_index=True)
    curves = analysis.curves(frame, "val")
    per_step = (_field(frame, "tokens") / frame.steps).groupby(frame.profile).first()
    out = curves.groupby(["profile", "variant", "step"], sort=False)["loss"].mean().reset_index()
    out["tokens"] = out.step * out.profile.map(per_step)
    return out[out.tokens > 0]


def overfit_text(records: pd.DataFrame) -> str:
    """How far each variant's final loss ends above its best: the model overfits where it does."""
    gaps = (records.final_val_loss - records.best_val_loss).groupby(records.variant).mean()
    parts = [f"{display_name(v)} {gaps[v]:.3f}" for v in CENTRAL_VARIANTS if v in gaps.index]
    if not parts:
        return ""
    worst = gaps.idxmax()
    return (f"The final loss lies above the best by {listing(parts)} nats: "
            + (f"{display_name(worst)} overfits most, its validation loss rising after step "
               f"{int(_field(records[records.variant == worst], 'best_step').min()):,}." if gaps.max() > 0.005 else
               "no variant overfits by more than 0.005 nats at this budget."))


def uniform_alpha(records: pd.DataFrame) -> float:
    """α_tt of attention spread evenly over the causal window of these records' context."""
    return analysis.uniform_causal_alpha(int(records.block_size.iloc[0])) if len(records) else np.nan


#: The captions and alt texts of the chapter's figure.
CURVES_CAPTION = ("Validation loss on the fixed batches against training tokens (log scale), mean over seeds: the "
                  "paper's setting solid, the stand-in dashed; dotted, the floor of the paper setting's batches.")
CURVES_ALT = ("Line chart of validation loss in nats against training tokens in millions on a log axis, one colour per"
              " variant, solid lines for the paper's setting and dashed ones for the stand-in, with a dotted floor.")
