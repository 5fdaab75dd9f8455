"""Dips below the floor that do not last: when a run goes further below the floor than the escape
line and then comes back above it.

:func:`residual_lib.study.escapes.escape_step` counts a run as having left the floor only if its
validation loss stays below the line to its last evaluation. A run can go below the line for a
while and return; the escape rule rightly counts it as within the line, and this module says
where it went, so that a reader sees the excursion rather than only the verdict.
"""

from __future__ import annotations

import pandas as pd

from ..core.text import listing, plural
from ..storage.records import read_record


def dips(val_steps, val_losses, floor: float, line: float) -> list[dict]:
    """Each stretch of consecutive evaluations more than ``line`` below ``floor`` that ends before the
    last evaluation (a stretch that reaches the end is the escape, not a dip): its ``first`` and
    ``last`` step, the ``deepest`` it went below the floor and the step it did (``at``)."""
    out, start = [], None
    for i, loss in enumerate(val_losses):
        if loss < floor - line:
            start = i if start is None else start
            continue
        if start is not None:
            part = list(val_losses[start:i])
            low = start + part.index(min(part))
            out.append({"first": int(val_steps[start]), "last": int(val_steps[i - 1]),
                        "deepest": floor - float(val_losses[low]), "at": int(val_steps[low])})
            start = None
    return out


def returns(times: pd.DataFrame, line: float) -> pd.DataFrame:
    """Per run of ``times`` (rows of :func:`residual_lib.study.budget.escape_times`, which carry each
    record's ``path``) with at least one dip (:func:`dips`): its seed, whether it escaped in the end,
    its final distance below the floor and its dips, in seed order."""
    rows = []
    for _, run in times.sort_values("seed").iterrows():
        val = read_record(run["path"])["curves"]["val"]
        floor = run["final_val_loss"] + run["below_floor"]
        found = dips(val["step"], val["loss"], floor, line)
        if found:
            rows.append({"seed": int(run["seed"]), "escaped": bool(run["escaped"]),
                         "escape_step": run["escape_step"], "below_floor": float(run["below_floor"]), "dips": found})
    return pd.DataFrame(rows, columns=["seed", "escaped", "escape_step", "below_floor", "dips"])


def _span(dip: dict) -> str:
    where = f"at step {dip['first']:,}" if dip["first"] == dip["last"] else \
        f"from step {dip['first']:,} to {dip['last']:,}"
    return f"{where} ({dip['deepest']:.3f} below at its deepest, at step {dip['at']:,})"


def _where(gap: float) -> str:
    return "on the floor" if abs(gap) < 0.0005 else f"{abs(gap):.3f} {'below' if gap > 0 else 'above'} the floor"


def returns_text(found: pd.DataFrame, runs: int, line: float) -> str:
    """The runs of :func:`returns` (out of ``runs`` read) in sentences: those that went below the line and
    came back to end within it, which the escape rule counts as never having left, and those that crossed
    it and came back before leaving the floor for good."""
    if not runs:
        return ""
    below = f"more than {line:g} nats below the floor"
    if not len(found):
        return (f"No FFNOnly run went {below} and came back: each that crossed the line stayed below it to its last"
                " evaluation.")
    back, out = found[~found.escaped], found[found.escaped]
    said = [f"Seed {r.seed} went {below} {listing(_span(d) for d in r.dips)} and came back, ending {_where(r.below_floor)}."
            for r in back.itertuples()]
    if len(back):
        said.append(f"The rule counts {'it' if len(back) == 1 else 'them'} as within the line: a run leaves the floor "
                    "only from the evaluation after which it stays below the line to the end.")
    if len(out):
        seeds = f"{plural('seed', len(out)).capitalize()} {listing(out.seed)}"
        each = "; ".join(f"{'' if len(out) == 1 else f'seed {r.seed} '}{listing(_span(d) for d in r.dips)}, before "
                         f"leaving it for good at step {int(r.escape_step):,}" for r in out.itertuples())
        said.append(f"{seeds} {'also ' if len(back) else ''}crossed the line and came back on {'its' if len(out) == 1 else 'their'} "
                    f"way off the floor: {each}.")
    return " ".join(said) + " The last column of the table above gives how deep each run went."
