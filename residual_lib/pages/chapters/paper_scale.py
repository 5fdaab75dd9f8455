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
from ...storage.records import read_record
from ...study import analysis, paper
from ...study.frames import usable
from ...study.sections import central_sweep, controlled
from .. import scorecard
from ..names import display_name
from ..plots import PALETTE, WIDTH
from ..tables import listing, mean_std, missing_runs, narrow, plural, still_to_come  # noqa: F401 (the notebook's)
from .paper_scale_sentences import (_attn_sentence, _ffn_sentence, _no_residual_sentence, _than, beyond_sweep,
                                    over_sweep, seed_order)
from .paper_scale_sentences import status  # noqa: F401 (the notebook's)
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
            f"value, and the stand-in's (`{stand_in}`). Both settings are read over their central sweep, the seeds "
            "at which every variant has a run, so that each variant is averaged over the same seeds (mean ± std). "
            "The paper gives "
            f"Full no value at 10M, only that the partial variants' {loss:g} is {ratio:g} times Full's, in its nanoGPT "
            f"runs on random validation batches: Full's {full} that quotient, somewhere from {low:.3f} to "
            f"{high:.3f} given the rounding of its inputs. nanoGPT's README gives {NANOGPT_BEST} as this "
            "configuration's best validation loss.")


def _field(frame: pd.DataFrame, name: str) -> pd.Series:
    """One field of each record of ``frame``: its column, or read from its file (the frame keeps only some)."""
    if name in frame:
        return frame[name].astype(float)
    return pd.Series([read_record(path)[name] for path in frame.path], index=frame.index, dtype=float)


def split(records: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``records`` as the scorecard reads them: their central sweep (:func:`central_sweep`, the
    seeds at which every variant recorded has a usable run), which every comparison between
    variants on this page reads so that each variant is averaged over the same seeds, and the
    usable controlled runs at the other seeds (a seed queued for AttnOnly and FFNOnly alone),
    said on their own."""
    if not len(records):
        return records, records
    sweep = central_sweep(records)
    runs = controlled(usable(records))
    return sweep, runs[~runs.seed.isin(set(sweep.seed))]


def comparison(records: pd.DataFrame, stand_in: pd.DataFrame, stand_in_name: str) -> pd.DataFrame:
    """One row per central variant in the central sweep of ``records`` (:func:`split`; the runs
    outside it are said under the table, :func:`beyond_sweep`): seeds, final and best validation
    loss (mean ± std over seeds), the step of each seed's best, the seeds at the floor, the paper's
    value and the final loss's distance from it and the stand-in's final loss (nanoGPT's best is in
    the note above the table, :func:`comparison_note`, and in the finding)."""
    values, rows, records = paper_values(), [], split(records)[0]
    for variant in CENTRAL_VARIANTS:
        mine = seed_order(records[records.variant == variant])
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


def finding(records: pd.DataFrame, absent: list, study: str | None = "paper-10m") -> str:
    """The chapter's outcome in sentences, for its opening and the introduction: where each
    variant ended at the paper's setting, seed by seed against the floor, and against the paper."""
    if study is None:
        return "No profile runs the paper's setting beside this one."
    gone = [(v, int(seed)) for v, seed in records.attrs.get("diverged_runs", [])]  # neither recorded nor to come
    broke = (f" {listing(f'{display_name(v)} seed {seed}' for v, seed in gone)} diverged (a non-finite loss) and "
             f"{'is' if len(gone) == 1 else 'are'} left out of every number here." if gone else "")
    if not len(records):
        n = len(absent) + len(gone)
        planned = f"the {n} runs" if n > 1 else "the run"
        return (f"No `{study}` run {'has finished' if gone else 'is recorded'} yet: {planned} of the paper's own setting this chapter plans "
                f"{'are' if n > 1 else 'is'} still to come" + (" or diverged." if gone else ".") + broke)
    p = get_profile(records.profile.iloc[0])
    values, (sweep, rest) = paper_values(), split(records)
    runs = pd.concat([sweep, rest])  # every usable run: a claim about one variant reads all its seeds
    means = sweep.groupby("variant")[["final_val_loss", "best_val_loss"]].mean()
    seeds = sweep.groupby("variant").size()
    ends = listing(f"{display_name(v)} at {means.loc[v, 'final_val_loss']:.3f}"
                   + (f" (mean of {seeds[v]} seeds)" if seeds[v] > 1 else "") for v in CENTRAL_VARIANTS if v in seeds)
    setting = (f"At the paper's own setting (`{p.name}`: {p.training_tokens / 1e6:.3g}M training tokens, trained "
               f"here {scorecard.how_trained(records)}), ")
    floor = f"{float(records.eval_floor.mean()):.3f}"
    common = list(dict.fromkeys(int(s) for s in seed_order(sweep).seed))
    beyond = beyond_sweep(rest, set(runs.variant) | {v for v, _ in gone})  # a diverged variant is lacked too
    every = "every variant that finished a run has one" if gone else "every variant has a run"
    if len(records) == 1:
        run = records.iloc[0]
        text = (setting + f"the one run {'finished' if gone else 'recorded'} so far, {display_name(run.variant)} seed "
                f"{run.seed}, ends at "
                f"{run.final_val_loss:.3f}, against a floor of {floor}.")
    elif not len(sweep):
        text = (setting + f"no seed has a run of every variant {'finished' if gone else 'recorded'} yet, so no variant is "
                "set beside another. The "
                f"floor is {floor}" + (f"; {beyond}" if beyond else "") + ".")
    elif len(rest):
        text = (setting + f"the runs of the central sweep ({plural('seed', len(common))} {listing(map(str, common))}, "
                f"at which {every}) end with {ends}, against a floor of {floor}; {beyond}.")
    else:
        text = setting + f"the runs end with {ends}, against a floor of {floor}."
    said = []  # one sentence a variant, in the order the ends above are listed
    of = {v: runs[runs.variant == v] for v in CENTRAL_VARIANTS}
    mine = {v: sweep[sweep.variant == v] for v in CENTRAL_VARIANTS}  # as the table and the comparisons read them
    full = mine["full"] if len(mine["full"]) else of["full"]
    if len(full):
        best = full.best_val_loss.mean()
        rise = full.final_val_loss.mean() - best
        gap = round(best - NANOGPT_BEST, 3)  # against nanoGPT's four decimals as they are, not rounded to three
        than = "level with" if not gap else f"{abs(gap):.3f} {'above' if gap > 0 else 'below'}"
        over = over_sweep(of["full"], mine["full"])[1] or (f"(mean of its {len(full)} seeds)" if len(full) > 1 else "")
        said.append(f"Full's best loss{f' {over}' if over else ''} is {best:.4f}, {than} the best of {NANOGPT_BEST} "
                    "that nanoGPT publishes for its `shakespeare_char` run, the recipe this setting follows"
                    + (f"; its validation loss then rises as it overfits, ending {rise:.3f} nats above its best"
                       if rise > OVERFIT else ""))
    if len(of["attn_only"]):
        said.append(_attn_sentence(of["attn_only"], values, lone=len(records) == 1, compared=mine["attn_only"]))
    if len(of["ffn_only"]):
        said.append(_ffn_sentence(of["ffn_only"], values, mine["ffn_only"]))
    if len(of["no_residual"]):
        said.append(_no_residual_sentence(of["no_residual"], values, mine["no_residual"]))
    text += "".join(f" {sentence}." for sentence in said) + broke
    if absent:
        text += f" Still to come: {still_to_come(absent)}."
    return text + outside_sweep(records, absent, gone)


def mean_curves(records: pd.DataFrame, stand_in: pd.DataFrame) -> pd.DataFrame:
    """The validation curves of the central variants of ``records`` (the paper's setting, its
    central sweep: :func:`split`) and ``stand_in`` (a central sweep) as means over seeds per
    profile, variant and step, with the training tokens seen at each step (the stand-in's mixer
    controls left out)."""
    frame = pd.concat([split(records)[0], stand_in], ignore_index=True)
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
    learned (ended below the floor) overfit by more than :data:`OVERFIT` nats, over the central
    sweep of ``records`` (:func:`split`), as the table above it."""
    records = split(records)[0]
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
    runs = seed_order(records[records.variant == worst])
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
CURVES_CAPTION = ("Validation loss on the fixed batches against training tokens (log scale), mean over the seeds of "
                  "each setting's central sweep (those at which every variant has a run): the "
                  "paper's setting solid, the stand-in dashed; dotted, the floor of the paper setting's batches. A "
                  "log axis has no place for step 0, so each curve begins at its first evaluation after it; the solid "
                  "lines do not continue the dashed ones, which are runs of a smaller model on fewer tokens.")
CURVES_ALT = ("Line chart of validation loss in nats against training tokens in millions on a log axis, one colour per"
              " variant, solid lines for the paper's setting and dashed ones for the stand-in, with a dotted floor.")


def nothing_missing(study: str | None) -> str:
    """The line under "Runs not recorded yet" when none is missing."""
    return ("None: every run of the paper's setting is recorded." if study else
            "None planned: no profile runs the paper's setting beside this one.")
