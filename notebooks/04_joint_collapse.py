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
# numbers are in the folded block below the verdicts, read from `residual_lib/paper_claims.csv`.
#
# **Here.** The same four variants, `random` evaluation mode, the first of the seeds below.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown

from residual_lib import analysis, paper, plots, scorecard
from residual_lib.book import glue
from residual_lib.records import controlled
from residual_lib.sections import notebook_records
from residual_lib.tables import number, table

records = notebook_records("04_joint_collapse", globals())
central = controlled(records)
shown = records
records = records[records.eval_mode == "random"]
floor = records["eval_floor"].iloc[
    0
]  # the expected floor of random evaluation (chapter 3)
claims = [
    "joint_collapse_10m",
    "layer0_starved_attn_only",
    "layer0_starved_ffn_only",
    "layer0_starved_no_residual",
    "layer0_full",
]
scorecard.verdict_box(claims, shown)

# %%
paper.section_view(4)

# %% [markdown]
# ## Final validation loss and degradation ratios
#
# Random evaluation changes how a loss is *measured*, not what is trained: the same model
# evaluated on other random batches moves far less than the distance between AttnOnly and
# the floor ([chapter 5](05_confounds) measures by how much).

# %%
summary = analysis.variant_summary(records)
summary["ratio to full"] = analysis.degradation_ratios(records)
summary["below the floor"] = floor - summary["mean"]
table(summary, index="variant", headers={"below the floor": "below the floor (nats)"})

# %%
val = analysis.curves(records, "val")
plots.show(
    plots.loss_curves(
        val, floor=floor, title=f"Validation loss, random batches ({profile})"
    ),
    "fig-joint-collapse-curves",
    "Validation loss of the four variants under nanoGPT-style random evaluation, seed"
    f" {', '.join(str(s) for s in sorted(set(records.seed)))} (the section's runs; with"
    " several seeds, the mean and a band of ±1 std). The dashed line is the expected"
    " floor of random evaluation; FFNOnly and NoResidual lie on it, one over the"
    " other.",
    "Line chart of validation loss in nats against training step for full, attn_only, "
    "ffn_only and no_residual, with a dashed horizontal floor line.",
)

# %% [markdown]
# ## Block-0 gradient starvation, per variant
#
# The gradient norm of the first transformer block (all of its parameters; embeddings
# excluded), before clipping, over the logged steps from 6% of training on: the paper's
# "from step 300 onward" is read as a share of a 5,000-step 10M run (nanoGPT's
# shakespeare_char schedule; the summary does not give the paper's step count), so the same
# share is used here
# (step 120 of 2,000 at `cpu`). The median over those steps per run, then per variant over
# the controlled runs of every seed; `starved` is the share of those steps below 5e-4
# (0.000 to three decimals). Records made since block 0 is also logged by sub-module show
# the attention, MLP and LayerNorm parts separately.

# %%
layer0 = analysis.layer0_after(central)
parts = ["median", "starved", "median_attn", "median_mlp", "median_ln"]
per_variant = layer0.groupby("variant")[parts].median()
per_variant = per_variant.reindex(analysis.variant_order(layer0)).dropna(
    axis=1, how="all"
)
table(
    per_variant,
    index="variant",
    headers={"median": "median, whole block", "starved": "share starved"},
)

# %% tags=["hide-input"]
ffn_seeds = central[central.variant == "ffn_only"].set_index("seed")
ffn_layer0 = layer0[layer0.variant == "ffn_only"].set_index("seed")["median"]
collapsed = (
    ffn_seeds.final_val_loss - ffn_seeds.eval_floor
).abs() <= scorecard.FLOOR_TOL
recovering = layer0[layer0.variant.isin(["full", "attn_only"])]["median"]
tracks = (
    "Starvation tracks collapse, not the removal of a residual: the block-0 gradient"
    " of the variants that learn (full and attn_only) has a median of"
    f" {recovering.median():.2f} after the cut-off, while no_residual's is"
    f" {number(layer0[layer0.variant == 'no_residual']['median'].median())}"
)
if len(ffn_layer0):
    tracks += (
        f"; ffn_only's is {number(ffn_layer0[collapsed].median())} in the"
        f" {int(collapsed.sum())} seed{'s' if collapsed.sum() != 1 else ''} that stay"
        " at the floor"
        + (
            f" and {number(ffn_layer0[~collapsed].median())} in the"
            f" {int((~collapsed).sum())} that escape"
            if (~collapsed).any()
            else ""
        )
    )
glue("layer0_tracks_collapse", tracks + ".")
attn_starved = (
    layer0[layer0.variant == "attn_only"]["median"] < scorecard.LAYER0_ZERO
).all()
Markdown(
    tracks
    + (
        ". The paper measured starvation in nanoGPT runs in which every partial variant"
        " had collapsed, AttnOnly included, and there it tracked collapse too. What"
        " does not hold is its generalisation, the premise of section 7 that AttnOnly"
        " recovers while starved: in the runs where AttnOnly recovers, its block 0 is"
        " not starved."
        if not attn_starved
        else "."
    )
)

# %%
train = analysis.curves(central, "train")
central_seeds = ", ".join(map(str, sorted(set(central.seed))))
plots.show(
    plots.layer0_gradients(train, marker_step=int(layer0["from_step"].iloc[0])),
    "fig-layer0-gradients",
    "Gradient norm of the first transformer block before clipping, log scale: one line"
    f" per run, the controlled runs of every seed ({central_seeds}), whose medians the"
    " table above gives. The dotted line marks 6% of training, from"
    " where those medians are taken.",
    "Line chart, log-scale y axis, of the block-0 gradient norm against training step"
    " per variant, with a dotted vertical line at 6% of training.",
)

# %% [markdown]
# Hidden-state norm growth and drift, which the paper reports without a definition, are in
# [chapter 7](07_mechanism), where every plausible definition is computed.
