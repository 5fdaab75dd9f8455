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
# numbers are in the table below, read from `residual_lib/paper_claims.csv`.
#
# **Here.** The same four variants, `random` evaluation mode, the first of the seeds below.

# %% tags=["remove-cell"]
# In Colab: fetch this repository (code and run records) and install it, keeping Colab's torch.
import sys

if "google.colab" in sys.modules:
    import subprocess

    REPOSITORY, CHECKOUT = "https://github.com/residual-lib/partial-residual-ablations", "/content/residual-ablations"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY, CHECKOUT], check=False)
    subprocess.run([sys.executable, f"{CHECKOUT}/scripts/colab_install.py"], check=True)
    sys.path.insert(0, CHECKOUT)

# %% tags=["parameters"]
profile = "smoke"
seeds = [1337]
variants = ["full", "attn_only", "ffn_only", "no_residual"]
device = "auto"
results_dir = None
train_missing = True

# %%
from residual_lib import analysis, paper, plots
from residual_lib.sections import ensure

records = ensure("04_joint_collapse", profile=profile, seeds=seeds, variants=variants, results_dir=results_dir,
                 train_missing=train_missing, device=device)
floor = records["unigram_floor"].iloc[0]

# %% [markdown]
# The paper's reported values for this section:

# %%
paper.section(4)

# %% [markdown]
# ## Final validation loss and degradation ratios

# %%
summary = analysis.variant_summary(records)
summary["ratio to full"] = analysis.degradation_ratios(records)
summary["above unigram floor"] = summary["mean"] - floor
summary

# %%
val = analysis.curves(records, "val")
fig = plots.loss_curves(val, floor=floor, title=f"Validation loss, random batches ({profile})")

# %% [markdown]
# ## Layer-0 gradient starvation
#
# The gradient norm of the first transformer block (all of its parameters; embeddings
# excluded), before clipping. The paper's step 300 of 5,000 is 6% of training; the table
# reports the norm over the same fraction of this profile's run.

# %%
train = analysis.curves(records, "train")
layer0 = analysis.layer0_after(records)
layer0.groupby("variant")[["from_step", "mean", "min", "max"]].mean().reindex(analysis.variant_order(layer0))

# %%
fig = plots.layer0_gradients(train, marker_step=int(layer0["from_step"].iloc[0]))

# %% [markdown]
# ## Hidden-state norm growth
#
# Mean per-token norm of the last block's output over that of the first block's output,
# measured on the first fixed validation batch after training.

# %%
records.groupby("variant")[["diag_hidden_norm_growth", "diag_representation_drift"]].mean().reindex(
    analysis.variant_order(records))
