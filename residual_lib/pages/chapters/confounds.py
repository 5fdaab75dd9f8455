"""Chapter 5, the measurement confounds: whether a constant runtime gain changes what is learned, and how
much noise a single random-batch validation estimate carries."""

from __future__ import annotations

import pandas as pd

from ...run.profiles import get_profile
from ...study import analysis, gains, paper
from .. import scorecard
from ..tables import number, scientific


def gain_table(gain_runs: pd.DataFrame) -> pd.DataFrame:
    """Final validation loss of each gain's run, one row per gain in increasing order and one
    column per seed (in the order the seeds come), with the spread across gains as the last row."""
    order = list(dict.fromkeys(int(s) for s in gain_runs.seed))
    wide = gain_runs.pivot_table(index="gain", columns="seed", values="final_val_loss").sort_index()[order]
    wide.loc["spread (max − min)"] = (wide.max() - wide.min()).where(wide.count() >= 2)  # none from one gain
    wide.columns = [f"seed {s}" for s in wide.columns]
    return wide


def timing_study(gain_runs: pd.DataFrame, early_runs: pd.DataFrame) -> dict:
    """What chapter 5 and the confounds page show of the gain timing, computed once
    (:mod:`residual_lib.study.gains`): ``timing`` per seed, the ``spread`` across gains at each step,
    the timing runs' ``agreement`` with their gain runs, the paper's step count ``paper_steps``,
    the same share of these runs ``within``, and ``until``, the timing runs' last step (None
    without them)."""
    agree = scorecard.limits.EARLY_AGREE  # how closely a timing run must retrace its gain run
    paper_steps = int(paper.value("gain_confound", "attn_only", "steps_to_equivalence"))
    return {"timing": gains.gain_timing(gain_runs, early_runs, scorecard.GAIN_TOL, agree),
            "spread": gains.gain_spread(gains.gain_val_curves(gain_runs, early_runs, agree)),
            "agreement": gains.early_agreement(gain_runs, early_runs), "paper_steps": paper_steps,
            "within": analysis.scaled_step(paper_steps, int(gain_runs.steps.iloc[0])),
            "until": int(early_runs.steps.max()) if len(early_runs) else None}


def timing_method(whole: pd.DataFrame, early: pd.DataFrame, agreement: pd.DataFrame | None = None) -> str:
    """How the gain runs' first steps were evaluated: by the timing profile's runs, when there are
    any (their profile, length and evaluation spacing), else by the whole runs alone; with
    ``agreement`` (:func:`residual_lib.study.gains.early_agreement`), how closely they retrace the whole runs."""
    if early.empty:
        every = get_profile(whole.profile.iloc[0]).eval_interval
        return (f"No timing runs exist for these gain runs, so the timing below rests on the whole runs' "
                f"evaluations every {every} steps.")
    name = early.profile.iloc[0]
    prof = get_profile(name)
    return (f"The first {prof.max_iters:,} steps of each run were trained again at `{name}`, which takes the same "
            f"steps with the same batches and learning rates and evaluates the fixed batches every "
            f"{prof.eval_interval} steps; after step {prof.max_iters:,} the curves are the whole runs'."
            + ("" if agreement is None or agreement.empty else _agreement_text(agreement)))


def _agreement_text(agreement: pd.DataFrame) -> str:
    worst = agreement.loc[agreement.max_diff.idxmax()]
    if worst.max_diff == 0:
        return " At the steps both evaluate, the two are bit for bit the same."
    typical = agreement.max_diff.median()
    text = (f" At the steps both evaluate they agree to within {scientific(typical)} nats for the median run and "
            f"{scientific(worst.max_diff)} at worst (gain {worst.gain:g}, seed {int(worst.seed)}): the same steps, "
            "though not bit for bit where a whole run was made by older code or other kernels.")
    off = sorted({int(s) for s in agreement.seed[agreement.max_diff > scorecard.limits.EARLY_AGREE]})
    if off:
        text += (f" At seed{'s' if len(off) > 1 else ''} {', '.join(map(str, off))} a timing run differs from its gain"
                 f" run by more than {scorecard.limits.EARLY_AGREE} nats, so the whole runs' evaluations alone are read"
                 " there.")
    return text


def timing_finding(timing: pd.DataFrame, within: int, tolerance: float = scorecard.GAIN_TOL,
                   paper_steps: int | None = None) -> str:
    """What :func:`residual_lib.study.gains.gain_timing` found, in sentences: how far apart the gains' final
    losses end, and from which step their validation curves stay within ``tolerance`` of each other
    at each seed, against ``within`` (the paper's ~200 steps as a share of this run) and, when given,
    ``paper_steps`` (the same number of steps), each read at the first evaluation from then on."""
    if timing.empty:
        return "No seed was run at every gain."
    n = len(timing)
    spreads = timing.final_spread
    ends = (f"the final validation losses of the gains lie {spreads.iloc[0]:.3f} nats apart" if n == 1 else
            f"the final validation losses of the gains lie {spreads.min():.3f} to {spreads.max():.3f} nats apart")
    merged = list(timing.merged)
    parts = [f"from step {int(m):,} on at seed {s}" if m is not None and not pd.isna(m) else f"not to the end at seed {s}"
             for m, s in zip(merged, timing.seed)]
    joined = parts[0] if n == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    every = sorted({int(e) for e in timing.every.dropna()})
    spacing = f"evaluated every {' or '.join(str(e) for e in every)} steps" if every else "evaluated"
    seeds_text = "At the one seed" if n == 1 else f"At each of the {n} seeds"

    def by(step: int) -> str:
        k = sum(gains.on_time(m, step, e) for m, e in zip(merged, timing.every))
        return f"{k} of {n} seed{'s' if n > 1 else ''} {'has' if k == 1 or n == 1 else 'have'} come together by then"

    text = (f"{seeds_text}, {ends}. Their validation curves on the fixed batches, {spacing} early on, stay "
            f"within {tolerance} nats of each other {joined}. The paper's ~200 steps, scaled to this run's "
            f"length, are step {within:,}: {by(within)} (read at the first evaluation from then on).")
    if paper_steps is not None and paper_steps != within:
        text += (f" Read instead as the same {paper_steps:,} steps (this schedule shares the paper's warm-up and "
                 f"peak learning rate, so the optimiser has moved about as far by then), {by(paper_steps)}.")
    left = timing.attrs.get("incomplete", [])
    if left:
        text += f" Seed{'s' if len(left) > 1 else ''} {', '.join(map(str, left))}, not run at every gain, {'are' if len(left) > 1 else 'is'} left out."
    return text


def timing_caption(gain_variant: str, within: int, tolerance: float = scorecard.GAIN_TOL) -> str:
    """The caption of the gain-timing figure."""
    return (f"Spread (max − min across gains) of `{gain_variant}`'s validation loss on the fixed batches, one line "
            f"per seed, log scale. The dashed line is the {tolerance}-nat tolerance, the dotted line step {within:,}, "
            "the paper's ~200 steps scaled to this run.")


#: The alt text of the gain-timing figure.
TIMING_ALT = ("Line chart against training step of the spread of validation loss across gains, one line per seed,"
              " on a log scale, with a dashed horizontal tolerance line and a dotted vertical line at the paper's"
              " step.")


def gain_finding(gain_runs: pd.DataFrame, merged_at: int | None, tolerance: float = scorecard.GAIN_TOL) -> str:
    """Whether the training curves across gains merge: the step from which their spread stays below
    ``tolerance`` (``merged_at``, None if never, from :func:`analysis.gain_equivalence`), and how far apart
    the final validation losses end."""
    final = gain_runs.final_val_loss
    if merged_at is not None:
        merged = (f"The training-loss spread across gains stays below {tolerance} nats from step {merged_at:,}"
                  f" of {int(gain_runs.steps.iloc[0]):,}")
    else:
        merged = f"The spread across gains never stays below {tolerance} nats"
    return f"{merged}; the final validation losses differ by {number(float(final.max() - final.min()))} nats."


def gain_caption(gain_variant: str, seed: int, tolerance: float = scorecard.GAIN_TOL) -> str:
    """The caption of the gain curves: which variant and seed, and the tolerance line of the spread panel."""
    return (f"Training loss of `{gain_variant}` (seed {seed}) with a constant gain g on every sublayer output"
            " (top), and the spread across gains at each logged step, log scale (bottom; the dashed line is the"
            f" {tolerance}-nat tolerance).")


#: The alt text of the gain curves.
GAIN_ALT = ("Two stacked line charts against training step: training loss in nats per gain, and the max minus min"
            " across gains on a log scale with a dashed tolerance line.")


def noise_table(estimates: pd.DataFrame) -> pd.DataFrame:
    """Per variant, the std and the largest absolute deviation of random-batch evaluations of a final model
    from the same model's fixed-batch loss (:func:`analysis.val_estimates`): the noise of one estimate."""
    deviation = estimates.groupby("variant")["deviation"]
    noise = pd.DataFrame({"std": deviation.std(), "max |deviation| (nats)": deviation.agg(lambda d: d.abs().max())})
    return noise.reindex(analysis.variant_order(estimates))


#: The caption and alt text of the evaluation-noise figure.
SPREAD_CAPTION = ("Each point is one random-batch evaluation of a final model minus the same model's fixed-batch loss:"
                  " the noise a single nanoGPT-style validation estimate carries.")
SPREAD_ALT = ("Strip chart per variant of random-batch minus fixed-batch validation loss in nats, scattered around a"
              " zero line.")
