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
# # Confounds and corrections
#
# The paper corrected two measurement confounds on its way to the controlled sweep. This
# page shows, from this repository's records, what each confound does and what the
# correction changes. The full analysis is in the [section 5 chapter](../notebooks/05_confounds).

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
results_dir = None
train_missing = False
device = "auto"
gains = None
gain_variant = None
gain_seeds = None

# %% tags=["hide-input"]
from IPython.display import Markdown

from residual_lib.pages.book import glue
from residual_lib.pages.chapters import confounds
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.study import analysis

records = notebook_records("05_confounds", globals())
gain_runs, early_runs, central = analysis.confound_runs(
    records, gain_variant, seeds[:gain_seeds], gains, variants
)

# %% [markdown]
# ## 1. Runtime gain: a reparameterization the optimiser undoes
#
# **Confound.** Multiplying every sublayer's output by a constant `g` looked like a rescue
# of AttnOnly. But AdamW's updates are invariant to the scale of the gradient, and the
# weights just before the gain can absorb any constant factor, so, the paper argues, a
# constant gain changes the early trajectory and little else. **Correction.** Compare the
# curves of several gains with the same seed and data order, and judge by where they end,
# not where they start. (For FFNOnly, whose escapes from the floor turn on differences as
# small as a few roundings, a changed trajectory can decide whether a run escapes at all;
# [chapter 10](../notebooks/10_ffn_escape) weighs its gain runs.)

# %% [markdown]
# The curves of every gain, and how soon they come together, are drawn in chapter 5: the
# timing of the gain runs in {numref}`fig-gain-timing` and their training curves in
# {numref}`fig-gain-curves`.

# %% tags=["hide-input"]
study = confounds.timing_study(gain_runs, early_runs)
Markdown(
    confounds.timing_finding(
        study["timing"], study["within"], paper_steps=study["paper_steps"]
    )
)

# %% tags=["hide-input"]
table(confounds.gain_table(gain_runs), index="gain g")

# %% [markdown]
# ## 2. Validation noise: random batches against fixed batches
#
# **Confound.** nanoGPT estimates the validation loss on freshly sampled batches at every
# evaluation, so two runs are compared on different text. **Correction.** Draw the
# validation batches once (seed 99,991) and evaluate every run on the same ones.
#
# Each final model's random-batch evaluations, as deviations from its fixed-batch loss, are
# drawn in chapter 5 ({numref}`fig-eval-spread`); the table below counts how often one random
# estimate would misorder two variants.

# %% tags=["hide-input"]
estimates = analysis.val_estimates(central)
glue("eval_noise_std", float(estimates["deviation"].std()))
table(analysis.misorder_table(estimates))
