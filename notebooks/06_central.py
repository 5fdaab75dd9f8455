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
# **The paper's claim.** With fixed validation batches (drawn once, seed
# {glue:md}`fixed_val_seed`) and deterministic training, AttnOnly recovers, seed after seed,
# at 10M, while FFNOnly collapses to the No-Residual anchor. The paper's numbers are in the
# folded block below the verdicts, read from `residual_lib/study/paper_claims.csv`.
#
# **Here.** Every variant × seed below, `fixed` evaluation, deterministic mode.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
dropout_twin = None

# %%
from IPython.display import Markdown

from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import glue
from residual_lib.pages.chapters import central
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.run.batches import FIXED_VAL_SEED
from residual_lib.study import analysis
from residual_lib.study.sections import central_sweep

everything = notebook_records("06_central", globals())
# the central sweep as every page and the scorecard quote it: every variant over the
# same seeds (the dropout twin's runs: below)
records = central_sweep(everything[everything.profile == profile])
records.attrs = {**everything.attrs, "left_out": records.attrs["left_out"]}
# the unigram floor of the fixed evaluation batches
floor = records["eval_floor"].iloc[0]
glue("fixed_val_seed", Markdown(f"{FIXED_VAL_SEED:,}"))
claims = ["asymmetry_10m", "ffn_collapse_10m", "ffn_vs_no_residual", "ratio_10m"]
scorecard.verdict_box(claims, records)

# %%
scorecard.section_view(6)

# %% [markdown]
# ## Final validation loss per variant (mean ± std over seeds)

# %%
summary = central.loss_summary(records, floor)
# quoted in the book's prose
for name, text in central.quoted_numbers(records, summary, floor).items():
    glue(name, text)
table(
    summary,
    index="variant",
    headers={"below the floor": "below the floor (nats)"},
    anchor="tab-central-summary",
)

# %%
plots.show(
    plots.final_losses(
        records, floor=floor, title=f"Final validation loss ({profile})"
    ),
    "fig-central-final",
    central.FINAL_CAPTION,
    central.FINAL_ALT,
)

# %% [markdown]
# Every seed. Two claims are read from this table, and they can come apart: the
# *asymmetry* (in each seed AttnOnly ends far below FFNOnly) and *collapse in every seed*
# (each FFNOnly run ends at the floor, within {glue:md}`floor_tol` nats either side).

# %%
glue("floor_tol", Markdown(f"{scorecard.FLOOR_TOL}"))
table(
    central.per_seed_table(records, floor),
    index="seed",
    caption="Final validation loss (nats) per seed",
)

# %%
plots.show(
    plots.loss_curves(
        analysis.curves(records, "val"),
        floor=floor,
        title="Validation loss on the fixed batches",
    ),
    "fig-central-curves",
    central.CURVES_CAPTION,
    central.CURVES_ALT,
)

# %% [markdown]
# ## The gaps, with confidence intervals
#
# Differences of mean final loss, Welch's t-test and its 95% interval, and a percentile
# bootstrap interval (scipy). With a single seed only the point difference is shown.

# %%
headers = {"gap": "gap (nats)", "n_a": "seeds (a)", "n_b": "seeds (b)"}
table(
    central.gaps(records, floor),
    index="difference",
    headers=headers,
    anchor="tab-central-gaps",
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
