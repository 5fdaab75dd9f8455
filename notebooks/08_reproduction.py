# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 8 · The reproduction log
#
# **The paper's account.** Three non-deterministic runs of AttnOnly at seed 1337 disagreed
# with each other; forcing deterministic algorithms removed that run-to-run variance, but an
# intermediate reproduction over seeds 1337/42/123 landed far from the originally recorded
# value, with a large seed spread, before the controlled 8-seed sweep recovered it. The
# paper's numbers are in the folded block below the verdicts, read from `residual_lib/paper_claims.csv`.
#
# **Here.** Repeats of one configuration with and without deterministic algorithms, the
# seed spread of the same configuration, and every comparison with the paper listed,
# whether it agrees or not.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
repeats = None
repro_variant = None

# %%
import pandas as pd

from residual_lib import analysis, paper, scorecard
from residual_lib.sections import notebook_records
from residual_lib.tables import table

records = notebook_records("08_reproduction", globals())
claims = paper.claims()
scorecard.verdict_box(
    ["intermediate_reproduction", "nondeterministic_repeats", "original_record"],
    records,
)

# %%
paper.section_view(8)

# %% [markdown]
# ## Repeats of one seed
#
# The same configuration (variant, seed, data order, initialisation) trained several times,
# with deterministic algorithms (replicates 0 and 1) and without (replicates 0 to
# `repeats − 1`). The device and thread count each ran on are in the records' provenance.

# %%
repeat_runs = records[(records.variant == repro_variant) & (records.seed == seeds[0])]
repeat_table = repeat_runs[
    ["deterministic", "replicate", "final_val_loss", "best_val_loss", "device_name"]
]
repeat_table = repeat_table.sort_values(["deterministic", "replicate"])
table(repeat_table, decimals=4, headers={"device_name": "device"})

# %%
spread = repeat_runs.groupby("deterministic")["final_val_loss"].agg(
    ["count", "min", "max", "std"]
)
spread["max − min"] = spread["max"] - spread["min"]
table(
    spread,
    index="deterministic",
    decimals=4,
    headers={
        "count": "runs",
        "min": "min (nats)",
        "max": "max (nats)",
        "max − min": "max − min (nats)",
    },
)

# %% [markdown]
# ## The seed spread of the same configuration

# %%
seed_runs = records[
    (records.variant == repro_variant)
    & records.deterministic
    & (records.replicate == 0)
]
table(
    seed_runs.groupby("variant")["final_val_loss"].agg(
        ["count", "mean", "std", "min", "max"]
    ),
    index="variant",
    headers={"count": "seeds", "min": "min (nats)", "max": "max (nats)"},
)

# %% [markdown]
# ## Every comparison with the paper
#
# The paper's reported values for this section's quantities beside what these runs measured.
# The paper's runs are at 10M on a GPU; a different profile is a different model, so this
# table lists the numbers side by side and leaves verdicts to the scorecard, which states
# its rule.

# %%
nondet = (
    repeat_runs[~repeat_runs.deterministic]
    .sort_values("replicate")["final_val_loss"]
    .tolist()
)
rows = []
for i, value in enumerate(claims[claims.claim == "nondeterministic_repeats"]["value"]):
    rows.append(
        {
            "quantity": f"non-deterministic repeat {i + 1}",
            "paper": value,
            "ours": nondet[i] if i < len(nondet) else None,
        }
    )
inter = claims[claims.claim == "intermediate_reproduction"].iloc[0]
rows.append(
    {
        "quantity": f"{repro_variant} mean over seeds",
        "paper": inter["value"],
        "ours": seed_runs["final_val_loss"].mean(),
    }
)
rows.append(
    {
        "quantity": f"{repro_variant} std over seeds",
        "paper": inter["std"],
        "ours": seed_runs["final_val_loss"].std(),
    }
)
central = analysis.variant_summary(
    records[records.deterministic & (records.replicate == 0)]
)
for variant in ("attn_only", "ffn_only"):
    ref = claims[(claims.claim == "asymmetry_10m") & (claims.variant == variant)].iloc[
        0
    ]
    rows.append(
        {
            "quantity": f"{variant} central mean",
            "paper": ref["value"],
            "ours": central.loc[variant, "mean"],
        }
    )
table(
    pd.DataFrame(rows).assign(profile=profile),
    headers={"paper": "the paper's (10M, nats)", "ours": "ours (nats)"},
)
