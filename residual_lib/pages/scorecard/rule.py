"""What a verdict rule is (:class:`Rule`), the registry every rule joins (:data:`RULES`), and
the slices of one profile's records that rules read (:class:`ProfileRecords`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from ...run.profiles import BOOK_PROFILE, DROPOUT_TWIN, GAIN_TIMING
from ...study.frames import recipe_runs
from ...study.sections import central_sweep, controlled, random_evaluation
from . import limits

PARTIAL = ("attn_only", "ffn_only", "no_residual")

VERDICTS = ("reproduced", "partly reproduced", "agrees with the paper's confirmed result", "not reproduced",
            "new evidence for", "new evidence against", "not testable here", "inconclusive", "not run at this scale")
PAPER_SCALE = {"paper-10m": "10M", "paper-124m": "124M"}


def stand_ins(stand_in: str = BOOK_PROFILE) -> tuple[str, ...]:
    """The stand-in profile and its dropout twin (when it has one), in the grid's order."""
    return (stand_in, DROPOUT_TWIN[stand_in]) if stand_in in DROPOUT_TWIN else (stand_in,)


def profiles_for_scale(scale: str, stand_in: str = BOOK_PROFILE, central: bool = True) -> tuple[str, ...]:
    """Profiles at which a claim of ``scale`` (10M, 124M or both) is checked; a claim the
    central sweep decides (``central``) also at the stand-in's dropout twin."""
    small = stand_ins(stand_in) if central else (stand_in,)
    return {"10M": ("paper-10m", *small), "124M": ("paper-124m",),
            "both": ("paper-10m", *small, "paper-124m")}[scale]


@dataclass(frozen=True)
class Rule:
    """A verdict rule: the text the pages show and the check that applies it, written side
    by side from the same constants and paper values. ``check(records, paper_rows)`` returns
    ``(ours, seeds, verdict)``, or None when the records cannot answer. A ``central`` rule
    reads only the central sweep (fixed batches, gain 1, one deterministic run per variant
    and seed), so it is judged at the stand-in's dropout twin too. A rule that needs no
    records (``needs_records`` false) is applied at every profile, records or not."""

    name: str
    text: str
    check: Callable
    central: bool = True
    needs_records: bool = True


#: Every rule, by name, in the order :mod:`residual_lib.pages.scorecard.rules` defines them.
RULES: dict[str, Rule] = {}


def rule(name: str, text: str, central: bool = True, needs_records: bool = True):
    """Register the decorated check as rule ``name``, with ``text``."""
    def register(check):
        RULES[name] = Rule(name, text, check, central, needs_records)
        return check

    return register


def fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def seeds(frame: pd.DataFrame) -> str:
    seeds = sorted(set(int(s) for s in frame["seed"]))
    return ", ".join(map(str, seeds)) if len(seeds) <= 4 else f"{len(seeds)} seeds"


def count(k: int, n: int, what: str) -> str:
    return f"{what} in {k} of {n} seed{'' if n == 1 else 's'}"


class ProfileRecords:
    """The records of one profile, with the slices the rules use: ``central``, every
    controlled run (a claim about one variant in every seed reads all of its seeds), and
    ``sweep``, the controlled runs at the central sweep's seeds (:func:`residual_lib.study.sections.sweep_seeds`), so
    that a comparison between variants averages each one over the same seeds."""

    def __init__(self, frame: pd.DataFrame, profile: str):
        self.profile = profile
        self.all = recipe_runs(frame[frame.profile == profile])  # an overridden run is not the profile's
        #: the runs of the profile that times this one's gain runs' first steps (GAIN_TIMING)
        self.timing = recipe_runs(frame[frame.profile == GAIN_TIMING.get(profile, "")])
        self.central = controlled(self.all)
        self.sweep = central_sweep(self.all)  # the selection the pages quote from
        self.random = random_evaluation(self.all)
        self.floor = float(self.central["eval_floor"].iloc[0]) if len(self.central) else math.nan

    def means(self, frame=None) -> pd.Series:
        frame = self.sweep if frame is None else frame
        return frame.groupby("variant")["final_val_loss"].mean()

    def has(self, variants, frame=None) -> bool:
        frame = self.sweep if frame is None else frame
        return set(variants) <= set(frame["variant"])

    def by_seed(self, frame=None) -> pd.DataFrame:
        """Final losses, one row per seed, one column per variant."""
        frame = self.sweep if frame is None else frame
        return frame.pivot_table(index="seed", columns="variant", values="final_val_loss")


def agrees(ours: float, claim_row: pd.Series) -> bool:
    std = claim_row["std"] if not pd.isna(claim_row["std"]) else 0.0
    return abs(ours - claim_row["value"]) <= max(2 * std, limits.REL_TOL * abs(claim_row["value"]))


def evidence(for_it: bool) -> str:
    """The verdict of a test the paper could not decide, with its direction."""
    return "new evidence for" if for_it else "new evidence against"


def verdict(ok: bool) -> str:
    return "reproduced" if ok else "not reproduced"


def share(k: int, n: int) -> str:
    return "reproduced" if k == n else "partly reproduced" if k else "not reproduced"
