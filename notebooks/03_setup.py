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
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown, display

from residual_lib import load_corpus
from residual_lib.pages import plots
from residual_lib.pages.book import glue
from residual_lib.pages.chapters import setup
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.run.batches import FIXED_VAL_SEED
from residual_lib.study import paper

_ = notebook_records("03_setup", globals())  # no runs: this only checks the parameters
glue("fixed_val_seed", Markdown(f"{FIXED_VAL_SEED:,}"))

# %% [markdown]
# ## Corpora
#
# Character-level TinyShakespeare is split 90/10 as in nanoGPT's `shakespeare_char`; the
# GPT-2 BPE version of the same text is shown for comparison. The *unigram floor* is the
# cross-entropy of the training split's token frequencies: the loss of a model that
# ignores its input entirely. Over the whole validation split:

# %%
corpora, note = setup.corpora()
if note:
    display(Markdown(note))
table(corpora, decimals=4)

# %% [markdown]
# ## The floor a loss is compared to
#
# A validation loss is measured on particular tokens, and the floor it is compared to must
# be measured on the same ones. With `fixed` evaluation every loss is the mean over the
# fixed batches (drawn once, seed {glue:md}`fixed_val_seed`), so its floor is the unigram
# cross-entropy on *their* targets; with `random` evaluation it is the expected value over
# random windows.
# Neither equals the whole-split floor above: a model at the floor of its batches can sit
# slightly above or below the whole-split number. Every chapter and the scorecard compare
# fixed-batch losses with the fixed-batch floor and random-batch losses with the expected
# floor of random evaluation (`residual_lib.run.data.eval_floor`); the whole-split floor is
# shown here only.

# %%
char = load_corpus("shakespeare_char")
floors = setup.floors(char)
glue("floor_whole_split", f"{char.unigram_floor():.4f}")
glue("floor_fixed", f"{setup.fixed_floor(floors, profile):.4f}")
table(setup.floor_table(floors), index="profile", decimals=4)

# %% [markdown]
# OpenWebText is prepared on first use by `residual_lib.run.data.prepare_openwebtext` (streamed
# from the Hugging Face hub, tokenized once into `uint16` memmaps); the paper reports
# ~113M tokens from its 100,000 documents.

# %% [markdown]
# ## Models
#
# Parameter counts of the Full model at every profile (the tied LM head counted once,
# position embeddings excluded, as nanoGPT reports them). The `mixer` variant replaces
# attention by a smaller token mixer. Models are built on PyTorch's `meta` device, so no
# memory is allocated.

# %%
table(setup.models(setup.vocab_sizes(char)))

# %% [markdown]
# The paper's collapse values at 10M sit next to the character corpus's floors: a collapsed
# model has learned the character frequencies and nothing else.

# %%
table(
    setup.collapse_vs_floor(paper.claims(), floors),
    headers={"value": "paper's value (nats)"},
    decimals={
        "value": 3,
        "floor, whole val split": 4,
        "floor, paper-10m fixed batches": 4,
    },
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
    setup.VARIANTS_CAPTION,
    setup.VARIANTS_ALT,
)
