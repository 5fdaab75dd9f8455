"""Chapter 11, the budget study: whether FFNOnly's collapse lasts at ten times the stand-in's
budget or FFNOnly learns late, read by the rule :mod:`residual_lib.study.budget` fixed before its
runs, as the tables and sentences ``notebooks/11_budget.py`` shows."""

from __future__ import annotations

from datetime import timezone

import numpy as np
import pandas as pd

from ...core.text import in_words, listing
from ...run.profiles import get_profile
from ...study import budget, escapes
from ..scorecard import preregistration
from ..tables import missing_runs, plural  # noqa: F401 (missing_runs: the notebook's)
from .budget_context import carry_over_text, question_text, token_count  # noqa: F401 (the notebook's: the chapter's context)

#: How :func:`decision_text` reads each outcome of :func:`residual_lib.study.budget.decide`.
READINGS = {
    "speed": "the asymmetry is about speed: FFNOnly learns, late",
    "structural": "the collapse is structural at this budget",
    "undecided": "neither reading: the data do not decide between speed and structure",
}


def _share(ratio: float) -> str:
    """A ratio of budgets in words: "half", "a tenth", "1.5 times"."""
    words = {0.5: "half", 0.25: "a quarter", 0.1: "a tenth", 1.0: "the same as"}
    near = min(words, key=lambda r: abs(r - ratio))
    other = f"{ratio:.2g} times" if ratio >= 1 else f"{ratio * 100:.2g}% of"
    return words[near] if abs(near - ratio) < 0.01 * max(ratio, 0.01) else other


def scope(profile: str, runs: list) -> dict[str, str]:
    """The study's size at the book's ``profile``, from its planned ``runs``
    (:func:`residual_lib.study.sections.plan`): ``here`` for the chapter's opening, ``intro`` for the
    introduction; empty strings where the profile has no budget study."""
    if not runs:
        return {"here": "", "intro": ""}
    study, stand_in = runs[0].profile, get_profile(profile)
    seeds, anchors = ([r.seed for r in runs if r.variant == v] for v in ("ffn_only", "attn_only"))
    base, tokens, paper_tokens = stand_in.training_tokens, study.training_tokens, get_profile("paper-10m").training_tokens
    at = f"all {len(anchors)}" if len(anchors) == len(seeds) and len(seeds) > 1 else f"{len(anchors)} of them"
    here = (f"FFNOnly at the `{profile}` shape for {study.max_iters:,} steps ({token_count(tokens)} tokens, "
            f"{tokens / base:.3g} times the stand-in's budget), at a constant learning rate after warm-up, so "
            f"that a run's first steps do not depend on how long it lasts (profile `{study.name}`), with the "
            f"fixed batches evaluated every {study.eval_interval:,} steps: {len(seeds)} {plural('seed', len(seeds))}, "
            f"and AttnOnly and NoResidual at {at} as anchors.")
    intro = (f"Whether FFNOnly cannot learn or only learns late takes longer runs to tell: the stand-in's runs see "
             f"{token_count(base)} training tokens, the paper's {token_count(paper_tokens)} (read as nanoGPT's schedule, "
             f"which the summary does not give). The budget study trains FFNOnly at the stand-in's shape"
             f"{'' if study.dropout else ', without dropout,'} for {study.max_iters:,} steps "
             f"({token_count(tokens)} tokens, {_share(tokens / paper_tokens)} the paper's, on a far smaller model) "
             f"at {len(seeds)} "
             f"{plural('seed', len(seeds))}, at a constant learning rate, under a decision rule fixed before its runs.")
    return {"here": here, "intro": intro}


def reference_text(records: pd.DataFrame) -> str:
    """The two losses the rule measures against, on the study's evaluation batches."""
    if not len(records):
        return ""
    return (f"On the study's fixed evaluation batches the floor is {records.eval_floor.iloc[0]:.3f} nats (the loss of "
            "predicting every character by its frequency in the training text, about where a model that cannot use "
            f"its input ends) and the bigram reference {records.eval_bigram.iloc[0]:.3f} (predicting it from the "
            "character before, by the training text's pair counts).")


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
    held = [preregistration.descends(REGISTRATION_COMMIT, sha) if sha else None for sha in shas]
    yes = sum(h is True and d is False for h, d in zip(held, dirty))
    no = sum(h is False for h in held)
    changed = sum(h is not False and d is True for h, d in zip(held, dirty))
    unsure = sum(h is True and d is None for h, d in zip(held, dirty))  # the commit, its tree's state unrecorded
    unknown = n - yes - no - changed - unsure
    if yes == n:
        names = "names that commit" if set(shas) == {REGISTRATION_COMMIT} else "names a commit that descends from it"
        if n == 1:
            return f"The rule was fixed in {fixed}, and the study's one record was trained by code that held it."
        return (f"The rule was fixed in {fixed}. {'Both' if n == 2 else f'All {n:,}'} records of the study were "
                f"trained by code that already held it: each {names}.")
    kinds = [(no, "by code that did not yet hold it", "was trained by code that did not yet hold it"),
             (changed, "from code with uncommitted changes", "was trained from code with uncommitted changes"),
             (unsure, "from a commit that holds it, without saying whether its code had uncommitted changes",
              "names a commit that holds it but not whether its code had uncommitted changes"),
             (unknown, "from code whose commit is unnamed or not in this history", "names no commit this history holds")]
    if n == 1:
        return f"The rule was fixed in {fixed}; the study's one record {next(one for k, _, one in kinds if k)}."
    subject = f"None of the {n:,} records" if yes == 0 else f"{yes:,} of the {n:,} records"
    return (f"The rule was fixed in {fixed}. {subject} {'were' if yes > 1 else 'was'} trained by code that already "
            "held it; " + listing(f"{k:,} {many}" for k, many, _ in kinds if k) + ".")


def rule_text() -> str:
    """The pre-registered decision rule in words, from :mod:`residual_lib.study.budget`'s constants."""
    n = len(budget.BUDGET_SEEDS)
    return (f"A run *leaves the floor* at the first evaluation from which its validation loss stays more than "
            f"{budget.LINE:g} nats below the floor of its evaluation batches to the end; a run that never does is "
            f"censored at its last step. Over the {n} FFNOnly seeds: if at least {budget.MOST} leave the floor and "
            f"end below the bigram reference, {READINGS['speed']}; if at least {budget.STAY} of the {n} ({budget.STAY / n:.0%}) "
            f"end within the line and none leaves the floor after step {budget.FLAT_AFTER:,}, "
            f"{READINGS['structural']}; otherwise neither.")


def escape_table(times: pd.DataFrame, attn_mean: float) -> pd.DataFrame:
    """Per FFNOnly run (:func:`budget.escape_times`, ``best_val_loss`` if given), in seed order: its escape step, final
    loss, how far it ends below floor and bigram, above AttnOnly (``attn_mean``), and its deepest dip (it can come back)."""
    order = {s: i for i, s in enumerate(budget.BUDGET_SEEDS)}
    times = times.assign(_order=times.seed.map(lambda s: order.get(s, len(order) + s))).sort_values("_order")
    deepest = times.final_val_loss + times.below_floor - times.get("best_val_loss", np.nan)
    table = pd.DataFrame({
        "seed": times.seed.to_numpy(),
        "leaves the floor at step": [f"{int(t):,}" if e else "—" for t, e in zip(times.time, times.escaped)],
        "final loss": times.final_val_loss.to_numpy(),
        "below the floor": times.below_floor.to_numpy(),
        "below the bigram": (times.eval_bigram - times.final_val_loss).to_numpy(),
        "above AttnOnly": (times.final_val_loss - attn_mean).to_numpy(),
        **({"deepest below the floor": deepest.to_numpy()} if "best_val_loss" in times else {})})
    table.attrs["everyday"] = ["deepest below the floor"]  # nats: 0.000, not 4.9×10⁻⁴, beside 1.345
    return table


def anchor_table(records: pd.DataFrame) -> pd.DataFrame:
    """The anchors (AttnOnly, NoResidual) and FFNOnly: seeds, mean, median, lowest and highest final loss (FFNOnly's
    seeds split between the floor and far below it, so its mean is near none of them: the median says which is more)."""
    rows = []
    for variant in ("attn_only", "ffn_only", "no_residual"):
        loss = records.loc[records.variant == variant, "final_val_loss"]
        if len(loss):
            rows.append({"variant": variant, "seeds": len(loss), "mean": loss.mean(), "median": loss.median(),
                         "lowest": loss.min(), "highest": loss.max()})
    return pd.DataFrame(rows, columns=["variant", "seeds", "mean", "median", "lowest", "highest"]).set_index("variant")


def progress_text(records: pd.DataFrame, absent: list) -> str:
    """How much of the study is recorded: FFNOnly's seeds and the anchor runs, and what is missing."""
    have = records.groupby("variant").size()
    planned = {v: int(have.get(v, 0)) + sum(r.variant == v for r in absent) for v in ("ffn_only", "attn_only", "no_residual")}
    ffn, anchors = int(have.get("ffn_only", 0)), sum(int(have.get(v, 0)) for v in ("attn_only", "no_residual"))
    if not absent:
        return (f"Every run of the study is recorded: {ffn} FFNOnly {plural('seed', ffn)} and {anchors} anchor "
                f"{plural('run', anchors)} (AttnOnly and NoResidual).")
    return (f"Recorded so far: {ffn} of {planned['ffn_only']} FFNOnly seeds and {anchors} of "
            f"{planned['attn_only'] + planned['no_residual']} anchor runs (AttnOnly and NoResidual). {len(absent)} "
            f"{plural('run', len(absent))} {'is' if len(absent) == 1 else 'are'} still to come (listed at the end of the"
            " page); every number below is read from the runs recorded.")


def _counts(decision: dict) -> str:
    """The counts the rule reads, in a sentence whose verbs agree with them."""
    n, escaped, below = decision["runs"], decision["escaped"], decision["escaped_below_bigram"]
    within, late = decision["within_line"], decision["late_escapes"]
    if n == 1:
        if escaped:
            after = f" after step {budget.FLAT_AFTER:,}" if late else ""
            return (f"The one FFNOnly seed recorded leaves the floor{after} and ends "
                    f"{'below' if below else 'above'} the bigram reference.")
        return "The one FFNOnly seed recorded ends within the line."
    if escaped == 0:
        return (f"None of the {n} FFNOnly seeds recorded leaves the floor: "
                f"{'both' if n == 2 else f'all {n}'} end within the line.")
    ending = ("it ends below the bigram reference" if below else "it ends above the bigram reference") if escaped == 1 \
        else (f"{'both' if escaped == 2 else 'all'} of them ending below the bigram reference" if below == escaped else
              f"{below} of them ending below the bigram reference")
    return (f"{escaped} of {n} FFNOnly seeds {'leaves' if escaped == 1 else 'leave'} the floor ({ending}), "
            f"{within} {'ends' if within == 1 else 'end'} within the line, and "
            + (f"{late} {'leaves' if late == 1 else 'leave'} the floor after step {budget.FLAT_AFTER:,}." if late
               else f"none leaves the floor after step {budget.FLAT_AFTER:,}."))


#: How many seeds each reading needs, and what of.
NEEDS = {"speed": (budget.MOST, "that leave the floor below the bigram reference"),
         "structural": (budget.STAY, "within the line")}


def prospects(decision: dict, planned: int) -> dict[str, str]:
    """Each reading's standing with ``decision``'s runs of ``planned``: ``reached``, ``open`` (the seeds
    still to come can reach it), ``lost`` (they cannot any more) or ``never`` (the plan has fewer
    seeds than it needs, as at ``smoke``)."""
    left = max(planned - decision["runs"], 0)
    can = {"speed": decision["escaped_below_bigram"] + left >= budget.MOST,
           "structural": decision["within_line"] + left >= budget.STAY and not decision["late_escapes"]}
    return {name: "never" if planned < NEEDS[name][0] else "reached" if decision["outcome"] == name
            else "open" if can[name] else "lost" for name in NEEDS}


def _spare(decision: dict) -> str:
    spare = decision["within_line"] - budget.STAY
    return "with no seed to spare" if spare <= 0 else f"with {spare} {plural('seed', spare)} to spare"


def margin(decision: dict) -> str:
    """What a final *structural* reading (``decision``) rests on: how many more escapes would have undone it, and
    the share of seeds that left the floor anyway, with its exact 95% interval ("" for any other reading)."""
    if decision.get("outcome") != "structural":
        return ""
    n, escaped, within = decision["runs"], decision["escaped"], decision["within_line"]
    spare = within - budget.STAY
    edge = (f" It holds {_spare(decision)}: {within} seeds within the line are the fewest the rule accepts, and one "
            "more seed leaving the floor would have undone it." if spare <= 0 else
            f" It holds {_spare(decision)}: {spare + 1} more seeds leaving the floor by step {budget.FLAT_AFTER:,}, or"
            " any one after it, would have undone it.")
    if not escaped:
        return edge
    rate = escapes.escape_rate(escaped, n)
    return (f"{edge} The reading is of most seeds, not every one: the share that left the floor is {rate['rate']:.0%}"
            f" (95% interval {rate['low']:.0%} to {rate['high']:.0%}).")


def decision_text(decision: dict, planned: int) -> str:
    """The rule's reading of the FFNOnly runs recorded (``decision``: :func:`residual_lib.study.budget.decide`) with
    its counts; provisional below ``planned`` seeds, and called pre-registered only at the registered seed count."""
    n = decision["runs"]
    if not n:
        return "No FFNOnly run of the study is recorded yet, so the rule has nothing to read."
    counts, reading, left = _counts(decision), READINGS[decision["outcome"]], planned - n
    standing = prospects(decision, planned)
    never = [r for r in NEEDS if standing[r] == "never"]
    if never:
        short = (f"{listing(f'*{r}* needs {NEEDS[r][0]} seeds {NEEDS[r][1]}' for r in never)}, more than the "
                 f"{planned} this profile plans")
        other = [r for r in NEEDS if r not in never]
        if not other:
            return (f"{counts} The rule's counts are for the registered study's {len(budget.BUDGET_SEEDS)} seeds: "
                    f"{short}, so at this profile it reads *undecided* whatever its runs show.")
        counts += f" ({short}.)"
    if left <= 0:
        registered = "The pre-registered reading" if planned == len(budget.BUDGET_SEEDS) else "The rule's reading"
        most = margin(decision)
        return f"{counts} {registered}: *{decision['outcome']}*, {reading}.{most}"
    recorded, other = f"With {n} of the {planned} seeds recorded", "the one still to come" if left == 1 else f"the other {left}"
    if decision["outcome"] == "speed":  # escapes recorded stay recorded
        return f"{counts} {recorded}, the rule already reads *speed* ({reading}), whatever {other} {'shows' if left == 1 else 'show'}."
    if decision["outcome"] == "structural":
        return (f"{counts} {recorded}, the rule reads *structural* so far ({reading}); an escape after step "
                f"{budget.FLAT_AFTER:,} {'in' if left == 1 else 'among'} {other} would make it *undecided*.")
    open_ = [r for r in NEEDS if standing[r] == "open"]
    lost = [r for r in NEEDS if standing[r] == "lost"]
    if not open_:
        return (f"{counts} {recorded}, the outcome will be *undecided* whatever {other} "
                f"{'shows' if left == 1 else 'show'}: "
                + (f"{listing(f'*{r}*' for r in lost)} can no longer be reached." if lost else "."))
    return (f"{counts} {recorded}, the rule cannot decide yet: {listing(f'*{r}*' for r in open_)} "
            f"{'are' if len(open_) > 1 else 'is'} still reachable with {other}"
            + (f", *{lost[0]}* no longer." if lost else "."))


#: The two readings in plain words, for the introduction: each with both of its conditions.
PLAIN = {"speed": (f"that FFNOnly learns, only late (at least {budget.MOST} of {len(budget.BUDGET_SEEDS)} seeds leave "
                   "the floor and end below a bigram model's loss)"),
         "structural": (f"that FFNOnly's collapse is structural at this budget (at least {budget.STAY} of "
                        f"{len(budget.BUDGET_SEEDS)} seeds end on the floor, and none leaves it after step "
                        f"{budget.FLAT_AFTER:,})")}


def summary_text(decision: dict, planned: int) -> str:
    """The introduction's sentences on the rule's reading: :func:`decision_text` without its terms of art."""
    n = decision["runs"]
    if not n:
        return "No run of the study is recorded yet."
    escaped, within = decision["escaped"], decision["within_line"]
    if n == 1:
        text = f"Its one FFNOnly seed recorded so far {'has left' if escaped else 'has not left'} the floor for good."
    elif not escaped:
        text = f"{'So far,' if n < planned else 'In all,'} none of its {n} FFNOnly seeds has left the floor for good."
    else:
        text = (f"{'So far,' if n < planned else 'In all,'} {escaped} of its {n} FFNOnly seeds "
                f"{'has' if escaped == 1 else 'have'} left the floor for good and {within} "
                f"{'has' if within == 1 else 'have'} ended on it.")
    standing = prospects(decision, planned)
    if all(v == "never" for v in standing.values()):
        return text + f" Neither reading can be reached with the {planned} seeds this profile plans."
    if n >= planned or standing["speed"] == "reached":
        held = (f" That reading holds {_spare(decision)}" + (": one more seed leaving the floor would have undone it."
                if decision["within_line"] <= budget.STAY else ".")) if decision["outcome"] == "structural" else ""
        return text + f" The rule fixed before the runs reads {PLAIN.get(decision['outcome'], 'neither way')}.{held}"
    if standing["structural"] == "reached":
        return text + f" The rule reads {PLAIN['structural']} so far; a late escape among the other seeds would undo it."
    said = {"open": "is still open", "lost": "can no longer be reached", "never": "cannot be reached at this profile"}
    return text + " The reading " + " and the reading ".join(f"{PLAIN[r]} {said[standing[r]]}" for r in NEEDS) + "."


def intro_summary(decision: dict, planned: int, times: pd.DataFrame, records: pd.DataFrame) -> str:
    """The introduction's paragraph end: the rule's reading (:func:`summary_text`), then where the
    seeds that left the floor ended (:func:`escaped_text`)."""
    return f"{summary_text(decision, planned)} {escaped_text(times, records)}".strip()


def escaped_text(times: pd.DataFrame, records: pd.DataFrame) -> str:
    """Where the FFNOnly seeds that left the floor ended, against the bigram line and the AttnOnly
    anchors, in one sentence for the introduction (which gives the rule's reading beside it); or
    nothing where none left it."""
    gone = times[times.escaped]
    if not len(gone):
        return ""
    one, finals = len(gone) == 1, gone.final_val_loss
    ends = f"ends at {finals.iloc[0]:.3f}" if one else f"end at {finals.min():.3f} to {finals.max():.3f}"
    who = "The one seed that left the floor" if one else f"The {in_words(len(gone))} seeds that left the floor"
    below, bigram = int(gone.below_bigram.sum()), gone.eval_bigram.iloc[0]
    where = ("below" if below == len(gone) else "above" if not below else f"{in_words(below)} of them below")
    text = f"{who} {ends} nats, {where} a bigram model's {bigram:.3f}"
    attn = records.loc[records.variant == "attn_only", "final_val_loss"]
    if len(attn):
        anchor = f"{attn.iloc[0]:.3f}" if len(attn) == 1 else f"{attn.min():.3f} to {attn.max():.3f}"
        side = "above" if finals.min() > attn.max() else "below" if finals.max() < attn.min() else "beside"
        text += f" and {side} AttnOnly's {anchor} at the same budget"
    return text + "."


#: The captions and alt texts of the chapter's figures.
CURVES_CAPTION = ("Validation loss on the fixed batches of every run of the budget study: FFNOnly's seeds thin, the"
                  " AttnOnly and NoResidual anchors thicker. Dashed, the floor of the evaluation batches; dotted, the"
                  " line a run must stay below to have left it; dash-dotted, the bigram reference. The NoResidual"
                  " anchors and the FFNOnly seeds that stay on the floor run along the dashed line, under it.")
CURVES_ALT = ("Line chart of validation loss in nats against training step for FFNOnly's seeds and the AttnOnly and"
              " NoResidual anchors, with horizontal lines for the floor, the escape line and the bigram reference.")
KM_CAPTION = ("The Kaplan–Meier estimate of the share of FFNOnly's seeds still on the floor at each step (runs that"
              " never leave it count to their last step). Dotted, the step after which an escape rules out the"
              " structural reading; dashed, the share on the floor that reading needs.")


def km_line(planned: int, recorded: int) -> float | None:
    """The share on the floor the structural reading needs, as the survival figure draws it: only once all
    ``planned`` seeds are recorded (before, the curve is a share of the runs recorded, the rule's count one of
    the plan's), and only where the plan can reach it."""
    return budget.STAY / planned if recorded >= planned >= budget.STAY else None


def km_caption(line: float | None, planned: int, ends: float | None = None) -> str:
    """:data:`KM_CAPTION`, saying why the needed share is not drawn where :func:`km_line` leaves it out, and
    where the curve ends (``ends``, its last share) on the needed share, which it then hides."""
    if line is not None:
        on = ends is not None and abs(ends - line) < 1e-9
        return KM_CAPTION + (" The curve ends on the dashed line, which it hides from there on." if on else "")
    why = (f"is drawn once all {planned} seeds are recorded: until then the curve is a share of the runs recorded"
           if planned >= budget.STAY else f"cannot be reached with the {planned} seeds this profile plans")
    return KM_CAPTION.replace("; dashed, the share on the floor that reading needs.",
                              f". The share on the floor that reading needs ({budget.STAY} of "
                              f"{len(budget.BUDGET_SEEDS)} seeds) {why}.")


KM_ALT = ("Step chart of the share of FFNOnly runs still on the floor against training step, from 1 down, with a"
          " vertical dotted line and a horizontal dashed line.")


def km_alt(line: float | None) -> str:
    """:data:`KM_ALT`, without the dashed line where :func:`km_line` leaves it out."""
    return KM_ALT if line is not None else KM_ALT.replace(" and a horizontal dashed line.", ".")
