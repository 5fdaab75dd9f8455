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
# # 3 · Experimental setup: data and models
#
# The paper trains GPT-style Pre-LN transformers at two scales: about 10M parameters on
# TinyShakespeare at character level, and about 124M parameters (GPT-2 small) on the first
# 100,000 documents of OpenWebText with GPT-2's BPE. This page measures the corpora and the
# models this code builds for every profile; nothing here is trained.

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
import pandas as pd
import torch

from residual_lib import PROFILES, GPTConfig, ResidualGPT, load_corpus, paper, plots
from residual_lib.book import glue
from residual_lib.sections import ensure

ensure("03_setup", profile=profile, seeds=seeds, variants=variants, results_dir=results_dir,
       train_missing=train_missing, device=device)  # this section needs no runs

# %% [markdown]
# ## Corpora
#
# Character-level TinyShakespeare is split 90/10 as in nanoGPT's `shakespeare_char`; the
# GPT-2 BPE version of the same text is shown for comparison. The *unigram floor* is the
# cross-entropy, on the validation split, of the training split's token frequencies: the
# loss of a model that ignores its input entirely.

# %%
rows = []
for name in ("shakespeare_char", "shakespeare_gpt2"):
    corpus = load_corpus(name)
    rows.append({"corpus": name, "vocabulary": corpus.vocab_size, "train tokens": corpus.sizes["train"],
                 "val tokens": corpus.sizes["val"], "unigram floor (nats)": corpus.unigram_floor()})
corpora = pd.DataFrame(rows).set_index("corpus")
corpora

# %% [markdown]
# OpenWebText is prepared on first use by `residual_lib.data.prepare_openwebtext` (streamed
# from the Hugging Face hub, tokenized once into `uint16` memmaps); the paper reports
# ~113M tokens from its 100,000 documents.

# %% [markdown]
# ## Models
#
# Parameter counts of the `full` model at every profile (the tied LM head counted once,
# position embeddings excluded, as nanoGPT reports them). The `mixer` variant replaces
# attention by a smaller token mixer. Models are built on PyTorch's `meta` device, so no
# memory is allocated.

# %%
vocab = {"shakespeare_char": 65, "openwebtext": 50257}
rows = []
for name, prof in PROFILES.items():
    for variant in ("full", "mixer"):
        config = GPTConfig.for_variant(variant, vocab_size=vocab[prof.dataset], block_size=prof.block_size,
                                       n_layer=prof.n_layer, n_head=prof.n_head, n_embd=prof.n_embd)
        with torch.device("meta"):
            n = ResidualGPT(config).num_params()
        rows.append({"profile": name, "variant": variant, "layers": prof.n_layer, "width": prof.n_embd,
                     "context": prof.block_size, "dataset": prof.dataset, "parameters (M)": n / 1e6,
                     "steps": prof.max_iters, "tokens per step": prof.tokens_per_step})
models = pd.DataFrame(rows)
models.pivot_table(index=["profile", "layers", "width", "context", "dataset", "steps", "tokens per step"],
                   columns="variant", values="parameters (M)").round(3)

# %% [markdown]
# The paper's collapse values at 10M sit next to the character corpus's unigram floor:
# a collapsed model has learned the character frequencies and nothing else.

# %%
claims = paper.claims()
collapse = claims[(claims.scale == "10M") & claims.variant.isin(["ffn_only", "no_residual"])
                  & (claims.quantity == "final_val_loss")]
collapse[["claim", "variant", "value"]].rename(columns={"value": "paper's value"}).assign(
    **{"unigram floor (this corpus)": corpora.loc["shakespeare_char", "unigram floor (nats)"]})

# %% [markdown]
# ## The four block variants
#
# Each block computes `h = x + Attn(LN1(x))` and `y = h + FFN(LN2(h))`; a variant removes
# the identity term of one sublayer, of the other, or of both.

# %%
fig = plots.block_variants()
glue("block_variants", fig, display=False)  # also shown on the book's introduction
