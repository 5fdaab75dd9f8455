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
# TinyShakespeare at character level, and about 124M parameters on 100,000 documents of
# OpenWebText with GPT-2's BPE (the `paper-124m` profile takes GPT-2 small's shape and the
# corpus's first 100,000 documents). This page measures the corpora and the
# models this code builds for every profile; nothing here is trained.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
import pandas as pd
import torch

from IPython.display import Markdown, display

from residual_lib import (
    PROFILES,
    DataError,
    GPTConfig,
    ResidualGPT,
    load_corpus,
    paper,
    plots,
)
from residual_lib.book import glue
from residual_lib.sections import notebook_records
from residual_lib.tables import table

_ = notebook_records("03_setup", globals())  # no runs: this only checks the parameters

# %% [markdown]
# ## Corpora
#
# Character-level TinyShakespeare is split 90/10 as in nanoGPT's `shakespeare_char`; the
# GPT-2 BPE version of the same text is shown for comparison. The *unigram floor* is the
# cross-entropy of the training split's token frequencies: the loss of a model that
# ignores its input entirely. Over the whole validation split:

# %%
rows, bpe_missing = [], False
for name in ("shakespeare_char", "shakespeare_gpt2"):
    try:
        corpus = load_corpus(name)
    except DataError:  # GPT-2's BPE offline without a tiktoken cache
        if name != "shakespeare_gpt2":
            raise
        bpe_missing = True
        continue
    rows.append(
        {
            "corpus": name,
            "vocabulary": corpus.vocab_size,
            "train tokens": corpus.sizes["train"],
            "val tokens": corpus.sizes["val"],
            "unigram floor, whole val split (nats)": corpus.unigram_floor(),
        }
    )
if bpe_missing:
    display(
        Markdown(
            "The GPT-2 BPE corpus could not be loaded on the machine that built this"
            " page, so its row is left out; building the book online once, or with"
            " `TIKTOKEN_CACHE_DIR` pointing at tiktoken's cached files, adds it."
        )
    )
table(pd.DataFrame(rows), decimals=4)

# %% [markdown]
# ## The floor a loss is compared to
#
# A validation loss is measured on particular tokens, and the floor it is compared to must
# be measured on the same ones. With `fixed` evaluation every loss is the mean over the
# fixed batches (drawn once, seed 99,991), so its floor is the unigram cross-entropy on
# *their* targets; with `random` evaluation it is the expected value over random windows.
# Neither equals the whole-split floor above: a model at the floor of its batches can sit
# slightly above or below the whole-split number. Every chapter and the scorecard compare
# fixed-batch losses with the fixed-batch floor and random-batch losses with the expected
# floor of random evaluation (`residual_lib.data.eval_floor`); the whole-split floor is
# shown here only.

# %%
from residual_lib.data import eval_floor

# the paper's and the book's profiles; the smoke* ones exist for the tests only
shown = [name for name in PROFILES if not name.startswith("smoke")]
char = load_corpus("shakespeare_char")
floors = pd.DataFrame(
    [
        {
            "profile": name,
            "whole val split": char.unigram_floor(),
            "fixed batches (fixed evaluation)": eval_floor(
                char, prof.block_size, prof.batch_size, prof.eval_iters, "fixed"
            ),
            "random windows, expected (random evaluation)": eval_floor(
                char, prof.block_size, prof.batch_size, prof.eval_iters, "random"
            ),
        }
        for name, prof in PROFILES.items()
        if prof.dataset == "shakespeare_char"
    ]
).set_index("profile")
fixed_floor = (
    floors.loc[profile, "fixed batches (fixed evaluation)"]
    if profile in floors.index
    else float("nan")
)
glue("floor_whole_split", f"{char.unigram_floor():.4f}")
glue("floor_fixed", f"{fixed_floor:.4f}")
table(
    floors[floors.index.isin(shown)].add_suffix(" (nats)"), index="profile", decimals=4
)

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
        config = GPTConfig.for_profile(prof, variant, vocab_size=vocab[prof.dataset])
        with torch.device("meta"):
            n = ResidualGPT(config).num_params()
        rows.append(
            {
                "profile": name,
                "variant": variant,
                "layers": prof.n_layer,
                "width": prof.n_embd,
                "context": prof.block_size,
                "dataset": prof.dataset,
                "parameters (M)": n / 1e6,
                "steps": prof.max_iters,
                "tokens per step": prof.tokens_per_step,
            }
        )
models = pd.DataFrame(rows)
models = models[models.profile.isin(shown)]
sizes = models.pivot_table(
    index=[
        "profile",
        "layers",
        "width",
        "context",
        "dataset",
        "steps",
        "tokens per step",
    ],
    columns="variant",
    values="parameters (M)",
)
table(sizes.rename(columns=lambda v: f"{v} (M parameters)").reset_index())

# %% [markdown]
# The paper's collapse values at 10M sit next to the character corpus's floors: a collapsed
# model has learned the character frequencies and nothing else.

# %%
claims = paper.claims()
collapse = claims[
    (claims.scale == "10M")
    & claims.variant.isin(["ffn_only", "no_residual"])
    & (claims.quantity == "final_val_loss")
]
table(
    collapse[["claim", "variant", "value"]].assign(
        **{
            "floor, whole val split": char.unigram_floor(),
            "floor, paper-10m fixed batches": floors.loc[
                "paper-10m", "fixed batches (fixed evaluation)"
            ],
        }
    ),
    headers={"value": "paper's value (nats)"},
    decimals=4,
)

# %% [markdown]
# ## The four block variants
#
# Each block computes `h = x + Attn(LN1(x))` and `y = h + FFN(LN2(h))`; a variant removes
# the identity term of one sublayer, of the other, or of both.

# %%
plots.show(
    plots.block_variants(),
    "fig-block-variants-setup",
    "The four block variants. Solid arcs are the identity paths a variant keeps, dotted"
    " ones those it removes.",
    "Four block diagrams, one per variant, each showing x, Attn(LN1), h, FFN(LN2) and"
    " y, with an identity arc beside each sublayer: solid where kept, dotted where"
    " removed.",
)
