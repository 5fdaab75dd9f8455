"""Chapter 11's context: why the budget study is needed, read from the stand-in's FFNOnly runs and
chapter 10's longer schedule, and why the study's runs are not those runs continued. The study
itself, its rule's reading and its tables are in :mod:`residual_lib.pages.chapters.budget`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...core.text import listing, plural
from ...run.profiles import get_profile
from ...storage.records import read_record
from ...study import budget, escapes
from ...study.sections import ESCAPE_PROFILES, LONG_CONDITION, controlled, usable


def token_count(n: int) -> str:
    """A count of tokens in words: "4.1M", "512K"."""
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}K"


#: The least fall (nats per 100 steps over the last tenth of training) the question calls "still falling".
FALLING = 0.005


def _ffn_escapes(every_run: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The controlled FFNOnly runs of ``profile`` among ``every_run``, each with its escape step
    (:func:`residual_lib.study.escapes.escapes` at the study's line) and how fast its validation
    loss still falls over its last tenth of training (``falling``, nats per 100 steps)."""
    frame = every_run[(every_run.profile == profile) & (every_run.variant == "ffn_only")]
    if not len(frame):
        return pd.DataFrame(columns=["seed", "escaped", "escape_step", "falling"])
    runs, falling = escapes.escapes(controlled(usable(frame)), budget.LINE), []
    for path in runs.path:
        val = read_record(path)["curves"]["val"]
        step, loss = np.asarray(val["step"], float), np.asarray(val["loss"], float)
        back = max(1, len(step) // 10)  # the last tenth of the evaluations
        falling.append((loss[-1 - back] - loss[-1]) / (step[-1] - step[-1 - back]) * 100 if len(step) > 1 else 0.0)
    return runs.assign(falling=falling).sort_values("seed")


def question_text(every_run: pd.DataFrame, profile: str) -> str:
    """The chapter's question, read from ``every_run``: the stand-in's budget, its FFNOnly runs that end
    below the floor still falling, the longer schedule's escapes (chapter 10's runs), and the paper's
    budget as ``paper-10m`` reads it."""
    stand_in, paper = get_profile(profile), get_profile("paper-10m")
    text = (f"Every verdict on FFNOnly's collapse at the stand-in rests on runs of {stand_in.max_iters:,} steps "
            f"({token_count(stand_in.training_tokens)} training tokens)")
    clues = []
    runs = _ffn_escapes(every_run, profile)
    still = runs[runs.escaped & (runs.falling >= FALLING)]
    if len(still):
        rates = listing(f"{r:.3f}" for r in still.falling)
        clues.append(f"at `{profile}`, {plural('seed', len(still))} {listing(still.seed)} {'ends' if len(still) == 1 else 'end'} below the floor "
                     f"still falling, by {rates} nats per 100 steps over the last tenth of training")
    long = ESCAPE_PROFILES.get(profile, {}).get(LONG_CONDITION)
    late = _ffn_escapes(every_run, long) if long else pd.DataFrame()
    stay = sorted(set(late.seed[~late.escaped.astype(bool)]) & set(still.seed)) if len(late) else []
    if stay:  # the same seeds with the same first steps, at the longer schedule
        who = {1: "it ends", 2: "both end"}.get(len(stay), "all end") if len(stay) == len(still) else \
            f"{plural('seed', len(stay))} {listing(stay)} {'ends' if len(stay) == 1 else 'end'}"
        clues[-1] += f" (at `{long}`, {who} on the floor)"
    late = late[late.escaped] if len(late) else late
    if len(late):
        steps = listing(f"{int(t):,}" for t in late.escape_step)
        clues.append(f"at `{long}` ({get_profile(long).max_iters:,} steps), {plural('seed', len(late))} {listing(late.seed)} "
                     f"{'leaves' if len(late) == 1 else 'leave'} it at step {steps}")
    if clues:
        text += (", where a run can still be leaving the floor at its last step: " + "; ".join(clues)
                 + " ([chapter 10](../notebooks/10_ffn_escape.html))")
    return (text + f". The paper's 10M runs, read as nanoGPT's schedule ({paper.max_iters:,} steps of "
            f"{paper.batch_size} × {paper.block_size} tokens; the summary does not give it), see "
            f"{token_count(paper.training_tokens)} tokens. So \"FFNOnly cannot learn\" and \"FFNOnly "
            "learns late\" are not told apart yet.")


def carry_over_text(every_run: pd.DataFrame, profile: str, times: pd.DataFrame) -> str:
    """Why the study's runs are not the stand-in's continued: the learning-rate schedules differ, and the
    seeds whose outcome differs within the steps both runs trained (from ``every_run`` and the study's
    ``times``); a seed that leaves the floor here only after the other run's last step is not a difference."""
    if not len(times):
        return ""
    stand_in, study = get_profile(profile), get_profile(times.profile.iloc[0])
    long = ESCAPE_PROFILES.get(profile, {}).get(LONG_CONDITION)
    others = [p for p in (profile, long) if p and len(_ffn_escapes(every_run, p))]
    longer = [p for p in others if p != profile]
    text = (f"The study's runs are not the stand-in's continued: `{profile}`'s learning rate decays from "
            f"{stand_in.learning_rate:g} to {stand_in.min_lr:g} over its {stand_in.max_iters:,} steps"
            + "".join(f" (`{p}`'s over {get_profile(p).max_iters:,})" for p in longer)
            + f", the study's stays at {study.learning_rate:g} after warm-up, so a seed draws the same first weights "
            "and batches but takes other steps.")
    here = {s: (e, t) for s, e, t in zip(times.seed, times.escaped, times.time)}
    differ, when = [], False
    for other in others:
        runs, steps = _ffn_escapes(every_run, other), get_profile(other).max_iters
        there = {s: e for s, e in zip(runs.seed, runs.escaped) if s in here}
        left = sorted(s for s, e in there.items() if e and not here[s][0])
        later = sorted(s for s, e in there.items() if e and here[s][0] and here[s][1] > steps)  # beyond the other's end
        at = dict(zip(runs.seed, runs.escape_step))
        came = sorted(s for s, e in there.items() if not e and here[s][0] and here[s][1] <= steps)
        differ += [f"{plural('seed', len(left))} {listing(left)} {'leaves' if len(left) == 1 else 'leave'} the floor at `{other}` and not here"] if left else []
        differ += [f"{plural('seed', len(came))} {listing(came)} {'leaves' if len(came) == 1 else 'leave'} it here within `{other}`'s "
                   f"{steps:,} steps and not at `{other}`"] if came else []
        differ += [f"seed {x} leaves it at `{other}` at step {int(at[x]):,} and here only at step {int(here[x][1]):,}"
                   for x in later]
        when = when or bool(later)
    if differ:
        text += f" Which seeds leave the floor{', and when,' if when else ''} changes with it: " + "; ".join(differ) + "."
    return text + (" So the study answers its question at a constant learning rate; it does not say what the stand-in's"
                   " decaying one would do over a longer run.")
