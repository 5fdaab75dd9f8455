"""Every number a verdict rule compares with, the plausible alternatives
:func:`residual_lib.pages.scorecard.sensitivity.sensitivity` tries, and when each was set.

The rules read these as ``limits.NAME`` when they run, so that :class:`thresholds` can set
other values for a block.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...study import analysis
from ..tables import plural

FLOOR_TOL = 0.05  # nats either side of the evaluation floor: "at the floor"
RECOVERY_MARGIN = 0.5  # nats below the floor: "recovers"
REL_TOL = 0.02  # agreement with a paper number at the paper's own profile
SPREAD_TOL = 0.01  # run-to-run spread that counts as "the runs differ"
GAIN_TOL = 0.05  # final-loss spread across gains that counts as "equivalent"
EARLY_AGREE = 0.01  # the most a timing run may differ from the gain run it retraces (a fifth of GAIN_TOL)
SEED_SPREAD = 0.1  # seed-to-seed std that counts as "a large spread" (the paper's anomaly: 0.544, paper_claims.csv)
ALPHA_NEAR_ONE = 0.9  # alpha_tt that counts as "~1"
LAYER0_ZERO = analysis.LAYER0_ZERO  # block-0 gradient norm that rounds to the paper's 0.000
LAYER0_FROM = analysis.LAYER0_FROM  # where "from step 300 onward" starts, as a share of training
DRIFT_REL = 0.1  # relative agreement of a growth or drift figure with the paper's
NOISE_SHARE = 0.1  # evaluation noise below this share of a discrepancy cannot explain it
ESCAPE_CONFIDENCE = 0.95  # the escape rate's Clopper-Pearson interval


@dataclass(frozen=True)
class Threshold:
    """A number a verdict rule compares with: the module constant ``name``, what it means,
    the plausible alternatives :func:`residual_lib.pages.scorecard.sensitivity.sensitivity` tries, and the commit that set its
    present value (with its time, ISO 8601), so that a reader can see whether it was set
    before or after the records it judges (a test checks these against the history when it
    is there)."""

    name: str
    meaning: str
    alternatives: tuple[float, ...]
    set_on: str
    commit: str

    @property
    def value(self) -> float:
        return globals()[self.name]


#: Every threshold that decides a verdict.
THRESHOLDS = (
    Threshold("FLOOR_TOL", "nats either side of the floor that count as at the floor", (0.02, 0.10),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("RECOVERY_MARGIN", "nats below the floor (and below ffn_only) that count as recovered", (0.25, 1.0),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("LAYER0_ZERO", "block-0 gradient norm that counts as the paper's 0.000", (1e-4, 1e-3),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("LAYER0_FROM", "share of training after which block 0 is read (the paper's step 300)", (0.03, 0.12),
              "2026-12-03T04:48:36+00:00", "5380c9f"),
    Threshold("GAIN_TOL", "nats within which gains count as equivalent", (0.02, 0.10), "2026-12-02T11:41:02+00:00",
              "8008129"),
    Threshold("SEED_SPREAD", "seed-to-seed std that counts as a large spread", (0.05, 0.2),
              "2026-12-03T04:48:36+00:00", "5380c9f"),
    Threshold("SPREAD_TOL", "run-to-run spread that counts as the repeats differ", (0.005, 0.02),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("ALPHA_NEAR_ONE", "α_tt that counts as ≈ 1", (0.8, 0.95), "2026-12-03T04:48:36+00:00",
              "5380c9f"),
    Threshold("REL_TOL", "relative agreement with a paper number at its own profile", (0.01, 0.05),
              "2026-12-02T11:41:02+00:00", "8008129"),
    Threshold("DRIFT_REL", "relative agreement of a drift figure with the paper's", (0.05, 0.2),
              "2026-12-03T16:56:55+00:00", "54b7525"),
    Threshold("NOISE_SHARE", "share of a discrepancy below which evaluation noise cannot explain it", (0.05, 0.2),
              "2026-12-03T16:56:55+00:00", "54b7525"),
)


class thresholds:
    """Within ``with thresholds(FLOOR_TOL=0.02): ...`` the rules use the given values."""

    def __init__(self, **values):
        unknown = set(values) - {t.name for t in THRESHOLDS}
        if unknown:
            raise ValueError(f"unknown {plural('threshold', len(unknown))} {', '.join(sorted(unknown))}: choose from "
                             f"{', '.join(t.name for t in THRESHOLDS)}")
        self.values, self.saved = values, {}

    def __enter__(self):
        self.saved = {name: globals()[name] for name in self.values}
        globals().update(self.values)
        return self

    def __exit__(self, *exc):
        globals().update(self.saved)
