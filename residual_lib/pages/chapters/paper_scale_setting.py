"""Chapter 12's setting in words: the paper's recipe as ``paper-10m`` holds it (and how a CPU
computes its steps), and what a run of it costs here, from its records."""

from __future__ import annotations

import pandas as pd

from ...core.text import in_words
from ...run.architecture import CENTRAL_VARIANTS
from ...run.profiles import PROFILES, get_profile
from ...run.runs import in_paper_order
from ...study.sections import sweep_seeds
from ..names import display_name
from ..tables import listing, plural


def recipe(study: str | None) -> str:
    """The paper's setting as ``study`` holds it, in one sentence for the chapter's opening."""
    if study is None:
        return "but no profile runs it beside this book's."
    p = get_profile(study)
    text = (f"`{study}`: {p.n_layer} layers, {p.n_head} heads, width {p.n_embd}, context {p.block_size}, batch "
            f"{p.batch_size}, dropout {p.dropout:g}, {p.max_iters:,} steps ({p.training_tokens / 1e6:.3g}M training "
            f"tokens), learning rate {p.learning_rate:g} decaying to {p.min_lr:g}, in {p.precision}")
    if study == "paper-10m":
        text += (": nanoGPT's `shakespeare_char` recipe, which this book reads as the paper's 10M setting (the "
                 "summary names nanoGPT and its 10M scale, not the settings).")
        every = " and as every profile of this book's does" if all(q.bias for q in PROFILES.values()) else ""
        text += (f" One difference: its linear and LayerNorm layers carry biases, as GPT-2's do{every}, where "
                 "nanoGPT's default has none; the summary does not say which the paper's models had."
                 if p.bias else "")
        return text + _cpu_note(p)
    return text + ": a small stand-in for `paper-10m` with its dropout, so that this chapter's code runs in seconds."


def _cpu_note(p) -> str:
    """How ``p`` computes its steps on a CPU where that differs from nanoGPT's arithmetic but not
    from its recipe: a batch run in slices whose gradients are averaged, dropout masks drawn from
    32-bit integers (:data:`residual_lib.run.profiles.CPU_DROPOUT`)."""
    ways, same, how = [], [], []
    if p.cpu_micro_batch and p.cpu_micro_batch < p.batch_size:
        ways.append(f"runs each batch of {p.batch_size} as {in_words(p.batch_size // p.cpu_micro_batch)} slices of "
                    f"{p.cpu_micro_batch} whose gradients are averaged")
        same.append("batch")
        how.append("in another order")
    if p.cpu_dropout == "int32" and p.dropout:
        ways.append("draws its dropout masks from 32-bit integers")
        same.append("dropout rate")
        how.append("from another random stream")
    if not ways:
        return ""
    return (f" On a CPU it {listing(ways)}: the same {' and '.join(same)}, computed {' and '.join(how)} than "
            "nanoGPT's.")


def cost(records: pd.DataFrame, study: str | None = "paper-10m") -> str:
    """What a run of the paper's setting costs here, from its records, for the introduction."""
    if study is None or not len(records):
        return f"`{study or 'paper-10m'}` trains on a CPU, one core a run"
    hours, rate = records.wall_seconds.mean() / 3600, records.tokens_per_second.mean()
    count, unit = (round(hours), "hour") if hours >= 1 else (round(hours * 60), "minute")
    took = f"{count} {plural(unit, count)}"
    n = len(records)
    runs = "its one run on record ran" if n == 1 else f"its {in_words(n)} runs on record ran, on average,"
    its = "its" if n == 1 else "their"
    return (f"`{study}` trains on a CPU, one core a run ({runs} {took} with {its} evaluations, counting only the "
            f"time {its} processes ran, and trained at {rate:,.0f} tokens/s)")


def outside_sweep(records: pd.DataFrame, absent: list, diverged: list = ()) -> str:
    """A sentence on the seeds this chapter queues without every variant: the scorecard compares
    variants over the central sweep, the seeds at which every variant recorded has a run
    (:func:`residual_lib.study.sections.sweep_seeds`), so until the others are recorded there
    (chapter 6 plans them), such a seed counts only for the claims that read every seed of one variant; each
    seed with the variants it lacks, seeds that lack the same ones said together; or nothing.
    ``diverged``: the (variant, seed) of runs the chapter queued that diverged, queued all the same."""
    have = ({(v, int(s)) for v, s in zip(records.variant, records.seed)} | {(run.variant, run.seed) for run in absent}
            | {(v, int(s)) for v, s in diverged})
    full = sweep_seeds(pd.DataFrame(sorted(have), columns=["variant", "seed"]))  # the scorecard's own selection
    seeds = in_paper_order({s for _, s in have} - set(full))
    recorded = [v for v in CENTRAL_VARIANTS if any(w == v for w, _ in have)]
    lacks: dict[tuple, list[int]] = {}  # the variants a seed lacks: the seeds that lack just those
    for seed in seeds:
        lacks.setdefault(tuple(v for v in recorded if (v, seed) not in have), []).append(seed)
    if not seeds:
        return ""
    which = ", nor ".join(f"{listing(display_name(v) for v in group)} at {plural('seed', len(at))} "
                          f"{listing(map(str, at))}" for group, at in lacks.items())
    return (f" Chapter 12 does not queue {which} (chapter 6 plans them). Until they are recorded there, "
            f"{'that seed counts' if len(seeds) == 1 else 'those seeds count'} for the claims that read every seed of "
            "one variant, such as whether FFNOnly collapses in every seed and whether block 0 is starved, and for no "
            "comparison between variants: the scorecard compares variants only over the seeds at which every variant "
            "has a run.")
