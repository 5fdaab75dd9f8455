"""What chapter 9 finds: how the AttnOnly / FFNOnly asymmetry moves with model size along a ladder of models trained
at one budget, as the tables and sentences ``notebooks/09_scale_ladder.py`` shows."""

from __future__ import annotations

import math

import pandas as pd

from ...run.architecture import CENTRAL_VARIANTS
from ...run.profiles import PAPER_SCALE, get_profile
from ...run.runs import in_paper_order
from ...study import scaling
from ...study.frames import profile_input_blind_line, usable
from ...study.sections import central_sweep, controlled
from .. import scorecard
from ..names import display_name
from ..tables import listing, mean_std, missing_runs, plural, signed  # noqa: F401 (missing_runs: the notebook's)

#: The profile whose training budget the ladder's is compared with: the paper's 10M run as this project reads it.
PAPER = "paper-10m"


def recipe(rungs) -> dict[str, str]:
    """The ladder's recipe as the chapter's prose quotes it, as Markdown to glue, so that the prose cannot drift from
    the profiles: the budget every rung shares (the first rung's), the widths of the rungs below the top, the top
    rung's shape and the paper's 10M budget."""
    first, top, paper = get_profile(rungs[0]), get_profile(rungs[-1]), get_profile(PAPER)
    return {"ladder_context": f"{first.block_size}", "ladder_batch": f"{first.batch_size}",
            "ladder_steps": f"{first.max_iters:,}", "ladder_dropout": f"{first.dropout:g}",
            "ladder_widths": listing(get_profile(r).n_embd for r in rungs[:-1]),
            "ladder_top_layers": f"{top.n_layer}", "ladder_top_heads": f"{top.n_head}",
            "ladder_top_width": f"{top.n_embd}", "paper_steps": f"{paper.max_iters:,}",
            "paper_batch": f"{paper.batch_size}", "paper_context": f"{paper.block_size}"}


def token_budget(shape: pd.DataFrame) -> dict[str, str]:
    """The training tokens of a rung (``shape``: :func:`scaling.ladder_rungs`, smallest rung first), the top rung's
    tokens per parameter and the paper's 10M run's at the top rung's size, as text to glue: the budget is fixed in
    tokens, so the larger rungs are trained on far fewer tokens per parameter than the paper's model."""
    paper = get_profile(PAPER)
    return {"ladder_tokens": f"{shape.tokens.iloc[0] / 1e6:.1f}M",
            "ladder_top_tokens_per_param": f"{shape['tokens per parameter'].iloc[-1]:.1f}",
            "paper_tokens_per_param": f"{paper.training_tokens / shape.parameters.iloc[-1]:.0f}"}


def recorded(shape: pd.DataFrame, records: pd.DataFrame, absent=()) -> str:
    """Which rungs of the ladder (``shape``: :func:`scaling.ladder_rungs`) have every planned run recorded, which
    some (saying which variants, or how many of their seeds) and which none yet, as a sentence, so that the prose
    never claims a range the records do not cover. ``absent``: the planned runs without a record
    (``records.attrs["missing"]``)."""
    whole, partial, none = [], {}, []
    for _, rung in shape.iterrows():
        size = scaling.size_text(rung.parameters)
        mine = records[records.profile == rung.profile] if len(records) else records
        missing = [r for r in absent if r.profile.name == rung.profile]
        if not len(mine):
            none.append(size)
        elif not missing:
            whole.append(size)
        else:
            variants = [v for v in CENTRAL_VARIANTS if v in set(mine.variant)]
            planned_variants = set(variants) | {r.variant for r in missing}
            seeds = {int(s) for s in mine.seed}
            planned_seeds = seeds | {r.seed for r in missing}
            clause = (f"only {listing(variants)}" if len(variants) < len(planned_variants)
                      else f"{len(seeds)} of {len(planned_seeds)} seeds")
            partial.setdefault(clause, []).append(size)  # rungs recorded alike share one clause
    if not whole and not partial:
        return "No rung has records yet."
    parts = [f"the {listing(whole)} {'rung is' if len(whole) == 1 else 'rungs are'} recorded"] if whole else []
    parts += [f"at {listing(sizes)} {clause} so far" for clause, sizes in partial.items()]
    if none:
        parts.append(f"the {listing(none)} {'rung has' if len(none) == 1 else 'rungs have'} no records yet")
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


def _from_floor(x: float) -> str:
    return f"{abs(x):.3f} nats {'below' if x < 0 else 'above'} the floor"


def seed_note(records: pd.DataFrame, every_run: pd.DataFrame, floor_tol: float) -> str:
    """Where a rung is a profile with FFNOnly records at more seeds than the ladder's (the
    ``cpu`` rung, which the escape study runs at 20 seeds), what ``ffn_only - floor`` is over
    all of them, and which of its seeds leave the floor by more than ``floor_tol``, as
    sentences; empty where no rung has more seeds. ``records``: the ladder's runs,
    ``every_run``: every record of the same profiles."""
    notes = []
    for profile, mine in records[records.variant == "ffn_only"].groupby("profile") if len(records) else []:
        wider = controlled(every_run[(every_run.profile == profile) & (every_run.variant == "ffn_only")])
        if len(wider) <= len(mine):
            continue
        gap = wider.final_val_loss - wider.eval_floor
        shown = mine.final_val_loss - mine.eval_floor
        off = sorted(int(s) for s in wider.seed[gap.abs() > floor_tol])
        among = [s for s in off if s in set(mine.seed)]
        size, n = scaling.size_text(mine.n_params.iloc[0]), len(wider)
        text = (f"The {size} rung is `{profile}` read at the ladder's seeds ({listing(sorted(int(s) for s in mine.seed))}),"
                f" where FFNOnly ends {_from_floor(shown.mean())} on average. `{profile}` has FFNOnly records at {n} seeds;"
                f" over all of them it ends {_from_floor(gap.mean())}")
        if off:
            text += (f", and {'only ' if len(off) < n / 2 else ''}{plural('seed', len(off))} {listing(off)} "
                     f"{'leaves' if len(off) == 1 else 'leave'} the floor by more than {floor_tol:g} nats")
            if among:
                text += f" ({'it is' if len(among) == 1 else 'both are' if len(among) == 2 else 'they are'} among the ladder's)"
        text += "."
        if abs(gap.mean()) <= floor_tol < abs(shown.mean()):
            text += (f" Averaged over all its seeds, FFNOnly ends within {floor_tol:g} nats of the floor at {size}, so"
                     " the ladder's point there says more about which seeds it reads than about the size.")
        notes.append(text)
    return " ".join(notes)


def _up(x: float) -> str:
    """A bound as three decimals, rounded up so that it still bounds: 0.0014 -> 0.002."""
    return f"{math.ceil(round(x * 1000, 9)) / 1000:.3f}"


def anchor_note(records: pd.DataFrame, floor_tol: float, blind=profile_input_blind_line) -> str:
    """NoResidual over the ladder's runs that trained to the end: how close to the floor it ends,
    and which runs end further below it than a model that ignores its input can (each run's own
    ``blind(profile, eval_mode)``, nats; chapter 10 draws that line), as a sentence; ``floor_tol``
    is how far from the floor the page still counts a run as at it. Empty without such runs."""
    runs = usable(records[records.variant == "no_residual"]) if len(records) else records
    runs = runs[runs.final_val_loss.notna()] if len(runs) else runs
    if not len(runs):
        return ""
    runs = runs.assign(gap=runs.final_val_loss - runs.eval_floor,
                       line=[blind(r.profile, r.eval_mode) for r in runs.itertuples()]).sort_values(["n_params", "seed"])
    off, rest = runs[runs.gap < -runs.line], runs[runs.gap >= -runs.line]
    if off.empty:
        return f"NoResidual ends within {_up(runs.gap.abs().max())} nats of the floor in all its {len(runs)} runs."
    lines = {f"{x:.3f}" for x in off.line}
    where = listing(f"seed {int(r.seed)} at {scaling.size_text(r.n_params)} ends {abs(r.gap):.3f} nats below it"
                    + ("" if len(lines) == 1 else f" (its line: {r.line:.3f} nats)") for r in off.itertuples())
    head = (f"NoResidual ends within {_up(rest.gap.abs().max())} nats of the floor in its {len(rest)} other "
            f"{plural('run', len(rest))}, but {where}" if len(rest) else f"In each of its runs NoResidual ends below the floor: {where}")
    inside = (off.gap.abs() <= floor_tol).all()
    line = f"{lines.pop()} nats, " if len(lines) == 1 else ""
    return (f"{head}: {f'still within the {floor_tol:g} nats counted as at the floor, yet ' if inside else ''}"
            f"further below it than a model that ignores its input can reach ({line}[chapter 10](../notebooks/10_ffn_escape.html)). "
            "Without either residual, a model can still use its input, if little.")


def loss_summary(records: pd.DataFrame) -> pd.DataFrame:
    """Mean, std (ddof=1) and number of seeds of the final validation loss per rung and variant, smallest rung first."""
    if records.empty:
        return pd.DataFrame()
    summary = records.groupby(["profile", "n_params", "variant"])["final_val_loss"].agg(["mean", "std", "count"])
    return summary.rename(columns={"count": "seeds"}).reset_index().sort_values(["n_params", "variant"])


def gaps(records: pd.DataFrame) -> pd.DataFrame:
    """The two gaps per rung (:func:`scaling.ladder_gaps`); empty before any rung is recorded."""
    return scaling.ladder_gaps(records) if len(records) else pd.DataFrame()


def points(records: pd.DataFrame) -> pd.DataFrame:
    """Every seed's two gaps (:func:`scaling.ladder_gap_points`), the dots of the figure."""
    return scaling.ladder_gap_points(records) if len(records) else pd.DataFrame(columns=["gap"])


#: The caption and alt text of the figure of :func:`gaps`.
GAPS_CAPTION = ("The two gaps against model size, one panel per gap: the mean over seeds with its 95% t interval"
                " (a rung with one seed has none), and beside it each seed's own gap as a small dot; n is the number"
                " of seeds. The table above names each rung's profile. The dotted line is zero.")
GAPS_ALT = ("Two stacked charts of a gap in nats against parameter count on a log scale: AttnOnly minus Full, and"
            " FFNOnly minus the floor; a mean with an interval bar per rung and a dot per seed beside it.")


def trend(records: pd.DataFrame) -> pd.DataFrame:
    """Each gap's slope against log10(parameters) over every seed's gap (:func:`scaling.ladder_trend`): the change
    of the gap per tenfold increase in model size."""
    points = scaling.ladder_gap_points(records) if len(records) else pd.DataFrame(columns=["gap"])
    return scaling.ladder_trend(points)


def findings(gaps: pd.DataFrame, trend: pd.DataFrame, points: pd.DataFrame | None = None) -> dict[str, str]:
    """Per gap of :data:`scaling.LADDER_GAPS`, its sentences (:func:`scaling.ladder_text`): its size at the smallest
    and largest rung, whether FFNOnly stays within ``scorecard.FLOOR_TOL`` of the floor, and its trend with size
    (with the seed ``points``, also without a top rung of one seed)."""
    return {gap: scaling.ladder_text(gaps, trend, gap, scorecard.FLOOR_TOL, points) for gap in scaling.LADDER_GAPS}


#: How the introduction names each gap.
GAP_NAMES = {"attn_only - full": "AttnOnly's cost over Full", "ffn_only - floor": "FFNOnly's distance from the floor"}


def trend_summary(trend: pd.DataFrame) -> str:
    """Both gaps' trends in one sentence, for the introduction: whether either moves with size, and by how much per
    tenfold increase in parameters, with its 95% interval; empty before any gap has a fit."""
    fits = [(GAP_NAMES[r.gap], r) for r in trend.itertuples() if r.gap in GAP_NAMES and r.slope_per_decade == r.slope_per_decade]
    if not fits:
        return ""

    def slope(r):
        return f"{signed(r.slope_per_decade)} nats per tenfold size, 95% interval {signed(r.slope_low)} to {signed(r.slope_high)}"

    if all(r.trend == "no trend distinguishable from zero" for _, r in fits):
        subject = "Neither gap" if len(fits) > 1 else f"{fits[0][0][0].upper()}{fits[0][0][1:]}"
        return (f"{subject} shows a trend distinguishable from zero across the rungs ("
                + "; ".join(f"{name}: {slope(r)}" for name, r in fits) + ").")
    said = [f"{name} {'shows no trend distinguishable from zero' if r.trend.startswith('no trend') else r.trend}"
            f" ({slope(r)})" for name, r in fits]
    text = "; ".join(said) + "."
    return text[0].upper() + text[1:]


def bullet_list(texts) -> str:
    """``texts`` as a Markdown list, one item each."""
    return "\n".join(f"- {text}" for text in texts)


def two_budgets(every_run: pd.DataFrame, rungs, profile: str) -> tuple[pd.DataFrame, str]:
    """The ladder's top rung (the paper's width and depth at the ladder's budget) beside the paper's
    own setting (:data:`residual_lib.run.profiles.PAPER_SCALE`), the token axis of the ladder: each
    variant's final loss (mean ± std over seeds, with the seeds) at both budgets, and a sentence on
    what besides the tokens differs. Empty, with a sentence saying so, before both have records."""
    paper = PAPER_SCALE.get(profile)
    top = rungs[-1]
    if paper is None:
        return pd.DataFrame(), ""
    sides = {name: central_sweep(every_run[every_run.profile == name]) if len(every_run) else every_run
             for name in (top, paper)}  # the seeds every variant has, as every page quotes a sweep's means
    low, high = get_profile(top), get_profile(paper)
    labels = {name: f"{name} ({get_profile(name).training_tokens / 1e6:.3g}M tokens)" for name in sides}
    rows = []
    for variant in CENTRAL_VARIANTS:
        cells = {}
        for name, part in sides.items():
            loss = part.loc[part.variant == variant, "final_val_loss"] if len(part) else pd.Series([], dtype=float)
            cells[labels[name]] = mean_std(loss, seeds=True) if len(loss) else "—"
        rows.append({"variant": display_name(variant), **cells})
    def shown(v) -> str:
        return v if isinstance(v, str) else f"{v:,}" if isinstance(v, int) else f"{v:g}"

    differs = [f"{what} {shown(getattr(low, field))} against {shown(getattr(high, field))}" for what, field in
               (("context", "block_size"), ("batch", "batch_size"), ("dropout", "dropout"), ("steps", "max_iters"),
                ("peak learning rate", "learning_rate"), ("precision", "precision"),
               ("evaluation batches", "eval_iters")) if getattr(low, field) != getattr(high, field)]
    text = (f"The {scaling.size_text(sides[top].n_params.max()) if len(sides[top]) else top} shape at two budgets: "
            f"`{top}` trains on {low.training_tokens / 1e6:.3g}M tokens, `{paper}` on {high.training_tokens / 1e6:.3g}M"
            f" ({high.training_tokens / low.training_tokens:.3g} times as many). The two recipes also differ in "
            f"{listing(differs)}, so a difference between the columns is the paper's recipe against the ladder's, "
            "not the tokens alone.")
    if not any(len(p) for p in sides.values()):
        return pd.DataFrame(), "Neither the top rung nor the paper's setting has records yet."
    return pd.DataFrame(rows), text + _budget_reading(sides[top], sides[paper]) + _left_out(every_run, sides)


def _left_out(every_run: pd.DataFrame, sides: dict) -> str:
    """A sentence for each side whose runs include seeds outside its central sweep (seeds some
    variant lacks): the column reads only the sweep, as the scorecard's comparisons do."""
    text = ""
    for name, sweep in sides.items():
        runs = controlled(usable(every_run[every_run.profile == name])) if len(every_run) else every_run
        seeds = in_paper_order(runs.seed) if len(runs) else []
        kept = [s for s in seeds if s in set(sweep.seed)]
        other = [s for s in seeds if s not in kept]
        if other and not kept:
            text += (f" The `{name}` column is empty: no seed has a run of every variant there yet (its runs are at "
                     f"{plural('seed', len(other))} {listing(map(str, other))}).")
        elif other:
            text += (f" The `{name}` column reads its central sweep ({plural('seed', len(kept))} {listing(map(str, kept))}),"
                     f" the seeds at which every variant has a run, and leaves out {plural('seed', len(other))} "
                     f"{listing(map(str, other))}, at which not every variant has one.")
    return text


def _budget_reading(low: pd.DataFrame, high: pd.DataFrame) -> str:
    """How each variant recorded at both budgets moves from the ladder's (``low``) to the paper's
    (``high``): at the floor at both, or how much lower or higher it ends."""
    moved, floor = [], []
    for variant in CENTRAL_VARIANTS:
        a, b = (side[side.variant == variant] if len(side) else side for side in (low, high))
        if not (len(a) and len(b)):
            continue
        la, lb = a.final_val_loss.mean(), b.final_val_loss.mean()
        if all(abs(s.eval_floor.mean() - x) <= scorecard.FLOOR_TOL for s, x in ((a, la), (b, lb))):
            floor.append(display_name(variant))
        else:
            moved.append(f"{display_name(variant)} {abs(lb - la):.3f} {'lower' if lb < la else 'higher'}")
    said = [f"With the paper's recipe, {moved[0].replace(' ', ' ends ', 1)}", *moved[1:]] if moved else []
    if floor:
        said.append(f"{listing(floor)} {'is' if len(floor) == 1 else 'are'} at the floor at both budgets")
    return (" " + listing(said) + ".") if said else ""
