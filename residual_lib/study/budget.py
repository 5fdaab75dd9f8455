"""The budget study: does FFNOnly's collapse last, or does FFNOnly learn late?

Every verdict on FFNOnly's collapse at the stand-in rests on runs of 2,000 steps (4.1M
tokens), where a run can still be leaving the floor at its last step (``cpu-long`` seed 1337
leaves it near step 4,300). This study trains FFNOnly at the ``cpu`` shape for 20,000 steps
(41M tokens, half of paper-10m's budget) at a constant learning rate after warm-up
(:data:`BUDGET_PROFILE`), so that the early trajectory does not depend on the budget, with the
fixed batches evaluated every 250 steps: :data:`BUDGET_SEEDS` (16 seeds), with AttnOnly and
NoResidual at :data:`ANCHOR_SEEDS` as anchors.

**Pre-registered.** The seeds, the line, the escape time and the decision rule below were
committed before any run of the study was trained; the commit each record names
(``provenance.git_sha``) can be checked against that one
(:func:`residual_lib.pages.chapters.budget.registration_text`).

* **Escape time** of a run: the first evaluation step from which its validation loss stays
  more than :data:`LINE` (0.05 nats) below the floor of its evaluation tokens to the end of the
  run (:func:`residual_lib.study.escapes.escape_step`). A run that does not is censored at its last
  step. A model that ignores its input gets at most about 0.01 nats below this floor on these
  tokens, so the line is five times what that could explain.
* **Survival curve**: the Kaplan-Meier estimate of the share of FFNOnly seeds still on the
  floor at each step (:func:`kaplan_meier`).
* **Decision rule** (:func:`decide`), over the 16 FFNOnly seeds:

  - ``speed`` -- at least :data:`MOST` (9) seeds escape and end below the bigram line of their
    evaluation tokens: the asymmetry is about speed (FFNOnly learns, late);
  - ``structural`` -- at least :data:`STAY` (13, i.e. 80%) seeds end within the line, and no
    seed escapes after step :data:`FLAT_AFTER` (15,000): the escape curve has flattened, and
    the collapse is structural at this budget;
  - ``undecided`` -- neither.

  Each escaped run's final loss is reported against the bigram line and AttnOnly's.
"""

from __future__ import annotations

import pandas as pd
from scipy import stats

from ..run.runs import Run
from .escapes import escapes
from .sections import ESCAPE_RATE_SEEDS

#: The study's profile (:mod:`residual_lib.run.profiles`): ``cpu`` for 20,000 steps at a constant
#: learning rate after warm-up, evaluated every 250 steps.
BUDGET_PROFILE = "cpu-budget"
#: FFNOnly's seeds: the first 16 escape-rate seeds (whose 2,000-step runs are on record at
#: ``cpu``), fixed before any run of the study was trained.
BUDGET_SEEDS = ESCAPE_RATE_SEEDS[:16]
#: AttnOnly's and NoResidual's seeds (the anchors).
ANCHOR_SEEDS = BUDGET_SEEDS[:4]
#: Nats below the evaluation floor that count as having left it.
LINE = 0.05
#: "Most" of the 16 seeds.
MOST = 9
#: Seeds within the line at the end for a structural reading (80% of 16).
STAY = 13
#: No escape after this step, for the curve to count as flat.
FLAT_AFTER = 15_000


def budget_runs(profile: str = BUDGET_PROFILE) -> list[Run]:
    """The study's runs in the order they are trained: seed by seed, FFNOnly first, each
    anchor seed's AttnOnly and NoResidual after its FFNOnly."""
    runs = []
    for seed in BUDGET_SEEDS:
        runs.append(Run(profile, "ffn_only", seed))
        if seed in ANCHOR_SEEDS:
            runs += [Run(profile, "attn_only", seed), Run(profile, "no_residual", seed)]
    return runs


def escape_times(frame: pd.DataFrame, line: float = LINE) -> pd.DataFrame:
    """Per FFNOnly run of ``frame`` (:func:`residual_lib.study.frames.load_records` rows): ``time``
    (the escape step, or the last step if censored), ``escaped``, the final loss, and whether it
    ends below the bigram line of its evaluation tokens."""
    runs = frame[frame.variant == "ffn_only"]
    out = escapes(runs, line)
    out = out.merge(runs[["key", "steps", "eval_bigram"]], on="key")
    out["time"] = out.escape_step.where(out.escaped, out.steps).astype(int)
    out["below_bigram"] = out.final_val_loss < out.eval_bigram
    return out


def kaplan_meier(times: pd.DataFrame) -> pd.DataFrame:
    """The Kaplan-Meier estimate of the share still on the floor (``on_floor``) from step 0 to
    each step at which a run of :func:`escape_times`' rows escaped or was censored (censored
    runs count as at risk to their last step)."""
    if times.empty:
        return pd.DataFrame(columns=["step", "on_floor"])
    data = stats.CensoredData(uncensored=times.time[times.escaped].to_numpy(),
                              right=times.time[~times.escaped].to_numpy())
    sf = stats.ecdf(data).sf
    return pd.DataFrame({"step": [0, *sf.quantiles.astype(int)], "on_floor": [1.0, *sf.probabilities]})


def decide(times: pd.DataFrame) -> dict:
    """The pre-registered reading of :func:`escape_times`' rows (see the module docstring)."""
    escaped = times[times.escaped]
    counts = {"runs": len(times), "escaped": len(escaped), "escaped_below_bigram": int(escaped.below_bigram.sum()),
              "within_line": int((~times.escaped).sum()), "late_escapes": int((escaped.time > FLAT_AFTER).sum())}
    if counts["escaped_below_bigram"] >= MOST:
        outcome = "speed"
    elif counts["within_line"] >= STAY and counts["late_escapes"] == 0:
        outcome = "structural"
    else:
        outcome = "undecided"
    return {"outcome": outcome, **counts}
