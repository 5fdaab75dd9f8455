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
# # 4 · The initial observation: joint collapse
#
# **The paper's claim.** Under nanoGPT-style evaluation (fresh random validation batches at
# every evaluation, seed 1337), all three partial configurations collapse to the No-Residual
# floor at both scales, with a layer-0 gradient norm of zero from step 300 onward for every
# partial configuration while Full Residual keeps a clearly non-zero one. The paper's
# numbers are in the folded block below the verdicts, read from `residual_lib/study/paper_claims.csv`.
#
# **Here.** The same four variants, `random` evaluation mode, the first of the seeds below.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown

from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import glue
from residual_lib.pages.chapters import joint_collapse
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.study import analysis
from residual_lib.study.sections import controlled, random_evaluation

records = notebook_records("04_joint_collapse", globals())
central, nanogpt = controlled(records), random_evaluation(records)
quotes = joint_collapse.quoted()
# Markdown for {glue:md}: {glue:text} reads "5,000" as a tuple
for name, text in quotes.items():
    glue(name, Markdown(text))
scorecard.verdict_box(joint_collapse.CLAIMS, records)

# %%
scorecard.section_view(4)

# %% [markdown]
# ## Final validation loss and degradation ratios
#
# Random evaluation changes how a loss is *measured*, not what is trained: the same model
# evaluated on other random batches moves far less than the distance between AttnOnly and
# the floor ([chapter 5](05_confounds) measures by how much).

# %%
table(
    joint_collapse.loss_table(nanogpt),
    index="variant",
    headers={"below the floor": "below the floor (nats)"},
)

# %%
plots.show(
    plots.loss_curves(
        analysis.curves(nanogpt, "val"),
        floor=nanogpt["eval_floor"].iloc[0],
        title=f"Validation loss, random batches ({profile})",
    ),
    "fig-joint-collapse-curves",
    joint_collapse.curves_caption(nanogpt),
    joint_collapse.CURVES_ALT,
)

# %% [markdown]
# ## Block-0 gradient starvation, per variant
#
# The gradient norm of the first transformer block (all of its parameters; embeddings
# excluded), before clipping, over the logged steps from {glue:md}`layer0_from` of training on:
# the paper's "from step 300 onward" is read as a share of a {glue:md}`paper_10m_steps`-step
# 10M run (nanoGPT's shakespeare_char schedule; the summary does not give the paper's step
# count), so the same share is used here (step {glue:md}`layer0_from_step` of
# {glue:md}`stand_in_steps` at `cpu`). The median over those steps per run, then per variant
# over the controlled runs of every seed; `starved` is the share of those steps below
# {glue:md}`layer0_zero` (0.000 to three decimals). Records made since block 0 is also logged
# by sub-module show the attention, MLP and LayerNorm parts separately.

# %%
layer0 = analysis.layer0_after(central)
table(
    joint_collapse.layer0_table(layer0),
    index="variant",
    headers={"median": "median, whole block", "starved": "share starved"},
)

# %% tags=["hide-input"]
glue("layer0_tracks_collapse", joint_collapse.starvation_tracks(central, layer0))
Markdown(joint_collapse.starvation_finding(central, layer0))

# %%
plots.show(
    plots.layer0_gradients(
        analysis.curves(central, "train"), marker_step=int(layer0["from_step"].iloc[0])
    ),
    "fig-layer0-gradients",
    joint_collapse.layer0_caption(central),
    joint_collapse.LAYER0_ALT,
)

# %% [markdown]
# Hidden-state norm growth and drift, which the paper reports without a definition, are in
# [chapter 7](07_mechanism), where every plausible definition is computed.
