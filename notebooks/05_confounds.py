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
# the folded block below the verdicts, read from `residual_lib/paper_claims.csv`.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
gains = None
gain_variant = None

# %%
from IPython.display import Markdown

from residual_lib import analysis, plots, scorecard
from residual_lib.book import glue
from residual_lib.chapters import confounds
from residual_lib.batches import FIXED_VAL_SEED
from residual_lib.notebook import notebook_records
from residual_lib.tables import table

records = notebook_records("05_confounds", globals())
gain_runs, central = analysis.confound_runs(
    records, gain_variant, seeds[0], gains, variants
)
glue("fixed_val_seed", Markdown(f"{FIXED_VAL_SEED:,}"))
scorecard.verdict_box(["gain_confound"], records)

# %%
scorecard.section_view(5)

# %% [markdown]
# ## (a) The runtime-gain confound
#
# The same seed and data order for every gain; only the constant `g` differs. If AdamW
# absorbs `g` by rescaling the sublayer weights, the curves merge. The lower panel is the
# spread (max − min over gains) of the training loss at each logged step.

# %%
train = analysis.curves(gain_runs, "train")
spread, merged_at = analysis.gain_equivalence(train, scorecard.GAIN_TOL)
table(confounds.gain_table(gain_runs), index="gain g")

# %%
Markdown(confounds.gain_finding(gain_runs, merged_at))

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
table(confounds.noise_table(estimates), index="variant")

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
