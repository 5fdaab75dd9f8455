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
# # 7 · The mechanism: the cross-position routing hypothesis
#
# **The paper's hypothesis.** AttnOnly recovers although its first block is as starved of
# gradient as FFNOnly's, because attention can learn to attend to the current position
# (diagonal mass α_tt ≈ 1) and so route each token's representation forward: a learnable
# substitute for the missing FFN identity path. The FFN, applied position by position,
# cannot. Evidence offered: a larger hidden-norm growth for AttnOnly than for FFNOnly, and a
# position-blind MLP mixer run that the paper itself calls inconclusive because that
# environment's AttnOnly baseline did not recover. The paper asks for the mixer test to be
# rerun under clean sweep conditions: that is what this page does. The paper's numbers are
# in the table below, read from `residual_lib/paper_claims.csv`.
#
# The `mixer` variant keeps AttnOnly's layout but replaces attention by a causal running
# mean of a per-token MLP: it moves information across positions with fixed weights 1/t,
# so it cannot single out the current token (its α_tt is 1/t by construction).

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
seeds = [1337, 42, 123]
variants = ["full", "attn_only", "ffn_only", "no_residual"]
device = "auto"
results_dir = None
train_missing = True

# %%
from residual_lib import analysis, paper, plots
from residual_lib.sections import ensure

records = ensure("07_mechanism", profile=profile, seeds=seeds, variants=variants, results_dir=results_dir,
                 train_missing=train_missing, device=device)
floor = records["unigram_floor"].iloc[0]
claims = paper.claims()

# %% [markdown]
# The paper's reported values for this section:

# %%
paper.section(7)

# %% [markdown]
# ## Attention diagonal mass α_tt
#
# The attention weight each position puts on itself, per layer and head, averaged over the
# first fixed validation batch (positions t ≥ 1). AttnOnly, first seed:

# %%
attn = records[records.variant == "attn_only"].sort_values("seed")
fig = plots.alpha_heatmap(analysis.alpha_matrix(attn.path.iloc[0]), title=f"AttnOnly, seed {attn.seed.iloc[0]}")

# %%
alpha = records.groupby("variant")["diag_alpha_tt_mean"].agg(["mean", "std", "min", "max"])
alpha.reindex(analysis.variant_order(records))

# %% [markdown]
# ## Hidden-norm growth

# %%
growth = records.groupby("variant")["diag_hidden_norm_growth"].agg(["mean", "std"]).reindex(
    analysis.variant_order(records))
growth.join(claims[claims.claim == "hidden_norm_growth"].set_index("variant")["value"].rename("paper"))

# %% [markdown]
# ## The mixer test under clean sweep conditions
#
# AttnOnly, FFNOnly and the mixer, the same seeds, fixed batches, deterministic mode. If
# recovery needs attention's ability to route the current token, the mixer should sit with
# FFNOnly near the floor; if any cross-position mixing suffices, it should sit with AttnOnly.

# %%
summary = analysis.variant_summary(records)
summary["above unigram floor"] = summary["mean"] - floor
summary

# %%
fig = plots.final_losses(records, floor=floor, title="AttnOnly, FFNOnly and the position-blind mixer")

# %%
analysis.gap_table(records, [("mixer", "attn_only"), ("ffn_only", "mixer")])

