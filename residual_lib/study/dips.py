"""Dips below the floor that do not last: when a run goes further below the floor than the escape
line and then comes back above it.

:func:`residual_lib.study.escapes.escape_step` counts a run as having left the floor only if its
validation loss stays below the line to its last evaluation. A run can go below the line for a
while and return; the escape rule rightly counts it as within the line, and this module says
where it went, so that a reader sees the excursion rather than only the verdict. A variant that
ends on the floor (NoResidual) can dip too, which measures how much a dip that comes back says.
"""

from __future__ import annotations

import math

import pandas as pd

from ..core.text import listing
from ..storage.records import read_record
from .escapes import escape_step
from .frames import profile_input_blind_line

#: The columns of :func:`returns`.
COLUMNS = ["profile", "variant", "seed", "escaped", "escape_step", "below_floor", "dips"]


def _below(loss, floor: float, line: float) -> bool:
    """Whether an evaluation is more than ``line`` below ``floor``, as :func:`escape_step` reads it: a loss
    that is missing or not finite is not."""
    return loss is not None and math.isfinite(float(loss)) and float(loss) < floor - line


def dips(val_steps, val_losses, floor: float, line: float) -> list[dict]:
    """Each stretch of consecutive evaluations more than ``line`` below ``floor`` (:func:`_below`) that ends
    before the last evaluation (a stretch that reaches the end is the escape, not a dip): its ``first`` and
    ``last`` step, the ``deepest`` it went below the floor and the step it did (``at``)."""
    out, stretch = [], []
    for step, loss in [*zip(val_steps, val_losses), (None, None)]:  # the sentinel ends a stretch that reaches the end
        if _below(loss, floor, line):
            stretch.append((int(step), float(loss)))
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
    if not len(frame):
        return pd.DataFrame(rows, columns=COLUMNS)
    for _, run in frame.sort_values(["variant", "seed"]).iterrows():
        val = read_record(run["path"])["curves"]["val"]
        found = dips(val["step"], val["loss"], run["eval_floor"], line)
        if found:
            step = escape_step(val["step"], val["loss"], run["eval_floor"], line)
            rows.append({"profile": run["profile"], "variant": run["variant"], "seed": int(run["seed"]), "escaped": step is not None,
                         "escape_step": step, "below_floor": run["eval_floor"] - run["final_val_loss"],
                         "dips": found})
    return pd.DataFrame(rows, columns=COLUMNS)


def _span(dip: dict) -> str:
    where = f"at step {dip['first']:,}" if dip["first"] == dip["last"] else \
        f"from step {dip['first']:,} to {dip['last']:,}"
    at = "" if dip["at"] == dip["first"] else f", at step {dip['at']:,}"
    return f"{where} ({dip['deepest']:.3f} below at its deepest{at})"


def _spans(run, after: str = "") -> str:
    """A run's dips: one ("from step … (…) and came back``after``"), or several counted ("twice: …, coming
    back each time``after``")."""
    if len(run.dips) == 1:
        return f"{_span(run.dips[0])} and came back{after}"
    times = {2: "twice", 3: "three times", 4: "four times"}.get(len(run.dips), f"{len(run.dips)} times")
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
        leave = [_spans(r, f", before leaving the floor for good at step {int(r.escape_step):,}") for r in out.itertuples()]
        also = "also " if len(back) else ""
        if len(out) == 1:
            said.append(f"Seed {out.seed.iloc[0]} {also}went below the line on its way off the floor: {leave[0]}.")
        else:
            said.append(f"Seeds {listing(out.seed)} {also}went below the line on their way off the floor.")
            said += [f"Seed {seed} did so {text}." for seed, text in zip(out.seed, leave)]
    return " ".join(said)


def anchor_text(found: pd.DataFrame | None, line: float, blind: float | None = None, variant: str = "no_residual",
                name: str = "NoResidual") -> str:
    """How deep ``variant``'s runs that end on the floor dipped below the line, against ``blind``, how far below
    the floor a model that ignores its input can reach (default: :func:`profile_input_blind_line` of their
    profile): the measure a dip that comes back is read against. Empty where none did."""
    found = found[found.variant == variant] if found is not None and len(found) else pd.DataFrame(columns=COLUMNS)
    found = found[~found.escaped.astype(bool)]
    if not len(found):
        return ""
    deepest = max(d["deepest"] for run in found.dips for d in run)
    blind = profile_input_blind_line(found.profile.iloc[0]) if blind is None else blind
    each = " ".join(f"Seed {r.seed} went below it {_spans(r)}." for r in found.itertuples())
    far = (f", {deepest / blind:.0f} times as far as a model that ignores its input can reach on these batches "
           f"({blind:.3f})") if blind > 0 else ""
    return (f"The {name} anchor, which ends on the floor, crossed the line too. {each} So even a run that ends on "
            f"the floor can go {deepest:.3f} below it for a while{far}: a dip that comes back is not evidence of "
            "lasting learning.")
