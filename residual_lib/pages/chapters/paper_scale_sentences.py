"""Chapter 12's finding, variant by variant: where each variant's runs end against the floor and
the paper's value (the sentences :func:`residual_lib.pages.chapters.paper_scale.finding` strings
together), and the runs outside the central sweep, which join no comparison between variants and
are reported on their own."""

from __future__ import annotations

import pandas as pd

from ...run.architecture import CENTRAL_VARIANTS
from ...run.runs import in_paper_order
from ...study import paper
from .. import scorecard
from ..names import display_name
from ..tables import listing, plural


def seed_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` in the order the seeds are planned (1337, 42, 123, then any other by value) and,
    within a seed, in the order of the central variants."""
    if not len(frame):
        return frame
    seeds = {s: i for i, s in enumerate(in_paper_order(frame.seed))}
    variants = {v: i for i, v in enumerate(CENTRAL_VARIANTS)}
    key = frame.seed.map(lambda s: seeds[int(s)]) * 100 + frame.variant.map(variants).fillna(99)
    return frame.iloc[key.argsort(kind="stable")]


def over_sweep(runs: pd.DataFrame, compared: pd.DataFrame | None) -> tuple[float, str]:
    """The mean final loss a sentence sets beside the paper's, and how it is said: over
    ``compared`` (a variant's runs in the central sweep, as the table and the scorecard's
    comparisons read them) where those are fewer than ``runs`` (all of the variant's runs), with
    "over the central sweep (seed 1337)" to say so; over ``runs`` otherwise, said as before."""
    if compared is None or not len(compared) or len(compared) >= len(runs):
        return float(runs.final_val_loss.mean()), ""
    common = [int(s) for s in seed_order(compared).seed]
    return float(compared.final_val_loss.mean()), f"over the central sweep ({plural('seed', len(common))} {listing(common)})"


def _every(runs: pd.DataFrame) -> str:
    """" in every seed (1337 and 42)", or nothing for one run."""
    return f" in every seed ({listing(int(s) for s in seed_order(runs).seed)})" if len(runs) > 1 else ""


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


def _ffn_sentence(ffn: pd.DataFrame, values: pd.DataFrame, compared: pd.DataFrame | None = None) -> str:
    """FFNOnly's collapse, seed by seed over every seed of ``ffn``, and its distance from the
    paper's value (:func:`over_sweep`: over ``compared``, its runs in the central sweep)."""
    states = [status(x, f) for x, f in zip(ffn.final_val_loss, ffn.eval_floor)]
    gaps = ffn.eval_floor - ffn.final_val_loss
    paper_value = values.loc["ffn_only", "value"]
    if all(s == "floor" for s in states):
        mean, over = over_sweep(ffn, compared)
        off = _than(mean, paper_value)
        return (f"FFNOnly stays at the floor{_every(ffn)}, as in the paper's collapse" +
                (f"; {over} it ends {off}" if over else f", ending {off}") + f" the paper's {values.loc['ffn_only', 'text']}")
    off = [(int(s), g, st) for s, g, st in zip(ffn.seed, gaps, states) if st != "floor"]
    parts = listing(f"seed {s} ends {abs(g):.3f} {'below' if g > 0 else 'above'} the floor" for s, g, _ in off)
    kept = len(ffn) - len(off)
    lead = f"FFNOnly stays at the floor in {kept} of {len(ffn)} seeds; " if kept else ""
    if all(st == "above" for _, _, st in off):  # worse than the floor: a collapse, and more
        lead = lead or "FFNOnly does not learn: "
        return lead + parts + f", worse than the paper's collapse at {paper_value:.3f}"
    lead = lead or "FFNOnly leaves the floor: "
    return lead + parts + f", so the paper's collapse at {values.loc['ffn_only', 'text']} does not hold here"


def _no_residual_sentence(runs: pd.DataFrame, values: pd.DataFrame, compared: pd.DataFrame | None = None) -> str:
    """NoResidual against the floor (every seed of ``runs``) and the paper's anchor (its 3.356,
    at the paper's floor; :func:`over_sweep`)."""
    paper_value = values.loc["no_residual", "value"]
    states = [status(x, f) for x, f in zip(runs.final_val_loss, runs.eval_floor)]
    if all(st == "floor" for st in states):
        mean, over = over_sweep(runs, compared)
        return (f"NoResidual ends at the floor{_every(runs)}" + (f"; {over} it ends" if over else ",")
                + f" {_than(mean, paper_value)} the paper's {paper_value:.3f}")
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


def _attn_sentence(attn: pd.DataFrame, values: pd.DataFrame, lone: bool = False,
                   compared: pd.DataFrame | None = None) -> str:
    """AttnOnly's recovery, seed by seed over every seed of ``attn``, and its mean against the
    paper's over ``compared`` (its runs in the central sweep, which the scorecard's comparisons
    read; all of ``attn`` where None or empty), said as such where the two differ."""
    states = [status(x, f) for x, f in zip(attn.final_val_loss, attn.eval_floor)]
    paper_value = values.loc["attn_only", "value"]
    n, mean = len(attn), attn.final_val_loss.mean()
    if all(s == "recovered" for s in states):
        who = f"AttnOnly recovers{_every(attn)}" if n > 1 else "It recovers" if lone else "AttnOnly's one seed recovers"
        mean, over = over_sweep(attn, compared)
        who += f"; {over} it" if over else ""
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
        ending = " ends" if who.endswith(" it") else ", ending"
        return f"{who}{ending} {off} the paper's {paper_value:.3f}{band + ')' if off != 'level with' else ''}"
    stuck = [int(s) for s, st in zip(attn.seed, states) if st != "recovered"]
    margin = scorecard.RECOVERY_MARGIN
    if len(stuck) == n:
        return (f"AttnOnly does not recover: it ends {_than(mean, float(attn.eval_floor.mean()))} the floor, not the "
                f"{margin:g} nats below it the scorecard asks, where the paper has {paper_value:.3f}")
    return (f"AttnOnly recovers in {n - len(stuck)} of {n} seeds ({plural('seed', len(stuck))} "
            f"{listing(stuck)} {'does' if len(stuck) == 1 else 'do'} not come {margin:g} nats below the floor), "
            f"where the paper reports recovery in every seed at {paper_value:.3f}")


def beyond_sweep(rest: pd.DataFrame, variants=(), table: bool = False) -> str:
    """The runs of ``rest``, those at seeds outside the central sweep (seeds that lack one of
    ``variants``, the central variants recorded), with each run's final loss. Under the comparison
    table (``table``), which leaves them out, sentences with each run's best and its place against
    the floor; otherwise a clause for the finding's opening, seed by seed with the variants each
    seed lacks ("at seed 42, which lacks Full and NoResidual, AttnOnly ends at 1.532 and ...; at
    seed 123, ...").
    Nothing where there are none."""
    if not len(rest):
        return ""
    rest = seed_order(rest)
    seeds = list(dict.fromkeys(int(s) for s in rest.seed))
    if not table:
        def at(seed: int) -> str:
            runs = rest[rest.seed == seed]
            lacks = [display_name(v) for v in CENTRAL_VARIANTS if v in set(variants) - set(runs.variant)]
            ends = listing(f"{display_name(r.variant)} {'ends ' if i == 0 else ''}at {r.final_val_loss:.3f}"
                           for i, r in enumerate(runs.itertuples()))
            return f"at seed {seed}, which lacks {listing(lacks)}, {ends}"

        return "; ".join(at(s) for s in seeds)
    one = len(seeds) == 1

    def run(i: int, r) -> str:
        name = display_name(r.variant) + ("" if one else f" seed {r.seed}")
        gap = r.eval_floor - r.final_val_loss
        where = ("at the floor" if status(r.final_val_loss, r.eval_floor) == "floor"
                 else f"{abs(gap):.3f} {'below' if gap > 0 else 'above'} the floor")
        best = f" (best {r.best_val_loss:.3f})" if f"{r.best_val_loss:.3f}" != f"{r.final_val_loss:.3f}" else ""
        return f"{name} {'ends ' if i == 0 else ''}at {r.final_val_loss:.3f}, {where}{best}"

    runs = listing(run(i, r) for i, r in enumerate(rest.itertuples()))
    which = f"{plural('seed', len(seeds))} {listing(str(s) for s in seeds)}"
    return (f"The table leaves out {which}, outside the central sweep (the seeds at which every variant has a "
            "run), so that every row reads the same seeds, as the scorecard's comparisons do. "
            + (f"There {runs}." if one else f"{runs}."))
