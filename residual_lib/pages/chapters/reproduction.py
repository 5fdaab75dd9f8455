"""Chapter 8, the reproduction log: repeats of one configuration with and without deterministic algorithms,
its seed spread, and every number of the paper's account beside ours."""

from __future__ import annotations

import pandas as pd

from ...study import analysis
from ...study.sections import central_sweep, repeat_study
from ..tables import listing

#: The scorecard claims the chapter's verdict box shows.
CLAIMS = ["intermediate_reproduction", "nondeterministic_repeats", "original_record"]


def repeat_runs(records: pd.DataFrame, variant: str, seed: int) -> pd.DataFrame:
    """Every run of ``variant`` at ``seed``: the repeats of one configuration, deterministic or not."""
    runs = repeat_study(records, variant)
    return runs[runs.seed == seed]


def deterministic_replicates(repeats: pd.DataFrame, deterministic: bool = True) -> str:
    """The deterministic repeats (or, with ``deterministic`` False, the others) as the prose names
    them: "replicates 0 and 1", "replicates 0, 1 and 2", "replicate 3", or "none recorded"."""
    numbers = [str(r) for r in sorted(repeats[repeats.deterministic == deterministic].replicate)]
    if not numbers:
        return "none recorded"
    return ("replicate " if len(numbers) == 1 else "replicates ") + listing(numbers)


def repeat_table(repeats: pd.DataFrame) -> pd.DataFrame:
    """One row per repeat, deterministic ones last, with its losses and the device it ran on."""
    columns = ["deterministic", "replicate", "final_val_loss", "best_val_loss", "device_name"]
    return repeats[columns].sort_values(["deterministic", "replicate"])


def repeat_spread(repeats: pd.DataFrame) -> pd.DataFrame:
    """Per setting of ``deterministic``, how far the repeats' final validation losses spread: count, min, max,
    std and max − min. Deterministic repeats that differ would mean the runs are not reproducible."""
    spread = repeats.groupby("deterministic")["final_val_loss"].agg(["count", "min", "max", "std"])
    spread["max − min"] = spread["max"] - spread["min"]
    return spread


#: The headers of :func:`repeat_spread`'s table: the repeats counted, the losses in nats.
SPREAD_HEADERS = {"count": "runs", "min": "min (nats)", "max": "max (nats)", "max − min": "max − min (nats)"}


def seed_runs(records: pd.DataFrame, variant: str) -> pd.DataFrame:
    """The first deterministic run of ``variant`` at every seed of the central sweep
    (:func:`central_sweep`, the selection every page quotes): its seed spread, free of repeat noise."""
    runs = central_sweep(records)
    return runs[runs.variant == variant]


def seed_spread(seeds: pd.DataFrame) -> pd.DataFrame:
    """Count, mean, std, min and max of the final validation loss over the runs of :func:`seed_runs`."""
    return seeds.groupby("variant")["final_val_loss"].agg(["count", "mean", "std", "min", "max"])


def comparison(records: pd.DataFrame, claims: pd.DataFrame, variant: str, seed: int, profile: str) -> pd.DataFrame:
    """Every number of the paper's account beside ours at ``profile``: its non-deterministic repeats (ours in
    replicate order; None where we ran fewer), the mean and std over seeds of its intermediate reproduction,
    and the central means of attn_only and ffn_only. No verdicts: the scorecard states its rules."""
    repeats = repeat_runs(records, variant, seed)
    nondeterministic = repeats[~repeats.deterministic].sort_values("replicate")["final_val_loss"].tolist()
    paper_repeats = claims[claims.claim == "nondeterministic_repeats"]["value"]
    rows = [{"quantity": f"non-deterministic repeat {i + 1}", "paper": value,
             "ours": nondeterministic[i] if i < len(nondeterministic) else None}
            for i, value in enumerate(paper_repeats)]
    intermediate = claims[claims.claim == "intermediate_reproduction"].iloc[0]
    over_seeds = seed_runs(records, variant)["final_val_loss"]
    rows += [{"quantity": f"{variant} mean over seeds", "paper": intermediate["value"], "ours": over_seeds.mean()},
             {"quantity": f"{variant} std over seeds", "paper": intermediate["std"], "ours": over_seeds.std()}]
    central = analysis.variant_summary(central_sweep(records))
    for name in ("attn_only", "ffn_only"):
        ref = claims[(claims.claim == "asymmetry_10m") & (claims.variant == name)].iloc[0]
        rows.append({"quantity": f"{name} central mean", "paper": ref["value"], "ours": central.loc[name, "mean"]})
    return pd.DataFrame(rows).assign(profile=profile)
