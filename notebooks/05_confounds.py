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
# controlled runs use batches fixed once with seed 99,991. (c) Representation drift is
# largest for AttnOnly, then FFNOnly, then Full Residual. The paper's numbers are in the
# folded block below the verdicts, read from `residual_lib/paper_claims.csv`.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
gains = None
gain_variant = None

# %%
from IPython.display import Markdown

from residual_lib import analysis, paper, plots, scorecard
from residual_lib.sections import notebook_records
from residual_lib.tables import table

records = notebook_records("05_confounds", globals())
gain_runs, central = analysis.confound_runs(
    records, gain_variant, seeds[0], gains, variants
)
scorecard.verdict_box(["gain_confound"], records)

# %%
paper.section_view(5)

# %% [markdown]
# ## (a) The runtime-gain confound
#
# The same seed and data order for every gain; only the constant `g` differs. If AdamW
# absorbs `g` by rescaling the sublayer weights, the curves merge. The lower panel is the
# spread (max − min over gains) of the training loss at each logged step.

# %%
train = analysis.curves(gain_runs, "train")
spread, merged_at = analysis.gain_equivalence(train, scorecard.GAIN_TOL)
gain_table = gain_runs.set_index("gain")[
    ["final_val_loss", "best_val_loss"]
].sort_index()
table(gain_table, index="gain g")

# %%
steps = int(gain_runs.steps.iloc[0])
final_spread = gain_table.final_val_loss.max() - gain_table.final_val_loss.min()
Markdown(
    (
        f"The training-loss spread across gains stays below {scorecard.GAIN_TOL} nats"
        f" from step {merged_at:,} of {steps:,}"
        if merged_at is not None
        else f"The spread across gains never stays below {scorecard.GAIN_TOL} nats"
    )
    + f"; the final validation losses differ by {final_spread:.4f} nats."
)

# %%
plots.show(
    plots.gain_curves(train, spread, scorecard.GAIN_TOL),
    "fig-gain-curves",
    f"Training loss of `{gain_variant}` (seed {seeds[0]}) with a constant gain g on"
    " every sublayer output (top), and the spread across gains at each logged step,"
    f" log scale (bottom; the dashed line is the {scorecard.GAIN_TOL}-nat tolerance).",
    "Two stacked line charts against training step: training loss in nats per gain, and"
    " the max minus min across gains on a log scale with a dashed tolerance line.",
)

# %% [markdown]
# ## (b) Evaluation noise: random against fixed validation batches
#
# After training, every run's final model is evaluated on the fixed batches and on several
# independent random draws of the same size (the estimate a nanoGPT-style evaluation would
# have reported). The spread of those draws is the noise a single random evaluation carries.

# %%
estimates = analysis.val_estimates(central)
noise = (
    estimates.groupby("variant")["deviation"]
    .agg(["std", lambda d: d.abs().max()])
    .rename(columns={"<lambda_0>": "max |deviation| (nats)"})
    .reindex(analysis.variant_order(estimates))
)
table(noise, index="variant")

# %%
plots.show(
    plots.eval_spread(estimates),
    "fig-eval-spread",
    "Each point is one random-batch evaluation of a final model minus the same model's "
    "fixed-batch loss: the noise a single nanoGPT-style validation estimate carries.",
    "Strip chart per variant of random-batch minus fixed-batch validation loss in nats,"
    " scattered around a zero line.",
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
