"""Chapter 12, the paper's own 10M setting: each variant's final and best loss beside the paper's
values and the stand-in's, and the loss curves against training tokens, as the tables, sentences
and figure ``notebooks/12_paper_scale.py`` shows; block 0's gradient and α_tt at that scale come
from :mod:`residual_lib.pages.chapters.paper_scale_inside`, re-exported here."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, NullFormatter

from ...run.architecture import CENTRAL_VARIANTS
from ...run.profiles import BOOK_PROFILE, PAPER_SCALE, get_profile
from ...run.runs import PAPER_SEEDS
from ...storage.records import read_record
from ...study import analysis, paper
from .. import scorecard
from ..names import display_name
from ..plots import PALETTE, WIDTH
from ..tables import listing, mean_std, missing_runs, narrow, plural, still_to_come  # noqa: F401 (the notebook's)
from .paper_scale_setting import cost, outside_sweep, recipe  # noqa: F401 (the notebook's)
from .paper_scale_inside import (ALPHA_HEADERS, alpha, alpha_text, layer0, layer0_note,  # noqa: F401 (the notebook's)
                                 layer0_text, uniform_alpha)

#: nanoGPT's published best validation loss for its ``shakespeare_char`` configuration, the Full
#: model at this setting (nanoGPT's README: "val loss 1.4697", about 3 minutes on one A100). A
#: reference from another codebase, not the paper's value and not a run of this one.
NANOGPT_BEST = 1.4697
#: How far (nats) a variant's final loss may end above its best before the chapter says it overfits.
OVERFIT = 0.01
#: The scorecard's claims this chapter's records decide at the paper's setting.
CLAIMS = ["asymmetry_10m", "ffn_collapse_10m", "ffn_vs_no_residual", "ratio_10m", "joint_collapse_10m",
          "layer0_starved_attn_only", "layer0_starved_ffn_only", "layer0_starved_no_residual", "layer0_full",
          "hidden_norm_growth", "alpha_routing", "eval_noise_explains", "original_record"]


def profiles(profile: str) -> tuple[str | None, str]:
    """The profile that runs the paper's setting beside the book's ``profile`` (None where none
    does) and the stand-in its runs are set beside (the book's stand-in when ``profile`` is the
    paper's setting itself)."""
    study = PAPER_SCALE.get(profile)
    return study, (BOOK_PROFILE if profile == study else profile)


def verdict_box(records: pd.DataFrame, study: str | None, stand_in: str, every_run: pd.DataFrame):
    """The scorecard's verdicts at ``study`` on :data:`CLAIMS` (a box, as every chapter opens
    with), or one line where the scorecard has no column for ``study`` (a smoke book's)."""
    if study is None:
        return f"`{stand_in}` has no run of the paper's setting beside it."
    if study not in scorecard.profiles_for_scale("10M", stand_in):
        return f"The scorecard judges `paper-10m` only; this book's runs of the setting are at `{study}`."
    scoped = records.copy()
    scoped.attrs = {**records.attrs, "profile": study}
    table = scorecard.build(records.attrs["results_dir"], stand_in, every_run)
    shaky = scorecard.fragile(scorecard.sensitivity(stand_in=stand_in, records=every_run, table=table, remember=True))
    return scorecard.verdict_box(CLAIMS, scoped, table, fragile_cells=shaky)


def paper_values() -> pd.DataFrame:
    """The paper's 10M value of each central variant as ``paper_claims.csv`` holds it: ``value``,
    and ``text`` as the book quotes it. AttnOnly and FFNOnly are the controlled sweep's means
    (section 6), NoResidual its anchor; the summary gives Full no value, only that the partial
    variants' 3.35 is 2.27 times it in its nanoGPT runs, so Full's is that quotient, marked as
    inferred and given to two decimals (the rounding of its inputs leaves 1.470 to 1.481)."""
    claims = paper.claims()

    def row(claim, variant, quantity="final_val_loss"):
        return claims[(claims.claim == claim) & (claims.variant == variant) & (claims.quantity == quantity)].iloc[0]

    out = []
    for variant, claim in (("attn_only", "asymmetry_10m"), ("ffn_only", "asymmetry_10m"),
                           ("no_residual", "ffn_collapse_10m")):
        r = row(claim, variant)
        text = f"{r.value:.3f}" + (f" ± {r['std']:.3f}" if pd.notna(r["std"]) else "")
        text += f" ({r.seeds})" if str(r.seeds).endswith("seeds") else ""
        out.append({"variant": variant, "value": float(r.value), "text": text, "std": float(r["std"]),
                    "seeds": str(r.seeds)})
    partial, ratio = row("joint_collapse_10m", "partial"), row("joint_collapse_10m", "partial", "ratio_to_full")
    full = partial.value / ratio.value
    out.append({"variant": "full", "value": full, "text": f"≈ {full:.2f} ({partial.value:g} ÷ {ratio.value:g})",
                "std": np.nan, "seeds": ""})
    return pd.DataFrame(out).set_index("variant").reindex(CENTRAL_VARIANTS)


def comparison_note(stand_in: str, full_shown: bool = True) -> str:
    """What the comparison table sets each variant beside, with the numbers it rests on."""
    claims = paper.claims()
    pick = claims[(claims.claim == "joint_collapse_10m") & (claims.variant == "partial")].set_index("quantity").value
    loss, ratio = float(pick["final_val_loss"]), float(pick["ratio_to_full"])
    low, high = (loss - 0.005) / (ratio + 0.005), (loss + 0.005) / (ratio - 0.005)
    full = "value here is" if full_shown else "row, once its run is recorded, takes"
    return (f"Final and best validation loss on the fixed batches, how many seeds end at the floor, the paper's "
            f"value, and the stand-in's (`{stand_in}`: its central sweep, mean ± std over seeds). The paper gives "
            f"Full no value at 10M, only that the partial variants' {loss:g} is {ratio:g} times Full's, in its nanoGPT "
            f"runs on random validation batches: Full's {full} that quotient, somewhere from {low:.3f} to "
            f"{high:.3f} given the rounding of its inputs. nanoGPT's README gives {NANOGPT_BEST} as this "
            "configuration's best validation loss.")


def _field(frame: pd.DataFrame, name: str) -> pd.Series:
    """One field of each record of ``frame``: its column, or read from its file (the frame keeps only some)."""
    if name in frame:
        return frame[name].astype(float)
    return pd.Series([read_record(path)[name] for path in frame.path], index=frame.index, dtype=float)


def _seed_order(frame: pd.DataFrame) -> pd.DataFrame:
    order = {s: i for i, s in enumerate(PAPER_SEEDS)}
    return frame.assign(_o=frame.seed.map(lambda s: order.get(s, len(order) + s))).sort_values("_o")


def _than(x: float, reference: float) -> str:
    """``x`` against ``reference`` in words: "0.030 above", "0.012 below" or, equal at three
    decimals, "level with"."""
    # as the text prints them (1.5805 is 1.581, 0.001 above 1.580; numpy's round would say 1.580)
    x, reference = float(f"{x:.3f}"), float(f"{reference:.3f}")
    return "level with" if x == reference else f"{abs(x - reference):.3f} {'above' if x > reference else 'below'}"


def status(loss: float, floor: float) -> str:
    """Where a final loss ends against the floor, by the scorecard's thresholds: ``floor`` (within
    FLOOR_TOL), ``recovered`` (more than RECOVERY_MARGIN below), ``between``, or ``above``."""
    gap = floor - loss
    if abs(gap) <= scorecard.FLOOR_TOL:
        return "floor"
    return "recovered" if gap > scorecard.RECOVERY_MARGIN else ("between" if gap > 0 else "above")


def comparison(records: pd.DataFrame, stand_in: pd.DataFrame, stand_in_name: str) -> pd.DataFrame:
    """One row per central variant with a record: seeds, final and best validation loss (mean ±
    std over seeds), the step of each seed's best, the seeds at the floor, the paper's value and
    the final loss's distance from it and the stand-in's final loss (nanoGPT's best is in the note
    above the table, :func:`comparison_note`, and in the finding)."""
    values, rows = paper_values(), []
    for variant in CENTRAL_VARIANTS:
        mine = _seed_order(records[records.variant == variant])
        if not len(mine):
            continue
        theirs = stand_in.loc[stand_in.variant == variant, "final_val_loss"] if len(stand_in) else pd.Series([], dtype=float)
        steps = _field(mine, "best_step")
        at_floor = sum(status(x, f) == "floor" for x, f in zip(mine.final_val_loss, mine.eval_floor))
        final, best = mean_std(mine.final_val_loss), mean_std(mine.best_val_loss)
        rows.append({"variant": display_name(variant), "seeds": len(mine), "final": final, "best": best,
                     "best at step": "; ".join(f"{int(b):,}" + (f" (seed {s})" if len(mine) > 1 else "")
                                               for s, b in zip(mine.seed, steps)),
                     "at the floor": f"{at_floor} of {len(mine)}", "the paper": values.loc[variant, "text"],
                     "final vs the paper": _than(mine.final_val_loss.mean(), values.loc[variant, "value"]
                                                 ).removesuffix(" with"),
                     f"stand-in ({stand_in_name})": mean_std(theirs, seeds=True) if len(theirs) else "—"})
    return narrow(pd.DataFrame(rows), f"stand-in ({stand_in_name})")



def _ffn_sentence(ffn: pd.DataFrame, values: pd.DataFrame) -> str:
    states = [status(x, f) for x, f in zip(ffn.final_val_loss, ffn.eval_floor)]
    gaps = ffn.eval_floor - ffn.final_val_loss
    paper_value = values.loc["ffn_only", "value"]
    if all(s == "floor" for s in states):
        every = " in every seed" if len(ffn) > 1 else ""
        off = _than(ffn.final_val_loss.mean(), paper_value)
        return (f"FFNOnly stays at the floor{every}, as in the paper's collapse, ending {off} the "
                f"paper's {values.loc['ffn_only', 'text']}")
    off = [(int(s), g, st) for s, g, st in zip(ffn.seed, gaps, states) if st != "floor"]
    parts = listing(f"seed {s} ends {abs(g):.3f} {'below' if g > 0 else 'above'} the floor" for s, g, _ in off)
    kept = len(ffn) - len(off)
    lead = f"FFNOnly stays at the floor in {kept} of {len(ffn)} seeds; " if kept else ""
    if all(st == "above" for _, _, st in off):  # worse than the floor: a collapse, and more
        lead = lead or "FFNOnly does not learn: "
        return lead + parts + f", worse than the paper's collapse at {paper_value:.3f}"
    lead = lead or "FFNOnly leaves the floor: "
    return lead + parts + f", so the paper's collapse at {values.loc['ffn_only', 'text']} does not hold here"


def _no_residual_sentence(runs: pd.DataFrame, values: pd.DataFrame) -> str:
    """NoResidual against the floor and the paper's anchor (its 3.356, at the paper's floor)."""
    paper_value = values.loc["no_residual", "value"]
    states = [status(x, f) for x, f in zip(runs.final_val_loss, runs.eval_floor)]
    if all(st == "floor" for st in states):
        every = " in every seed" if len(runs) > 1 else ""
        return f"NoResidual ends at the floor{every}, {_than(runs.final_val_loss.mean(), paper_value)} the paper's {paper_value:.3f}"
    off = [(int(s), f - x) for s, x, f, st in zip(runs.seed, runs.final_val_loss, runs.eval_floor, states) if st != "floor"]
    parts = listing(f"seed {s} ends {abs(g):.3f} {'below' if g > 0 else 'above'} the floor" for s, g in off)
    kept = len(runs) - len(off)
    lead = f"NoResidual ends at the floor in {kept} of {len(runs)} seeds; " if kept else "NoResidual does not end at the floor: "
    return lead + parts + f", where the paper's NoResidual ends at {paper_value:.3f}"


def _conclusion() -> tuple[float, float] | None:
    """The controlled AttnOnly result as the summary's conclusion gives it (mean, std), which
    differs from sections 1, 6 and 8's: None where the claims file holds no such row."""
    claims = paper.claims()
    row = claims[(claims.variant == "attn_only") & (claims.quantity == "final_val_loss_conclusion")]
    return (float(row.value.iloc[0]), float(row["std"].iloc[0])) if len(row) and pd.notna(row["std"].iloc[0]) else None


def _attn_sentence(attn: pd.DataFrame, values: pd.DataFrame, lone: bool = False) -> str:
    states = [status(x, f) for x, f in zip(attn.final_val_loss, attn.eval_floor)]
    paper_value = values.loc["attn_only", "value"]
    n, mean = len(attn), attn.final_val_loss.mean()
    if all(s == "recovered" for s in states):
        who = "AttnOnly recovers in every seed" if n > 1 else "It recovers" if lone else "AttnOnly's one seed recovers"
        rel, tol, off = abs(mean - paper_value) / paper_value, scorecard.REL_TOL, _than(mean, paper_value)
        band = f" ({rel:.1%} of it, {'within' if rel <= tol else 'outside'} the {tol:.0%} the scorecard counts as agreeing"
        spread = values.loc["attn_only", "std"]
        if pd.notna(spread) and spread > 0 and abs(mean - paper_value) > 2 * spread:  # not the seeds' spread
            band += (f", {'and' if rel > tol else 'but'} {abs(mean - paper_value) / spread:.0f} times the {spread:.3f} "
                     f"standard deviation of the paper's {values.loc['attn_only', 'seeds']}")
            other = _conclusion()
            if other is not None:
                k = abs(mean - other[0]) / other[1]
                band += (f"; its conclusion gives {other[0]:.3f} ± {other[1]:.3f} instead, from which this lies "
                         + (f"{k:.1f}" if k < 10 else f"{k:.0f}") + " standard deviations")
        return f"{who}, ending {off} the paper's {paper_value:.3f}{band + ')' if off != 'level with' else ''}"
    stuck = [int(s) for s, st in zip(attn.seed, states) if st != "recovered"]
    margin = scorecard.RECOVERY_MARGIN
    if len(stuck) == n:
        return (f"AttnOnly does not recover: it ends {_than(mean, float(attn.eval_floor.mean()))} the floor, not the "
                f"{margin:g} nats below it the scorecard asks, where the paper has {paper_value:.3f}")
    return (f"AttnOnly recovers in {n - len(stuck)} of {n} seeds ({plural('seed', len(stuck))} "
            f"{listing(stuck)} {'does' if len(stuck) == 1 else 'do'} not come {margin:g} nats below the floor), "
            f"where the paper reports recovery in every seed at {paper_value:.3f}")


def finding(records: pd.DataFrame, absent: list, study: str | None = "paper-10m") -> str:
    """The chapter's outcome in sentences, for its opening and the introduction: where each
    variant ended at the paper's setting, seed by seed against the floor, and against the paper."""
    if study is None:
        return "No profile runs the paper's setting beside this one."
    if not len(records):
        planned = f"the {len(absent)} runs" if len(absent) > 1 else "the run"
        return (f"No `{study}` run is recorded yet: {planned} of the paper's own setting this chapter plans "
                f"{'are' if len(absent) > 1 else 'is'} still to come.")
    p = get_profile(records.profile.iloc[0])
    values = paper_values()
    means = records.groupby("variant")[["final_val_loss", "best_val_loss"]].mean()
    seeds = records.groupby("variant").size()
    ends = listing(f"{display_name(v)} at {means.loc[v, 'final_val_loss']:.3f}"
                   + (f" (mean of {seeds[v]} seeds)" if seeds[v] > 1 else "") for v in CENTRAL_VARIANTS if v in seeds)
    setting = (f"At the paper's own setting (`{p.name}`: {p.training_tokens / 1e6:.3g}M training tokens, trained "
               f"here {scorecard.how_trained(records)}), ")
    floor = f"against a floor of {float(records.eval_floor.mean()):.3f}."
    if len(records) == 1:
        run = records.iloc[0]
        text = (setting + f"the one run recorded so far, {display_name(run.variant)} seed {run.seed}, ends at "
                f"{run.final_val_loss:.3f}, " + floor)
    else:
        text = setting + f"the runs end with {ends}, " + floor
    said = []  # one sentence a variant, in the order the ends above are listed
    if "full" in seeds:
        best = means.loc["full", "best_val_loss"]
        rise = means.loc["full", "final_val_loss"] - best
        gap = round(best - NANOGPT_BEST, 3)  # against nanoGPT's four decimals as they are, not rounded to three
        than = "level with" if not gap else f"{abs(gap):.3f} {'above' if gap > 0 else 'below'}"
        said.append(f"Full's best loss is {best:.4f}, {than} the best of {NANOGPT_BEST} that nanoGPT publishes for "
                    "its `shakespeare_char` run, the recipe this setting follows"
                    + (f"; its validation loss then rises as it overfits, ending {rise:.3f} nats above its best"
                       if rise > OVERFIT else ""))
    if "attn_only" in seeds:
        said.append(_attn_sentence(records[records.variant == "attn_only"], values, lone=len(records) == 1))
    if "ffn_only" in seeds:
        said.append(_ffn_sentence(records[records.variant == "ffn_only"], values))
    if "no_residual" in seeds:
        said.append(_no_residual_sentence(records[records.variant == "no_residual"], values))
    text += "".join(f" {sentence}." for sentence in said)
    if absent:
        text += f" Still to come: {still_to_come(absent)}." + outside_sweep(records, absent)
    return text


def mean_curves(records: pd.DataFrame, stand_in: pd.DataFrame) -> pd.DataFrame:
    """The validation curves of the central variants of ``records`` (the paper's setting) and
    ``stand_in`` as means over seeds per profile, variant and step, with the training tokens seen
    at each step (the stand-in's mixer controls left out)."""
    frame = pd.concat([records, stand_in], ignore_index=True)
    frame = frame[frame.variant.isin(CENTRAL_VARIANTS)]
    curves = analysis.curves(frame, "val")
    per_step = (_field(frame, "tokens") / frame.steps).groupby(frame.profile).first()
    out = curves.groupby(["profile", "variant", "step"], sort=False)["loss"].mean().reset_index()
    out["tokens"] = out.step * out.profile.map(per_step)
    return out[out.tokens > 0]


def curves_figure(curves: pd.DataFrame, floor: float) -> plt.Figure:
    """Validation loss against training tokens (log scale), one colour per variant, the paper's
    setting solid and the stand-in dashed (``curves``: :func:`mean_curves`); the floor dotted."""
    fig, ax = plt.subplots(figsize=(WIDTH, 4.2))
    shown = list(dict.fromkeys(curves.profile))
    for (profile, variant), part in curves.groupby(["profile", "variant"], sort=False):
        first = profile == shown[0]
        ax.plot(part.tokens / 1e6, part.loss, color=PALETTE[variant], lw=1.8 if first else 1.2, ls="-" if first else "--")
    ax.axhline(floor, color="black", ls=":", lw=1)
    shown_points = curves.loss[curves.tokens > 0]  # step 0 has no place on a log axis
    if len(shown_points):  # room above the floor, where the collapsed variants' lines run along it
        ax.set_ylim(top=max(float(shown_points.max()), floor) + 0.1)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="training tokens (millions, log scale)", ylabel="validation loss (nats)")
    variants = [v for v in CENTRAL_VARIANTS if v in set(curves.variant)]
    handles = [plt.Line2D([], [], color=PALETTE[v], lw=2) for v in variants]
    handles += [plt.Line2D([], [], color="#333333", ls=ls) for ls in ("-", "--")[:len(shown)]]
    ax.legend(handles, [display_name(v) for v in variants] + shown, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def _nats(gap: float, unit: bool) -> str:
    """A final-above-best gap at three decimals, or "less than 0.001" where that would read 0.000
    for a gap that is there; ``unit``: with "nats" after it."""
    text = "0" if gap <= 0 else f"{gap:.3f}" if gap >= 0.0005 else "less than 0.001"
    return text + (" nats" if unit else "")


def overfit_text(records: pd.DataFrame) -> str:
    """How far each variant's final loss ends above its best, and which of the variants that
    learned (ended below the floor) overfit by more than :data:`OVERFIT` nats."""
    gaps = (records.final_val_loss - records.best_val_loss).groupby(records.variant).mean().dropna()  # NaN: no gap
    shown = [v for v in CENTRAL_VARIANTS if v in gaps.index]
    if not shown:
        return ""
    if len(shown) == 1:
        gap = gaps[shown[0]]
        text = (f"{display_name(shown[0])}'s final loss lies {_nats(gap, True)} above its best. " if gap > 0 else
                f"{display_name(shown[0])}'s final loss is its best. ")
    else:
        by = listing(f"{_nats(gaps[v], i == 0)} for {display_name(v)}" for i, v in enumerate(shown))
        text = f"Each variant's final loss lies {'' if (gaps[shown] > 0).all() else 'at or '}above its best, by {by}. "
    learned = records[[status(x, f) not in ("floor", "above") for x, f in zip(records.final_val_loss, records.eval_floor)]]
    over = gaps[gaps.index.isin(learned.variant) & (gaps > OVERFIT)]
    if not len(over):
        one = (f"That does not exceed the {OVERFIT:g} nats beyond which this chapter counts a run as overfitting."
               if len(learned) else "It ends at or above the floor, so it is not judged for overfitting.")
        if len(shown) == 1:
            return text + one
        names = [display_name(v) for v in shown if v in set(learned.variant)]
        if not names:
            return text + "Each ends at or above the floor, so none is judged for overfitting."
        if len(names) == 1:
            return text + (f"{names[0]}, the one variant that learned, does not overfit by more than {OVERFIT:g} nats "
                           "at this budget.")
        return text + f"No variant that learned overfits by more than {OVERFIT:g} nats at this budget."
    worst = over.idxmax()
    runs = _seed_order(records[records.variant == worst])
    runs = runs[runs.final_val_loss - runs.best_val_loss > OVERFIT] if len(runs) > 1 else runs  # the seeds that do
    steps = [int(b) for b in _field(runs, "best_step")]
    several = (records.variant == worst).sum() > 1
    when = (f"at step {steps[0]:,}" + (f" in seed {runs.seed.iloc[0]}" if several else "") + " and rises after it"
            if len(steps) == 1 else
            "at step " + listing(f"{b:,} in seed {s}" for s, b in zip(runs.seed, steps)) + " and rises after each")
    whose = "its" if len(over) == 1 else f"{display_name(worst)}'s"
    return text + (f"{listing(display_name(v) for v in over.index)} {'overfits' if len(over) == 1 else 'overfit'}: "
                   f"{whose} validation loss is lowest {when}.") + _reordered(records, learned, set(over.index))


def _reordered(records: pd.DataFrame, learned: pd.DataFrame, over: set[str]) -> str:
    """Sentences, each opening with a space, for every variant that overfits (``over``) and
    another whose final loss lies below its own while its best lies above (means over seeds,
    each by at least what three decimals show): the overfitting, not the variants, sets the
    order of their final losses. Only variants all of whose seeds learned are compared, so
    that each mean is over the same runs as the sentences before. Nothing where there are none."""
    whole = [v for v in CENTRAL_VARIANTS if (records.variant == v).sum() == (learned.variant == v).sum() > 0]
    means = learned[learned.variant.isin(whole)].groupby("variant")[["final_val_loss", "best_val_loss"]].mean()
    seeds = learned.groupby("variant").size()
    final, best = means.final_val_loss.round(3), means.best_val_loss  # as the sentence shows them
    text = ""
    for high in [v for v in whole if v in over]:
        for low in whole:
            if final[low] < final[high] and round(best[low] - best[high], 3) >= 0.001:
                a, b = display_name(low), display_name(high)
                text += (f" So {a} ends below {b}, {final[low]:.3f} against {final[high]:.3f}"
                         f"{' (means over seeds)' if max(seeds[low], seeds[high]) > 1 else ''}, although at their best {b} is the lower by "
                         f"{best[low] - best[high]:.3f} nats: {a}'s lower final loss comes from {b}'s "
                         f"overfitting, not from {a} learning more.")
    return text


#: The captions and alt texts of the chapter's figure.
CURVES_CAPTION = ("Validation loss on the fixed batches against training tokens (log scale), mean over seeds: the "
                  "paper's setting solid, the stand-in dashed; dotted, the floor of the paper setting's batches. A "
                  "log axis has no place for step 0, so each curve begins at its first evaluation after it; the solid "
                  "lines do not continue the dashed ones, which are runs of a smaller model on fewer tokens.")
CURVES_ALT = ("Line chart of validation loss in nats against training tokens in millions on a log axis, one colour per"
              " variant, solid lines for the paper's setting and dashed ones for the stand-in, with a dotted floor.")


def nothing_missing(study: str | None) -> str:
    """The line under "Runs not recorded yet" when none is missing."""
    return ("None: every run of the paper's setting is recorded." if study else
            "None planned: no profile runs the paper's setting beside this one.")
