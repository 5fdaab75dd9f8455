"""Escapes from the floor: when a run leaves the unigram floor for good, and how often runs do,
with exact intervals and tests."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..core.text import listing, p_text
from ..storage.records import read_record


def escape_step(val_steps, val_losses, floor: float, tolerance: float) -> int | None:
    """The first evaluation step from which the validation loss stays more than
    ``tolerance`` below ``floor`` to the end of training (None: the run never leaves the
    floor for good)."""
    below = [loss < floor - tolerance for loss in val_losses]
    if not below or not below[-1]:
        return None
    i = len(below) - 1
    while i > 0 and below[i - 1]:
        i -= 1
    return int(val_steps[i])


def escapes(frame: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Per run of ``frame`` (rows of :func:`residual_lib.study.frames.load_records`): its final
    loss, its distance to its evaluation floor, whether it escaped (ends more than
    ``tolerance`` below the floor) and from which step (:func:`escape_step`)."""
    rows = []
    for _, row in frame.iterrows():
        rec = read_record(row["path"])
        val = rec["curves"]["val"]
        step = escape_step(val["step"], val["loss"], row["eval_floor"], tolerance)
        rows.append({"key": row["key"], "profile": row["profile"], "variant": row["variant"], "seed": int(row["seed"]),
                     "gain": row["gain"], "init_noise": row["init_noise"],
                     "replicate": int(row["replicate"]), "final_val_loss": row["final_val_loss"],
                     "below_floor": row["eval_floor"] - row["final_val_loss"], "escaped": step is not None,
                     "escape_step": step, "started": started(rec), "path": row["path"]})
    return pd.DataFrame(rows, columns=["key", "profile", "variant", "seed", "gain", "init_noise", "replicate",
                                       "final_val_loss", "below_floor", "escaped", "escape_step", "started", "path"])


def started(rec: dict) -> pd.Timestamp:
    """When a record's run started: its ``started_at``, or for records that predate the field its
    ``finished_at`` less its wall time (NaT when neither is known)."""
    prov = rec.get("provenance") or {}
    if prov.get("started_at"):
        return pd.Timestamp(prov["started_at"])
    if prov.get("finished_at") and rec.get("wall_seconds") is not None:
        return pd.Timestamp(prov["finished_at"]) - pd.Timedelta(seconds=float(rec["wall_seconds"]))
    return pd.NaT


def escape_rate(escaped: int, runs: int, confidence: float = 0.95) -> dict:
    """The share of ``runs`` that escaped, with its exact (Clopper-Pearson) interval."""
    if runs == 0:
        return {"escaped": 0, "runs": 0, "rate": math.nan, "low": math.nan, "high": math.nan}
    ci = stats.binomtest(int(escaped), int(runs)).proportion_ci(confidence, method="exact")
    return {"escaped": int(escaped), "runs": int(runs), "rate": escaped / runs, "low": float(ci.low),
            "high": float(ci.high)}


def escape_rates(runs: pd.DataFrame, thresholds, by: str = "setting", confidence: float = 0.95) -> pd.DataFrame:
    """Per value of ``by`` and threshold (nats below the floor): how many runs of ``runs``
    (rows of :func:`escapes`) end further below their floor than the threshold, the rate and
    its Clopper-Pearson interval; with, per threshold, Fisher's exact test between the first
    two values of ``by`` (two-sided p)."""
    rows = []
    groups = list(dict.fromkeys(runs[by]))
    for t in thresholds:
        counts = {}
        for g in groups:
            part = runs[runs[by] == g]
            k = int((part.below_floor > t).sum())
            counts[g] = (k, len(part))
            rows.append({by: g, "threshold": t, **escape_rate(k, len(part), confidence)})
        if len(groups) >= 2:
            (k1, n1), (k2, n2) = counts[groups[0]], counts[groups[1]]
            p = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue if n1 and n2 else math.nan
            for row in rows[-len(groups):]:
                row["fisher_p"] = float(p)
    return pd.DataFrame(rows)


def escape_rate_text(rates: pd.DataFrame, line: float) -> str:
    """The escape rates of :func:`escape_rates` (``setting`` column) in sentences: the rate
    and interval per setting at ``line``, Fisher's test between the settings, and whether
    the other lines tell the same story."""
    if rates.empty:
        return "No escape-rate records at this profile yet."
    main = rates[np.isclose(rates.threshold, line)]

    def one(r) -> str:
        return (f"{r.escaped} of {r.runs} run{'' if r.runs == 1 else 's'} ({r.rate:.0%}; 95% interval "
                f"{r.low:.0%} to {r.high:.0%})")

    rows = list(main.itertuples())
    text = f"At `{rows[0].setting}`, FFNOnly ends more than {line:g} nats below the floor in {one(rows[0])}"
    text += "".join(f"; at `{r.setting}`, in {one(r)}" for r in rows[1:]) + "."
    if "fisher_p" in main and len(main) >= 2:
        text += (f" Fisher's exact test of the two settings gives p = {p_text(float(main.fisher_p.iloc[0]))} "
                 f"at that line.")
        others = rates[~np.isclose(rates.threshold, line)]
        if len(others) and "fisher_p" in others:
            sides = []
            for t, part in others.groupby("threshold"):
                runs = set(part.runs)  # one run count for every setting: "5 and 0 of 20"
                counts = (listing(str(r.escaped) for r in part.itertuples()) + f" of {runs.pop()}" if len(runs) == 1
                          else listing(f"{r.escaped} of {r.runs}" for r in part.itertuples()))
                sides.append((f"{t:g} nats", f"{counts} (p = {p_text(float(part.fisher_p.iloc[0]))})"))
            (line0, first), rest = sides[0], sides[1:]
            text += f" With the line at {line0} the counts are {first}" + "".join(f"; at {t}, {c}" for t, c in rest) + "."
    return text


def input_blind_text(runs: pd.DataFrame, line: float, by: str = "setting") -> str:
    """FFNOnly's escapes counted at the input-blind line (:func:`residual_lib.study.frames.profile_input_blind_line`),
    per value of ``by``, with Fisher's test between the first two: one sentence."""
    if runs.empty:
        return ""
    rates = escape_rates(runs, [line], by)
    counts = "; ".join(f"at `{r.setting if by == 'setting' else getattr(r, by)}`, {r.escaped} of {r.runs}"
                       for r in rates.itertuples())
    text = (f"A model that ignores its input can end at most {line:.4f} nats below the floor on these batches (the "
            "evaluated tokens' own frequencies, where the floor uses the training split's), so a run that ends "
            f"further below has used its input. This line was drawn after the runs, from that argument and not from "
            f"their losses. At it: {counts}")
    if "fisher_p" in rates and len(rates) >= 2:
        text += f" (Fisher's exact p = {p_text(float(rates.fisher_p.iloc[0]))}, a test chosen after the data)"
    return text + "."


def after_lines_text(runs: pd.DataFrame, fixed: tuple[str, str], line: float) -> str:
    """The runs of ``runs`` that started after the escape lines were fixed (``fixed``: commit and
    time), per setting: how many end beyond ``line``, one of those lines. These counts were made at
    a line chosen before their data."""
    commit, when = fixed
    at = pd.Timestamp(when)
    later = runs[runs.started.notna() & (pd.to_datetime(runs.started, utc=True) > at)]
    if later.empty:
        return f"No run shown here started after the lines were fixed (commit {commit}, {at:%Y-%m-%d %H:%M} UTC)."
    parts = []
    for setting, part in later.groupby("setting", sort=False):
        beyond = int((part.below_floor > line).sum())
        parts.append(f"at `{setting}`, {beyond} of {len(part)} end more than {line:g} nats below the floor")
    return (f"The lines were fixed in commit {commit} ({at:%Y-%m-%d %H:%M} UTC). Counted over the runs that started "
            f"after it, and so judged at lines set before their data: " + "; ".join(parts) + ".")
