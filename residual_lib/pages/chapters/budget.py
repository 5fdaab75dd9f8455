"""Chapter 11, the budget study: whether FFNOnly's collapse lasts at ten times the stand-in's
budget or FFNOnly learns late, read by the rule :mod:`residual_lib.study.budget` fixed before its
runs, as the tables and sentences ``notebooks/11_budget.py`` shows."""

from __future__ import annotations

from datetime import timezone

import pandas as pd

from ...run.profiles import get_profile
from ...study import budget
from ..scorecard import preregistration
from ..tables import missing_runs, plural  # noqa: F401 (missing_runs: the notebook's)

#: How :func:`decision_text` reads each outcome of :func:`residual_lib.study.budget.decide`.
READINGS = {
    "speed": "the asymmetry is about speed: FFNOnly learns, late",
    "structural": "the collapse is structural at this budget",
    "undecided": "neither reading: the data do not decide between speed and structure",
}


def _tokens(n: int) -> str:
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}K"


def scope(profile: str, runs: list) -> dict[str, str]:
    """The study's size at the book's ``profile``, from its planned ``runs``
    (:func:`residual_lib.study.sections.plan`): ``here`` for the chapter's opening, ``intro`` for the
    introduction; empty strings where the profile has no budget study."""
    if not runs:
        return {"here": "", "intro": ""}
    study, stand_in = runs[0].profile, get_profile(profile)
    seeds = [r.seed for r in runs if r.variant == "ffn_only"]
    anchors = [r.seed for r in runs if r.variant == "attn_only"]
    base = stand_in.tokens_per_step * stand_in.max_iters
    tokens = study.tokens_per_step * study.max_iters
    here = (f"FFNOnly at the `{profile}` shape for {study.max_iters:,} steps ({_tokens(tokens)} tokens, "
            f"{tokens / base:.3g} times the stand-in's budget), at a constant learning rate after warm-up, so "
            f"that a run's first steps do not depend on how long it lasts (profile `{study.name}`), with the "
            f"fixed batches evaluated every {study.eval_interval:,} steps: {len(seeds)} {plural('seed', len(seeds))}, "
            f"and AttnOnly and NoResidual at {len(anchors)} of them as anchors.")
    intro = (f"Whether FFNOnly cannot learn or learns late is a question of budget: the stand-in's runs see "
             f"{_tokens(base)} training tokens, the paper's 82M (read as nanoGPT's schedule, which the summary does "
             f"not give). The budget study trains FFNOnly for {study.max_iters:,} steps at {len(seeds)} "
             f"{plural('seed', len(seeds))}, under a decision rule fixed before its runs.")
    return {"here": here, "intro": intro}


#: The commit that fixed the study's seeds, line and decision rule, before any of its runs
#: (the module was then ``residual_lib/budget.py``); :func:`registration_text` checks each record
#: against it, and the test suite checks that the rule today is the one it holds.
REGISTRATION_COMMIT = "c934416604dc881076741a88568f9dd4c6adac22"


def registration_text(records: pd.DataFrame) -> str:
    """Whether the study's records were trained by code that already held its rule: each record's
    commit (``provenance.git_sha``, from a clean working tree: ``git_dirty``) against
    :data:`REGISTRATION_COMMIT`, by ancestry in this checkout's history."""
    n = len(records)
    if not n:
        return ""
    when = preregistration.commit_time(REGISTRATION_COMMIT)
    fixed = f"commit {REGISTRATION_COMMIT[:7]}"
    if when is None:
        return (f"The rule was fixed in {fixed}, which this copy's git history does not hold (an export or a shallow "
                "clone), so the commit each record names cannot be checked against it here.")
    when = when.astimezone(timezone.utc)
    fixed += f" of {when.day} {when:%B %Y, %H:%M} UTC"
    shas = [s if isinstance(s, str) else None for s in preregistration.provenance_field(records, "git_sha")]
    dirty = preregistration.provenance_field(records, "git_dirty")  # None: the record cannot say
    held = [preregistration.descends(REGISTRATION_COMMIT, sha) if d is False else None for sha, d in zip(shas, dirty)]
    yes, no, changed = sum(h is True for h in held), sum(h is False for h in held), sum(d is True for d in dirty)
    unknown = n - yes - no - changed
    if yes == n:
        names = "names that commit" if set(shas) == {REGISTRATION_COMMIT} else "names a commit that descends from it"
        if n == 1:
            return f"The rule was fixed in {fixed}, and the study's one record was trained by code that held it."
        return (f"The rule was fixed in {fixed}. {'Both' if n == 2 else f'All {n:,}'} records of the study were "
                f"trained by code that already held it: each {names}.")
    parts = [f"{no:,} by code that did not yet hold it"] if no else []
    parts += [f"{changed:,} from code with uncommitted changes"] if changed else []
    parts += [f"{unknown:,} {'names' if unknown == 1 else 'name'} no commit this history holds"] if unknown else []
    if n == 1:
        alone = ("was trained by code that did not yet hold it" if no else
                 "was trained from code with uncommitted changes" if changed else "names no commit this history holds")
        return f"The rule was fixed in {fixed}; the study's one record {alone}."
    subject = f"None of the {n:,} records" if yes == 0 else f"{yes:,} of the {n:,} records"
    return (f"The rule was fixed in {fixed}. {subject} {'were' if yes > 1 else 'was'} trained by code that already "
            "held it; "
            + " and ".join(parts) + ".")


def rule_text() -> str:
    """The pre-registered decision rule in words, from :mod:`residual_lib.study.budget`'s constants."""
    n = len(budget.BUDGET_SEEDS)
    return (f"A run *leaves the floor* at the first evaluation from which its validation loss stays more than "
            f"{budget.LINE:g} nats below the floor of its evaluation batches to the end; a run that never does is "
            f"censored at its last step. Over the {n} FFNOnly seeds: if at least {budget.MOST} leave the floor and "
            f"end below the bigram reference, {READINGS['speed']}; if at least {budget.STAY} ({budget.STAY / n:.0%}) "
            f"end within the line and none leaves the floor after step {budget.FLAT_AFTER:,}, "
            f"{READINGS['structural']}; otherwise neither.")


def escape_table(times: pd.DataFrame, attn_mean: float) -> pd.DataFrame:
    """One row per FFNOnly run (:func:`residual_lib.study.budget.escape_times`), in the study's seed
    order: the step it leaves the floor at (— if it does not), its final loss, how far below the
    floor and the bigram reference it ends, and its distance to AttnOnly's mean (``attn_mean``)."""
    order = {s: i for i, s in enumerate(budget.BUDGET_SEEDS)}
    times = times.assign(_order=times.seed.map(lambda s: order.get(s, len(order) + s))).sort_values("_order")
    return pd.DataFrame({
        "seed": times.seed.to_numpy(),
        "leaves the floor at step": [f"{int(t):,}" if e else "—" for t, e in zip(times.time, times.escaped)],
        "final loss": times.final_val_loss.to_numpy(),
        "below the floor": times.below_floor.to_numpy(),
        "below the bigram": (times.eval_bigram - times.final_val_loss).to_numpy(),
        "above AttnOnly": (times.final_val_loss - attn_mean).to_numpy(),
    })


def anchor_table(records: pd.DataFrame) -> pd.DataFrame:
    """The anchors (AttnOnly, NoResidual) and FFNOnly: seeds, mean, lowest and highest final loss."""
    rows = []
    for variant in ("attn_only", "ffn_only", "no_residual"):
        loss = records.loc[records.variant == variant, "final_val_loss"]
        if len(loss):
            rows.append({"variant": variant, "seeds": len(loss), "mean": loss.mean(), "lowest": loss.min(),
                         "highest": loss.max()})
    return pd.DataFrame(rows, columns=["variant", "seeds", "mean", "lowest", "highest"]).set_index("variant")


def progress_text(records: pd.DataFrame, absent: list) -> str:
    """How much of the study is recorded: FFNOnly's seeds and the anchor runs, and what is missing."""
    have = records.groupby("variant").size()
    planned = {v: int(have.get(v, 0)) + sum(r.variant == v for r in absent) for v in ("ffn_only", "attn_only", "no_residual")}
    ffn = f"{int(have.get('ffn_only', 0))} of {planned['ffn_only']} FFNOnly seeds"
    anchors = sum(int(have.get(v, 0)) for v in ("attn_only", "no_residual"))
    text = (f"Recorded so far: {ffn} and {anchors} of {planned['attn_only'] + planned['no_residual']} anchor runs"
            f" (AttnOnly and NoResidual).")
    if absent:
        text += (f" {len(absent)} {plural('run', len(absent))} {'is' if len(absent) == 1 else 'are'} still to come"
                 " (listed at the end of the page); every number below is read from the runs recorded.")
    return text


def decision_text(decision: dict, planned: int) -> str:
    """The rule's reading of the FFNOnly runs recorded (``decision``: :func:`residual_lib.study.budget.decide`),
    with the counts it rests on; provisional while fewer than ``planned`` seeds are recorded."""
    n = decision["runs"]
    if not n:
        return "No FFNOnly run of the study is recorded yet, so the rule has nothing to read."
    def verb(count: int, one: str, many: str) -> str:  # "1 of 2 seeds leaves", "0 leave"
        return f"{count} {one if count == 1 else many}"

    counts = (f"{decision['escaped']} of {n} FFNOnly {plural('seed', n)} "
              f"{'leaves' if decision['escaped'] == 1 else 'leave'} the floor ({decision['escaped_below_bigram']} of "
              f"them ending below the bigram reference), {verb(decision['within_line'], 'ends', 'end')} within the "
              f"line, and {verb(decision['late_escapes'], 'leaves', 'leave')} the floor after step {budget.FLAT_AFTER:,}.")
    reading = READINGS[decision["outcome"]]
    if n < planned:
        left = planned - n
        if decision["outcome"] == "speed":  # escapes recorded stay recorded
            return (f"{counts} With {n} of the {planned} seeds recorded, the rule already reads *speed*"
                    f" ({reading}), whatever the other {left} show.")
        if decision["outcome"] == "structural":
            return (f"{counts} With {n} of the {planned} seeds recorded, the rule reads *structural* so far "
                    f"({reading}); an escape after step {budget.FLAT_AFTER:,} among the other {left} would make it "
                    "*undecided*.")
        needs = {"speed": budget.MOST, "structural": budget.STAY}
        never = [r for r in needs if planned < needs[r]]  # a plan smaller than the rule's counts (e.g. `smoke`)
        reachable = [name for name, ok in (
            ("speed", decision["escaped_below_bigram"] + left >= budget.MOST),
            ("structural", decision["within_line"] + left >= budget.STAY and not decision["late_escapes"]))
            if ok and name not in never]
        lost = [r for r in needs if r not in reachable and r not in never]
        if reachable:
            text = (f"{' and '.join(f'*{r}*' for r in reachable)} {'are' if len(reachable) > 1 else 'is'} still "
                    f"reachable with the other {left}" + (f", *{lost[0]}* no longer" if lost else ""))
        elif lost:
            text = "neither reading can be reached any more, so the outcome will be *undecided*"
        short = (" and ".join(f"*{r}* needs {needs[r]} seeds" for r in never)
                 + f", more than the {planned} this profile plans")
        if not reachable and not lost:
            text = f"neither reading can be reached: {short}, so the outcome will be *undecided*"
        elif never:
            text += f"; {short}"
        yet = " yet" if reachable or lost else ""
        return f"{counts} With {n} of the {planned} seeds recorded, the rule cannot decide{yet}: {text}."
    return f"{counts} The pre-registered reading: *{decision['outcome']}*, {reading}."


#: The captions and alt texts of the chapter's figures.
CURVES_CAPTION = ("Validation loss on the fixed batches of every run of the budget study: FFNOnly's seeds thin, the"
                  " AttnOnly and NoResidual anchors thicker. Dashed, the floor of the evaluation batches; dotted, the"
                  " line a run must stay below to have left it; dash-dotted, the bigram reference.")
CURVES_ALT = ("Line chart of validation loss in nats against training step for FFNOnly's seeds and the AttnOnly and"
              " NoResidual anchors, with horizontal lines for the floor, the escape line and the bigram reference.")
KM_CAPTION = ("The Kaplan–Meier estimate of the share of FFNOnly's seeds still on the floor at each step (runs that"
              " never leave it count to their last step). Dotted, the step after which an escape rules out the"
              " structural reading; dashed, the share on the floor that reading needs.")
KM_ALT = ("Step chart of the share of FFNOnly runs still on the floor against training step, from 1 down, with a"
          " vertical dotted line and a horizontal dashed line.")
