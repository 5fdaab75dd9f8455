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
# to the No-Residual anchor. The paper's numbers are in the table below, read from
# `residual_lib/paper_claims.csv`.
#
# **Here.** Every variant × seed below, `fixed` evaluation, deterministic mode.

# %% tags=["remove-cell"]
# In Colab: fetch this repository (code and run records) and install it, keeping Colab's torch.
import sys

if "google.colab" in sys.modules:
    import subprocess

    REPOSITORY, CHECKOUT = "https://github.com/residual-lib/partial-residual-ablations", "/content/residual-ablations"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY, CHECKOUT], check=False)
    subprocess.run([sys.executable, f"{CHECKOUT}/scripts/colab_install.py"], check=True)
    sys.path.insert(0, CHECKOUT)

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = [1337, 42, 123]
variants = ["full", "attn_only", "ffn_only", "no_residual"]
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown

from residual_lib import analysis, paper, plots, scorecard
from residual_lib.book import glue
from residual_lib.sections import default_results_dir, ensure

records = ensure("06_central", profile=profile, seeds=seeds, variants=variants, results_dir=results_dir,
                 train_missing=train_missing, device=device)
floor = records["eval_floor"].iloc[0]  # the unigram floor on the fixed evaluation batches (chapter 3)
Markdown(scorecard.verdict_block(results_dir or default_results_dir(), profile,
                                 ["asymmetry_10m", "ffn_collapse_10m", "ffn_vs_no_residual"]))

# %% [markdown]
# The paper's reported values for this section:

# %%
paper.section(6)

# %% [markdown]
# ## Final validation loss per variant (mean ± std over seeds)

# %%
summary = analysis.variant_summary(records)
summary["above the floor"] = summary["mean"] - floor
for variant, row in summary.iterrows():  # numbers quoted in the book's prose
    glue(f"{variant}_result", f"{row['mean']:.3f} ± {row['std']:.3f}" if row["seeds"] > 1 else f"{row['mean']:.3f}")
glue("eval_floor", f"{floor:.3f}")
n_params = int(records.loc[records.variant == "full", "n_params"].max()) if (records.variant == "full").any() else 0
glue("n_params", f"{n_params / 1e6:.2g}M-parameter")
n_seeds = int(summary["seeds"].min())
glue("n_seeds", f"{n_seeds} seed{'' if n_seeds == 1 else 's'}")
summary

# %%
fig = plots.final_losses(records, floor=floor, title=f"Final validation loss, every seed ({profile})")

# %% [markdown]
# Every seed. Two claims are read from this table, and they can come apart: the
# *asymmetry* (in each seed AttnOnly ends far below FFNOnly) and *collapse in every seed*
# (each FFNOnly run ends at the floor, within 0.05 nats either side).

# %%
per_seed = records.pivot_table(index="seed", columns="variant", values="final_val_loss")[analysis.variant_order(records)]
if "ffn_only" in per_seed:
    per_seed["ffn_only at the floor"] = (per_seed["ffn_only"] - floor).abs() <= scorecard.FLOOR_TOL
per_seed

# %%
fig = plots.loss_curves(analysis.curves(records, "val"), floor=floor,
                        title="Validation loss on the fixed batches (mean ± std over seeds)")

# %% [markdown]
# ## The gaps, with confidence intervals
#
# Differences of mean final loss, Welch's t-test and its 95% interval, and a percentile
# bootstrap interval (scipy). With a single seed only the point difference is shown.

# %%
gaps = analysis.gap_table(records, [("ffn_only", "attn_only"), ("ffn_only", "no_residual"), ("attn_only", "full")])
ffn = records.loc[records.variant == "ffn_only", "final_val_loss"]
gaps.loc["ffn_only − floor", ["gap", "n_a"]] = [ffn.mean() - floor, len(ffn)]
gaps

