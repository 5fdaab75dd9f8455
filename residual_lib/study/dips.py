"""Dips below the floor that do not last: when a run goes further below the floor than the escape
line and then comes back above it.

:func:`residual_lib.study.escapes.escape_step` counts a run as having left the floor only if its
validation loss stays below the line to its last evaluation. A run can go below the line for a
while and return; the escape rule rightly counts it as within the line, and this module says
where it went, so that a reader sees the excursion rather than only the verdict. A model that
cannot use its input (NoResidual) can dip too, which measures how deep a dip goes without learning.
"""

from __future__ import annotations

import math

import pandas as pd

from ..core.text import listing, plural
from ..storage.records import read_record
from .escapes import escape_step

#: The columns of :func:`returns`.
COLUMNS = ["variant", "seed", "escaped", "escape_step", "below_floor", "dips"]


def dips(val_steps, val_losses, floor: float, line: float) -> list[dict]:
    """Each stretch of consecutive evaluations more than ``line`` below ``floor`` that ends before the
    last evaluation (a stretch that reaches the end is the escape, not a dip): its ``first`` and
    ``last`` step, the ``deepest`` it went below the floor and the step it did (``at``). Evaluations
    whose loss is not finite are left out: they neither extend a stretch nor end one."""
    points = [(int(s), float(x)) for s, x in zip(val_steps, val_losses) if math.isfinite(float(x))]
    out, stretch = [], []
    for step, loss in points + [(None, math.inf)]:  # the sentinel closes a stretch only if it is a dip
        if loss < floor - line:
            stretch.append((step, loss))
            continue
        if stretch and step is not None:
            at, low = min(stretch, key=lambda p: p[1])
            out.append({"first": stretch[0][0], "last": stretch[-1][0], "deepest": floor - low, "at": at})
        stretch = []
    return out


def returns(frame: pd.DataFrame, line: float) -> pd.DataFrame:
    """Per run of ``frame`` (rows of :func:`residual_lib.study.frames.load_records`) with at least one
    dip (:func:`dips`) below its ``eval_floor``: its variant, seed, whether it escaped in the end (and
    from which step, as :func:`escape_step` reads it), its final distance below the floor and its dips,
    in variant and seed order."""
    rows = []
    for _, run in frame.sort_values(["variant", "seed"]).iterrows():
        val = read_record(run["path"])["curves"]["val"]
        found = dips(val["step"], val["loss"], run["eval_floor"], line)
        if found:
            step = escape_step(val["step"], val["loss"], run["eval_floor"], line)
            rows.append({"variant": run["variant"], "seed": int(run["seed"]), "escaped": step is not None,
                         "escape_step": step, "below_floor": run["eval_floor"] - run["final_val_loss"],
                         "dips": found})
    return pd.DataFrame(rows, columns=COLUMNS)


def _span(dip: dict) -> str:
    where = f"at step {dip['first']:,}" if dip["first"] == dip["last"] else \
        f"from step {dip['first']:,} to {dip['last']:,}"
    return f"{where} ({dip['deepest']:.3f} below at its deepest, at step {dip['at']:,})"


def _spans(run, after: str = "") -> str:
    """A run's dips: one ("from step … (…) and came back``after``"), or several counted ("twice: …, coming
    back each time``after``")."""
    if len(run.dips) == 1:
        return f"{_span(run.dips[0])} and came back{after}"
    times = {2: "twice", 3: "three times"}.get(len(run.dips), f"{len(run.dips)} times")
    return f"{times}: {listing(_span(d) for d in run.dips)}, coming back each time{after}"


def _where(gap: float) -> str:
    if not math.isfinite(gap):
        return "with no finite final loss"
    return "on the floor" if abs(gap) < 0.0005 else f"{abs(gap):.3f} {'below' if gap > 0 else 'above'} the floor"


def returns_text(found: pd.DataFrame | None, runs: int, line: float, variant: str = "ffn_only",
                 name: str = "FFNOnly") -> str:
    """The ``variant`` runs of :func:`returns` (out of ``runs`` of it read) in sentences: those that went
    below the line and came back to end within it, which the escape rule counts as never having left,
    and those that crossed it and came back before leaving the floor for good."""
    if not runs:
        return ""
    below = f"more than {line:g} nats below the floor"
    found = found[found.variant == variant] if found is not None and len(found) else pd.DataFrame(columns=COLUMNS)
    if not len(found):
        return f"No {name} run crossed the line and came back."
    back, out = found[~found.escaped.astype(bool)], found[found.escaped.astype(bool)]
    said = [f"Seed {r.seed} went {below} {_spans(r, f', ending {_where(r.below_floor)}')}." for r in back.itertuples()]
    if len(back):
        said.append(f"The rule counts {'it' if len(back) == 1 else 'them'} as within the line: a run leaves the floor "
                    "only at the first evaluation from which it stays below the line to the end.")
    if len(out):
        seeds = f"{plural('seed', len(out)).capitalize()} {listing(out.seed)}"
        each = "; ".join(f"{'' if len(out) == 1 else f'seed {r.seed} '}{_spans(r, ', before leaving the floor for good at step ')}"
                         f"{int(r.escape_step):,}" for r in out.itertuples())
        said.append(f"{seeds} {'also ' if len(back) else ''}went below the line on {'its' if len(out) == 1 else 'their'} "
                    f"way off the floor: {each}.")
    return " ".join(said)


def anchor_text(found: pd.DataFrame | None, line: float, variant: str = "no_residual", name: str = "NoResidual") -> str:
    """How deep ``variant``'s runs dipped below the line without learning, as the measure a dip of a
    learning variant is read against; empty where none did."""
    found = found[found.variant == variant] if found is not None and len(found) else pd.DataFrame(columns=COLUMNS)
    if not len(found):
        return ""
    deepest = max(d["deepest"] for run in found.dips for d in run)
    each = " ".join(f"Seed {r.seed} went below it {_spans(r)}." for r in found.itertuples())
    return (f"The {name} anchor, which stays on the floor, crossed the line too. {each} A dip down to {deepest:.3f} "
            "below the floor happens on these batches without learning.")
