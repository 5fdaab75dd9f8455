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
# # 5 · Challenging the observation: measurement confounds
#
# **The paper's claims.** (a) A runtime gain `g` seemed to rescue AttnOnly (here `g`
# multiplies each sublayer's output: this book's reading of the paper's "runtime gain
# scaling", whose place the summary does not give), but AdamW compensates any constant
# multiplicative reparameterization
# within a few hundred steps, so all tested gains are functionally equivalent. (b) nanoGPT's
# randomly sampled validation batches are noisy enough to confound comparisons; the
# controlled runs use batches fixed once with seed {glue:md}`fixed_val_seed`. (c) Representation
# drift is largest for AttnOnly, then FFNOnly, then Full Residual. The paper's numbers are in
# the folded block below the verdicts, read from `residual_lib/study/paper_claims.csv`.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
gains = None
gain_variant = None
gain_seeds = None

# %%
from IPython.display import Markdown

from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import glue
from residual_lib.pages.chapters import confounds
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.run.batches import FIXED_VAL_SEED
from residual_lib.study import analysis

records = notebook_records("05_confounds", globals())
gain_runs, early_runs, central = analysis.confound_runs(
    records, gain_variant, seeds[:gain_seeds], gains, variants
)
glue("fixed_val_seed", Markdown(f"{FIXED_VAL_SEED:,}"))
scorecard.verdict_box(["gain_confound", "eval_noise_explains"], records)

# %%
scorecard.section_view(5)

# %% [markdown]
# ## (a) The runtime-gain confound
#
# Each seed runs under every gain with the same initialisation and data order; only the
# constant `g` differs. If AdamW absorbs `g` by rescaling the sublayer weights, the runs end
# in the same place, and their curves merge early. The final validation losses first:

# %%
table(confounds.gain_table(gain_runs), index="gain g")

# %% [markdown]
# The paper's second half is about timing: the gains are equivalent "within ~200 steps". Its
# 10M runs are read as 5,000 steps long (nanoGPT's schedule; the summary does not say), so
# the step to look at is the same share of these runs. Evaluations every 100 steps are too
# coarse for it, and one-batch training losses too noisy, so the first steps are evaluated
# more often:

# %%
study = confounds.timing_study(gain_runs, early_runs)
Markdown(
    confounds.timing_method(gain_runs, early_runs, study["agreement"])
    + " "
    + confounds.timing_finding(
        study["timing"], study["within"], paper_steps=study["paper_steps"]
    )
)

# %%
plots.show(
    plots.gain_timing(
        study["spread"], scorecard.GAIN_TOL, study["within"], until=study["until"]
    ),
    "fig-gain-timing",
    confounds.timing_caption(gain_variant, study["within"]),
    confounds.TIMING_ALT,
)

# %% [markdown]
# The whole of one run: its training loss under each gain, and how far apart the gains are at
# each logged step. The lower panel is the spread (max − min over gains) of the training loss.

# %%
first_seed = gain_runs[gain_runs.seed == seeds[0]]
train = analysis.curves(first_seed, "train")
spread, merged_at = analysis.gain_equivalence(train, scorecard.GAIN_TOL)
Markdown(confounds.gain_finding(first_seed, merged_at))

# %%
plots.show(
    plots.gain_curves(train, spread, scorecard.GAIN_TOL),
    "fig-gain-curves",
    confounds.gain_caption(gain_variant, seeds[0]),
    confounds.GAIN_ALT,
)

# %% [markdown]
# ## (b) Evaluation noise: random against fixed validation batches
#
# After training, every run's final model is evaluated on the fixed batches and on several
# independent random draws of the same size (the estimate a nanoGPT-style evaluation would
# have reported). The spread of those draws is the noise a single random evaluation carries.

# %%
estimates = analysis.val_estimates(central)
table(confounds.noise_table(estimates), index="variant", anchor="tab-eval-noise")

# %%
plots.show(
    plots.eval_spread(estimates),
    "fig-eval-spread",
    confounds.SPREAD_CAPTION,
    confounds.SPREAD_ALT,
)

# %% [markdown]
# What that noise does to a comparison: the probability that one random evaluation of each
# model ranks two variants the other way round from their fixed-batch losses.

# %%
table(analysis.misorder_table(estimates))

# %% [markdown]
# ## (c) Representation drift
#
# The paper's drift figures for this section (14.0× / 5.4× / 1.4×) appear to be its
# hidden-norm growth figures of section 7 (14.03× / 5.37×) rounded, and it defines neither. Both are
# scored as one claim and computed under every plausible definition in
# [chapter 7](07_mechanism).
