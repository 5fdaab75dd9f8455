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
# # 6 · The central observation: the controlled multi-seed sweep
#
# **The paper's claim.** With fixed validation batches (drawn once, seed 99,991) and
# deterministic training, AttnOnly recovers, seed after seed, at 10M, while FFNOnly collapses
# to the No-Residual anchor. The paper's numbers are in the folded block below the verdicts, read from
# `residual_lib/paper_claims.csv`.
#
# **Here.** Every variant × seed below, `fixed` evaluation, deterministic mode.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
dropout_twin = None

# %%
from IPython.display import Markdown

from residual_lib import analysis, paper, plots, scorecard
from residual_lib.book import glue
from residual_lib.sections import notebook_records
from residual_lib.tables import table

everything = notebook_records("06_central", globals())
records = everything[everything.profile == profile]  # the dropout twin's runs: below
records.attrs = everything.attrs
floor = records["eval_floor"].iloc[
    0
]  # the unigram floor of the fixed evaluation batches
claims = ["asymmetry_10m", "ffn_collapse_10m", "ffn_vs_no_residual"]
scorecard.verdict_box(claims, records)

# %%
paper.section_view(6)

# %% [markdown]
# ## Final validation loss per variant (mean ± std over seeds)

# %%
summary = analysis.variant_summary(records)
summary["below the floor"] = floor - summary["mean"]
for variant, row in summary.iterrows():  # numbers quoted in the book's prose
    glue(
        f"{variant}_result",
        (
            f"{row['mean']:.3f} ± {row['std']:.3f}"
            if row["seeds"] > 1
            else f"{row['mean']:.3f}"
        ),
    )
glue("eval_floor", f"{floor:.3f}")
full = records.variant == "full"
n_params = int(records.loc[full, "n_params"].max()) if full.any() else 0
glue("n_params", f"{n_params / 1e6:.2g}M-parameter")
n_seeds = int(summary["seeds"].min())
glue("n_seeds", f"{n_seeds} seed{'' if n_seeds == 1 else 's'}")
table(summary, index="variant", headers={"below the floor": "below the floor (nats)"})

# %%
plots.show(
    plots.final_losses(
        records, floor=floor, title=f"Final validation loss ({profile})"
    ),
    "fig-central-final",
    "Final validation loss on the fixed batches, one point per seed over a box per "
    "variant. The dashed line is the floor of those batches.",
    "Box and strip chart of final validation loss in nats for the four variants, one "
    "point per seed, with a dashed floor line.",
)

# %% [markdown]
# Every seed. Two claims are read from this table, and they can come apart: the
# *asymmetry* (in each seed AttnOnly ends far below FFNOnly) and *collapse in every seed*
# (each FFNOnly run ends at the floor, within 0.05 nats either side).

# %%
per_seed = records.pivot_table(index="seed", columns="variant", values="final_val_loss")
per_seed = per_seed[analysis.variant_order(records)]
if "ffn_only" in per_seed:
    per_seed["ffn_only at the floor"] = (
        per_seed["ffn_only"] - floor
    ).abs() <= scorecard.FLOOR_TOL
table(per_seed, index="seed", caption="Final validation loss (nats) per seed")

# %%
plots.show(
    plots.loss_curves(
        analysis.curves(records, "val"),
        floor=floor,
        title="Validation loss on the fixed batches",
    ),
    "fig-central-curves",
    "Validation loss on the fixed batches during training (mean over seeds, band ±1 "
    "std); the dashed line is the floor of those batches.",
    "Line chart of validation loss in nats against training step for the four "
    "variants, with a dashed floor line.",
)

# %% [markdown]
# ## The gaps, with confidence intervals
#
# Differences of mean final loss, Welch's t-test and its 95% interval, and a percentile
# bootstrap interval (scipy). With a single seed only the point difference is shown.

# %%
pairs = [("ffn_only", "attn_only"), ("ffn_only", "no_residual"), ("attn_only", "full")]
gaps = analysis.gap_table(records, pairs)
ffn = records.loc[records.variant == "ffn_only", "final_val_loss"]
gaps.loc["ffn_only − floor", ["gap", "n_a"]] = [ffn.mean() - floor, len(ffn)]
gaps[["n_a", "n_b"]] = gaps[["n_a", "n_b"]].astype("Int64")
table(
    gaps,
    index="difference",
    headers={"gap": "gap (nats)", "n_a": "seeds (a)", "n_b": "seeds (b)"},
)

# %% [markdown]
# ## With dropout 0.2
#
# The same sweep again with dropout 0.2, the setting of nanoGPT's `shakespeare_char` recipe,
# which the `paper-10m` profile follows (`cpu` follows nanoGPT's CPU recipe, which has no
# dropout). The scorecard judges every claim this sweep decides at both.

# %% tags=["hide-input"]
twin_runs = everything[everything.profile != profile]
both = analysis.profile_comparison(everything)
(
    table(
        both,
        index="variant",
        caption="Final validation loss (nats), mean ± std over seeds",
    )
    if len(twin_runs)
    else Markdown("No records with dropout at this profile yet.")
)

# %% tags=["hide-input"]
Markdown(analysis.profile_comparison_text(everything, profile))
